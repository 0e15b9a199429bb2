/* partition_edges.c: exercise partition-edges. Write my_partition_edges
 * (see exercises.h): the partitions of a placed graph and the send/receive
 * pairs the master adds between them, as in-graph replication across tasks
 * cuts its one graph.
 *
 * Hints: ex_task_of gives a node's task. Walk every node and every input
 * (fl_graph_node_count, fl_graph_node, fl_node_input_count, fl_node_input);
 * an input from another task is a pair unless out[] already holds one for
 * the same value and receiving task. Work the check's small graph by hand
 * first (check_graphs.h): x [N,4] and w [4,2] on the ps, read by both workers.
 *
 * The questions the check cannot ask: in chapter 2's towers spread over N
 * workers, how many pairs cross, and how does that grow with N? Which
 * partition's graph grows with N, and which stay the same size? In
 * between-graph replication, which of these pairs still exist, and who
 * builds the graph that holds them?
 *
 * Check your work: make exercises */
#include "exercises.h"

int my_partition_edges(const fl_graph *g, partition_edge *out, int max, int *partitions)
{
    (void)g, (void)out, (void)max, (void)partitions;
    return -1; /* TODO: your code here */
}
