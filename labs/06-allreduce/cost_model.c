/* cost_model.c: the alpha-beta model of a data-parallel step (see
 * cost_model.h for the formulas and what they assume). Plain arithmetic, no
 * MPI: labs/tools/cost_model, the bench and the book's exercise use it too;
 * only chapter1_gradient_bytes builds a graph, to count the model's bytes. */
#include <math.h>

#include "flowlab.h"
#include "../common/model.h"
#include "cost_model.h"

// [book:ring_cost]
double ring_allreduce_seconds(int workers, double bytes, cost_network net)
{
    if (workers <= 1)
        return 0; /* nothing to sum with */
    double n = workers;
    /* reduce-scatter, then all-gather: N-1 messages of bytes/N in each half */
    return 2 * (n - 1) * net.alpha_s + 2 * (n - 1) / n * bytes / net.bandwidth_Bps;
}
// [end:ring_cost]

// [book:ps_cost]
double parameter_server_seconds(int workers, int shards, double bytes, cost_network net)
{
    /* a worker pulls only after it pushed: its link carries bytes, then
     * bytes again; a shard's link carries N/M of everyone's, its two
     * directions busy at once with different workers' pushes and pulls.
     * The busier end sets the time */
    double worker_link = 2 * bytes, shard_link = (double)workers * bytes / shards;
    return fmax(worker_link, shard_link) / net.bandwidth_Bps + 2 * net.alpha_s;
}
// [end:ps_cost]

double parameter_server_sync_seconds(int workers, int shards, double bytes, cost_network net)
{
    /* every push, then every pull: a shard's directions take turns too */
    double worker_link = 2 * bytes, shard_link = 2.0 * workers * bytes / shards;
    return fmax(worker_link, shard_link) / net.bandwidth_Bps + 2 * net.alpha_s;
}

double step_seconds(cost_workload w, double comm_s)
{
    double hidden = w.overlap * w.compute_s; /* the backward pass's part that comm can run beside */
    return w.compute_s - hidden + fmax(hidden, comm_s);
}

double ring_step_seconds(int workers, cost_workload w, cost_network net)
{
    return step_seconds(w, ring_allreduce_seconds(workers, w.gradient_bytes, net));
}

double parameter_server_step_seconds(int workers, int shards, cost_workload w, cost_network net)
{
    return step_seconds(w, parameter_server_seconds(workers, shards, w.gradient_bytes, net));
}

double scaling_efficiency(cost_workload w, double step_s) { return w.compute_s / step_s; }

double job_images_per_second(int workers, int batch, double step_s)
{
    return (double)workers * batch / step_s;
}

int fit_two_worker_allreduce(double small_bytes, double time_small_s, double large_bytes,
                             double time_large_s, cost_network *out)
{
    if (!(large_bytes > small_bytes) || !(time_large_s > time_small_s) || !(time_small_s > 0))
        return -1;
    /* t = 2 alpha + bytes / bandwidth at both points */
    out->bandwidth_Bps = (large_bytes - small_bytes) / (time_large_s - time_small_s);
    out->alpha_s = fmax(0, (time_small_s - small_bytes / out->bandwidth_Bps) / 2);
    return 0;
}

double chapter1_gradient_bytes(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *image = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image");
    core_model(g, image);
    enum { MAX_VARIABLES = 32 };
    fl_node *vars[MAX_VARIABLES];
    int n = fl_trainable_variables(g, vars, MAX_VARIABLES);
    double bytes = fl_graph_error(g) || n <= 0 || n > MAX_VARIABLES ? -1 : 0;
    for (int i = 0; bytes >= 0 && i < n; i++)
        bytes += 4.0 * (double)fl_shape_size(fl_node_shape(vars[i])); /* float32 */
    fl_graph_free(g);
    return bytes;
}
