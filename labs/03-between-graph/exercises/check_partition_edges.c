/* check_partition_edges.c: checks my_partition_edges (exercise
 * partition-edges) on a small graph worked by hand, then on chapter 2's
 * towers placed on 2 and 4 worker tasks with the variables on a ps. */
#include "exercises.h"
#include "../../common/check.h"
#include "check_graphs.h"

#define MAX_EDGES 256

static int count_edges(const partition_edge *edges, int n, const char *from, const char *to)
{
    int count = 0;
    for (int i = 0; i < n; i++)
        count += strcmp(edges[i].from, from) == 0 && strcmp(edges[i].to, to) == 0;
    return count;
}

static int cut(const fl_graph *g, partition_edge *edges, int *partitions, const char *what)
{
    check_graph(g);
    *partitions = -7;
    int n = my_partition_edges(g, edges, MAX_EDGES, partitions);
    if (n == -1 && *partitions == -7)
        fail("not implemented yet (my_partition_edges returned -1 for %s)", what);
    if (n < 0)
        fail("my_partition_edges returned %d for %s", n, what);
    return n;
}

static void check_small(void)
{
    fl_graph *g = small_graph();
    partition_edge edges[MAX_EDGES];
    int partitions, n = cut(g, edges, &partitions, "the small graph");
    if (partitions != 3)
        fail("the small graph spans 3 tasks (ps 0, worker 0, worker 1), not %d partitions", partitions);
    const char *ps = "/job:ps/task:0", *w0 = "/job:worker/task:0", *w1 = "/job:worker/task:1";
    if (count_edges(edges, n, ps, w1) != 2)
        fail("ps -> worker 1 carries x and w once each (w is read twice there), not %d pairs",
             count_edges(edges, n, ps, w1));
    if (count_edges(edges, n, ps, w0) != 2 || count_edges(edges, n, w0, ps) != 1 || count_edges(edges, n, w1, ps) != 1)
        fail("the small graph: x and w to each worker, y0 and y1 back to the ps; you gave %d pairs, not 6", n);
    if (n != 6)
        fail("the small graph has 6 send/receive pairs, not %d", n);
    partition_edge few[2];
    if (my_partition_edges(g, few, 2, &partitions) != -1)
        fail("with room for 2 pairs of 6, my_partition_edges should return -1");
    fl_graph_free(g);
}

/* Worked by hand: each worker receives the 8 variables from the ps and
 * sends back 8 gradients and its loss; worker 0, where the client feeds the
 * batch, sends every other worker its 2 slices (image and label). */
static void check_towers(int workers)
{
    fl_optimizer *adam = fl_adam_optimizer(0.001f, 0.9f, 0.999f, 1e-8f);
    fl_graph *g = towers_graph(workers, adam, NULL);
    partition_edge edges[MAX_EDGES];
    char what[64];
    snprintf(what, sizeof what, "the towers on %d workers", workers);
    int partitions, n = cut(g, edges, &partitions, what);
    if (partitions != workers + 1)
        fail("%s: %d partitions, not %d (the ps and each worker)", what, partitions, workers + 1);
    for (int t = 0; t < workers; t++) {
        char worker[EX_TASK_LEN];
        snprintf(worker, sizeof worker, "/job:worker/task:%d", t);
        int in = count_edges(edges, n, "/job:ps/task:0", worker), out = count_edges(edges, n, worker, "/job:ps/task:0");
        if (in != 8 || out != 9)
            fail("%s: worker %d receives %d values from the ps and sends it %d; expected 8 (the variables) and 9 "
                 "(8 gradients, 1 loss)", what, t, in, out);
        int slices = t == 0 ? 0 : count_edges(edges, n, "/job:worker/task:0", worker);
        if (slices != (t == 0 ? 0 : 2))
            fail("%s: worker %d receives %d values from worker 0, not 2 (its image and label slices)", what, t,
                 slices);
    }
    if (n != 17 * workers + 2 * (workers - 1))
        fail("%s: %d pairs, not %d (17 per worker, 2 slices per worker after the first)", what, n,
             17 * workers + 2 * (workers - 1));
    fl_graph_free(g);
    fl_optimizer_free(adam);
}

int main(void)
{
    check_start("partition-edges", "labs/03-between-graph/exercises/partition_edges.c");
    check_small();
    check_towers(2);
    check_towers(4);
    pass();
}
