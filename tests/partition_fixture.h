/* partition_fixture.h: one graph cut by hand into a ps and a worker
 * partition, as the partitioner cuts one, for the tests of task servers
 * (test_partition_server, test_flowlab_server): the ps holds w and Sends
 * its value to the worker, which Recvs it, computes g = w * x (x fed by
 * the client) and its sum, and Sends g straight back to the ps, which adds
 * it to w. Also: one run of a partition on a thread. */
#ifndef FLOWLAB_TESTS_PARTITION_FIXTURE_H
#define FLOWLAB_TESTS_PARTITION_FIXTURE_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/partition/partition_client.h"
#include "runtime.h"
#include "tap.h"

static const char *W_KEY = "w/read:/job:ps/task:0->/job:worker/task:0";
static const char *G_KEY = "g:/job:worker/task:0->/job:ps/task:0";

static const char *W_SEND = "_send/w/read/to/worker/0", *G_SEND = "_send/g/to/ps/0";

/* ps: w (ones) and its read, sent; g received and added to w. */
static inline void ps_partition(fl_graph_partition *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "ps");
    fl_graph *g = p->graph = fl_graph_new();
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 2), fl_constant_initializer(1.0f));
    fl_send(g, fl_identity(g, w, "w/read"), W_KEY, "/job:worker/task:0", W_SEND);
    fl_node *grad = fl_recv(g, FL_FLOAT32, fl_shape_make(1, 2), G_KEY, "/job:worker/task:0", "recv/g");
    fl_assign_add(g, w, grad, "update");
}

/* worker: x (fed); w received, g = w * x sent, and its sum. */
static inline void worker_partition(fl_graph_partition *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "worker");
    fl_graph *g = p->graph = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 2), "x");
    fl_node *w = fl_recv(g, FL_FLOAT32, fl_shape_make(1, 2), W_KEY, "/job:ps/task:0", "recv/w");
    fl_node *grad = fl_mul(g, w, x, "g");
    fl_reduce_sum(g, grad, NULL, 0, false, "g_sum");
    fl_send(g, grad, G_KEY, "/job:ps/task:0", G_SEND);
}

typedef struct {
    fl_task_client *client;
    uint64_t handle;
    fl_partition_run run;
    fl_tensor *out[1];
    int rc;
    fl_error_code code;
    char error[512];
    double seconds;
} remote_run;

static inline void *run_remote(void *arg)
{
    remote_run *r = arg;
    double start = fl_now_s();
    r->rc = fl_partition_run_remote(r->client, r->handle, &r->run, r->out, NULL);
    r->seconds = fl_now_s() - start;
    r->code = r->rc ? fl_last_error_code() : FL_OK;
    snprintf(r->error, sizeof r->error, "%s", r->rc ? fl_last_error() : "");
    return NULL;
}

static const char *ps_targets[2], *ps_fetches[] = {"w/read"};
static const char *worker_feeds[] = {"x"}, *worker_fetches[] = {"g_sum"}, *worker_targets[1];

/* A step's targets: the ps's update and its Send of w, the worker's Send of g. */
static inline void setup_runs(remote_run *ps, remote_run *worker, uint64_t step, const fl_tensor **x)
{
    ps_targets[0] = "update";
    ps_targets[1] = W_SEND;
    worker_targets[0] = G_SEND;
    ps->run = (fl_partition_run){.step_id = step, .fetch_names = ps_fetches, .nfetches = 1,
                                 .target_names = ps_targets, .ntargets = 2};
    worker->run = (fl_partition_run){.step_id = step, .feed_names = worker_feeds, .feed_values = x, .nfeeds = 1,
                                     .fetch_names = worker_fetches, .nfetches = 1, .target_names = worker_targets,
                                     .ntargets = 1};
}

static inline void initialize(remote_run *ps)
{
    const char *init[] = {"w/Assign"};
    fl_partition_run run = {.step_id = 1, .target_names = init, .ntargets = 1};
    ok(fl_partition_run_remote(ps->client, ps->handle, &run, NULL, NULL) == 0, "a run with one target initialises w: %s",
       fl_last_error());
}

#endif
