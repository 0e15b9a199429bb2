/* test_lab03_exercises.c: chapter 3's exercises, run as a student runs them
 * (the Makefile builds the checks first): each reference solution passes,
 * each exercise file's check fails naming the file to edit until solved, the
 * staleness answer bears out what chapter 4 says of asynchronous steps, and
 * the partition-edges answer cuts as the master does (fl_partition_graph). */
#include "flowlab.h"
#include "lab_runner.h"
#include "solutions/staleness.c" /* my_async_staleness, the reference answer */
#include "solutions/partition_edges.c" /* my_partition_edges, the reference answer */
#include "check_graphs.h"
#include "distributed_runtime/partition/graph_partition.h"

/* Chapter 4: "With two workers the gradient is one step stale on average;
 * with fifty, it is dozens of steps stale". */
static void test_staleness_claims(void)
{
    int two[2] = {100, 100}, fifty[50];
    for (int w = 0; w < 50; w++)
        fifty[w] = 90 + w % 20; /* workers of slightly different speeds */
    long histogram[64];
    double mean_two = my_async_staleness(two, 2, 1000, histogram, 63);
    double mean_fifty = my_async_staleness(fifty, 50, 5000, histogram, 63);
    ok(fabs(mean_two - 1) < 0.01, "two equal workers: gradients %.3f steps stale on average", mean_two);
    ok(mean_fifty > 24 && mean_fifty < 63, "fifty workers: gradients %.1f steps stale on average", mean_fifty);
}

/* The reference answer's pairs and pieces are the real master's sends and
 * partitions (fl_partition_graph) for the same run of g. */
static void compare_with_master(fl_graph *g, const fl_partition_request *run, const char *what)
{
    partition_edge edges[256];
    int partitions = 0, pairs = my_partition_edges(g, edges, 256, &partitions);
    fl_partitioned_run cut = {0};
    int sends = 0, rc = fl_partition_graph(g, run, &cut);
    for (int p = 0; rc == 0 && p < cut.nparts; p++)
        for (int id = 0; id < fl_graph_node_count(cut.parts[p].graph); id++)
            sends += fl_graph_node(cut.parts[p].graph, id)->op == FL_OP_SEND;
    ok(rc == 0 && pairs == sends && partitions == cut.nparts,
       "%s: the exercise's %d pairs in %d pieces are the master's %d sends in %d partitions", what, pairs,
       partitions, sends, cut.nparts);
    if (rc != 0)
        diag("%s", fl_last_error());
    if (rc == 0)
        fl_partitioned_run_free(&cut);
}

/* The small graph, and the towers of the lab's cluster mode on 2 and 4 workers. */
static void test_partition_edges_as_master(void)
{
    fl_graph *g = small_graph();
    fl_node *x = fl_graph_find(g, "x"), *sum = fl_graph_find(g, "sum");
    fl_partition_request small = {&x, 1, &sum, 1, NULL, 0, {"", 0}, false};
    compare_with_master(g, &small, "the small graph");
    fl_graph_free(g);
    for (int workers = 2; workers <= 4; workers += 2) {
        fl_optimizer *adam = fl_adam_optimizer(0.001f, 0.9f, 0.999f, 1e-8f);
        fl_node *train = NULL;
        g = towers_graph(workers, adam, &train);
        fl_node *feeds[2] = {fl_graph_find(g, "image"), fl_graph_find(g, "label")};
        fl_node *fetch = fl_graph_find(g, "loss");
        fl_partition_request run = {feeds, 2, &fetch, 1, &train, 1, {"", 0}, false};
        compare_with_master(g, &run, workers == 2 ? "2 workers' towers" : "4 workers' towers");
        fl_graph_free(g);
        fl_optimizer_free(adam);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    /* Every check is built together; the first one stands for them all. */
    lab_runner_start(argv[0], "test_lab03_exercises", "exercises/03-between-graph/solutions/check_round_robin");
    static const char *const names[][2] = {{"partition_edges", "partition-edges"},
                                           {"cross_task_bytes", "cross-task-bytes"},
                                           {"round_robin", "round-robin"},
                                           {"ps_load", "ps-load"},
                                           {"staleness", "staleness"}};
    test_exercise_checks("03-between-graph", names, 5);
    test_staleness_claims();
    test_partition_edges_as_master();
    lab_runner_finish();
    return done_testing();
}
