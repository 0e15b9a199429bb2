/* check_cross_task_bytes.c: checks my_cross_task_bytes (exercise
 * cross-task-bytes) on a small graph worked by hand, then on chapter 2's
 * towers placed on 2 worker tasks as the lab's cluster mode places them. */
#include "exercises.h"
#include "../../common/check.h"
#include "check_graphs.h"

#define MODEL_BYTES 13098536LL /* chapter 1's 3,274,634 float32 parameters */

static void expect(const fl_graph *g, const char *task, int batch, int64_t want_in, int64_t want_out,
                   const char *why)
{
    int64_t in = -7, out = -7;
    int rc = my_cross_task_bytes(g, task, batch, &in, &out);
    if (rc == -1 && in == -7)
        fail("not implemented yet (my_cross_task_bytes returned -1 for %s)", task);
    if (rc != 0)
        fail("my_cross_task_bytes returned %d for %s; expected 0", rc, task);
    if (in != want_in || out != want_out)
        fail("%s at %d rows: received %lld and sent %lld bytes, not %lld and %lld (%s)", task, batch, (long long)in,
             (long long)out, (long long)want_in, (long long)want_out, why);
}

int main(void)
{
    check_start("cross-task-bytes", "labs/03-between-graph/exercises/cross_task_bytes.c");
    fl_graph *g = small_graph();
    check_graph(g);
    expect(g, "/job:worker/task:1", 8, 128 + 32, 64, "in: x [8,4] and w [4,2] once; out: y1 [8,2]");
    expect(g, "/job:ps/task:0", 8, 2 * 64, 2 * (128 + 32), "x and w go to both workers; y0 and y1 come back");
    expect(g, "/job:worker/task:0", 1, 16 + 32, 8, "one row: x [1,4], w [4,2], y0 [1,2]");
    fl_graph_free(g);

    fl_optimizer *adam = fl_adam_optimizer(0.001f, 0.9f, 0.999f, 1e-8f);
    g = towers_graph(2, adam, NULL);
    check_graph(g);
    int64_t slices = 32 * 28 * 28 * 4 + 32 * 4; /* a tower's images and labels */
    expect(g, "/job:worker/task:1", 32, MODEL_BYTES + slices, MODEL_BYTES + 4,
           "in: every variable, and its slices from worker 0; out: a gradient per variable and the loss");
    expect(g, "/job:worker/task:0", 32, MODEL_BYTES, MODEL_BYTES + 4 + slices,
           "the batch is fed here, not received; out: gradients, loss, and worker 1's slices");
    expect(g, "/job:ps/task:0", 32, 2 * (MODEL_BYTES + 4), 2 * MODEL_BYTES, "both workers' variables and gradients");
    fl_graph_free(g);
    fl_optimizer_free(adam);
    pass();
}
