/* solutions/partition_edges.c: a reference answer to exercise partition-edges. */
#include <stdio.h>
#include <string.h>

#include "exercises.h"

static int known_edge(const partition_edge *edges, int n, const fl_node *value, const char *to)
{
    for (int i = 0; i < n; i++)
        if (edges[i].value == value && strcmp(edges[i].to, to) == 0)
            return 1;
    return 0;
}

static int count_tasks(const fl_graph *g)
{
    char seen[64][EX_TASK_LEN];
    int count = 0;
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        char task[EX_TASK_LEN];
        ex_task_of(fl_graph_node(g, i), task);
        int known = 0;
        for (int k = 0; k < count; k++)
            known = known || strcmp(seen[k], task) == 0;
        if (!known && task[0] && count < 64)
            snprintf(seen[count++], EX_TASK_LEN, "%s", task);
    }
    return count;
}

int my_partition_edges(const fl_graph *g, partition_edge *out, int max, int *partitions)
{
    int n = 0;
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        const fl_node *reader = fl_graph_node(g, i);
        char to[EX_TASK_LEN];
        ex_task_of(reader, to);
        for (int k = 0; k < fl_node_input_count(reader); k++) {
            const fl_node *value = fl_node_input(reader, k);
            char from[EX_TASK_LEN];
            ex_task_of(value, from);
            if (!from[0] || !to[0] || strcmp(from, to) == 0 || known_edge(out, n, value, to))
                continue;
            if (n == max)
                return -1;
            out[n].value = value;
            snprintf(out[n].from, EX_TASK_LEN, "%s", from);
            snprintf(out[n].to, EX_TASK_LEN, "%s", to);
            n++;
        }
    }
    *partitions = count_tasks(g);
    return n;
}
