/* partition_fixture.h: one graph cut by hand into a ps and a worker
 * partition, for the tests of task servers (test_partition_server,
 * test_flowlab_server): the ps holds w and sends its value to the worker,
 * which computes g = w * x (x fed by the client) and its sum, and sends g
 * straight back to the ps, which adds it to w. Waves: ps 0 (w), worker 1
 * (g), ps 2 (the update). Also: one run of a partition on a thread. */
#ifndef FLOWLAB_TESTS_PARTITION_FIXTURE_H
#define FLOWLAB_TESTS_PARTITION_FIXTURE_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/partition_client.h"
#include "runtime.h"
#include "tap.h"

static const char *W_KEY = "w/read:/job:ps/task:0->/job:worker/task:0";
static const char *G_KEY = "g:/job:worker/task:0->/job:ps/task:0";

static inline void add_edge(fl_partition_edge **edges, int *n, const char *key, const char *node, const char *job)
{
    *edges = realloc(*edges, (size_t)(*n + 1) * sizeof **edges);
    fl_partition_edge *e = &(*edges)[(*n)++];
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    snprintf(e->node, sizeof e->node, "%s", node);
    snprintf(e->peer_job, sizeof e->peer_job, "%s", job);
}

/* Waves run from the node's id: nodes made from `from` on are in `wave`. */
static inline void set_waves_from(fl_graph_partition *p, const char *from, int wave)
{
    int n = fl_graph_node_count(p->graph);
    p->wave = realloc(p->wave, (size_t)n * sizeof *p->wave);
    for (int i = fl_graph_find(p->graph, from)->id; i < n; i++)
        p->wave[i] = wave;
}

/* ps: wave 0 w (ones) and its read, sent; wave 2 g received and added to w. */
static inline void ps_partition(fl_graph_partition *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "ps");
    fl_graph *g = p->graph = fl_graph_new();
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 2), fl_constant_initializer(1.0f));
    fl_identity(g, w, "w/read");
    set_waves_from(p, "w", 0);
    fl_node *grad = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 2), "recv/g");
    fl_assign_add(g, w, grad, "update");
    set_waves_from(p, "recv/g", 2);
    p->nwaves = 3;
    add_edge(&p->sends, &p->nsends, W_KEY, "w/read", "worker");
    add_edge(&p->recvs, &p->nrecvs, G_KEY, "recv/g", "worker");
}

/* worker: wave 0 x (fed); wave 1 w received, g = w * x sent, and its sum. */
static inline void worker_partition(fl_graph_partition *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "worker");
    fl_graph *g = p->graph = fl_graph_new();
    fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 2), "x");
    set_waves_from(p, "x", 0);
    fl_node *w = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 2), "recv/w");
    fl_node *grad = fl_mul(g, w, fl_graph_find(g, "x"), "g");
    fl_reduce_sum(g, grad, NULL, 0, false, "g_sum");
    set_waves_from(p, "recv/w", 1);
    p->nwaves = 2;
    add_edge(&p->sends, &p->nsends, G_KEY, "g", "ps");
    add_edge(&p->recvs, &p->nrecvs, W_KEY, "recv/w", "ps");
}

typedef struct {
    fl_ps_client *client;
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

static const char *ps_targets[] = {"update"}, *ps_fetches[] = {"w/read"};
static const char *worker_feeds[] = {"x"}, *worker_fetches[] = {"g_sum"};
static const char *w_keys[1], *g_keys[1];

static inline void setup_runs(remote_run *ps, remote_run *worker, uint64_t step, const fl_tensor **x)
{
    w_keys[0] = W_KEY;
    g_keys[0] = G_KEY;
    ps->run = (fl_partition_run){.step_id = step, .fetch_names = ps_fetches, .nfetches = 1,
                                 .target_names = ps_targets, .ntargets = 1, .send_keys = w_keys, .nsends = 1,
                                 .recv_keys = g_keys, .nrecvs = 1};
    worker->run = (fl_partition_run){.step_id = step, .feed_names = worker_feeds, .feed_values = x, .nfeeds = 1,
                                     .fetch_names = worker_fetches, .nfetches = 1, .send_keys = g_keys,
                                     .nsends = 1, .recv_keys = w_keys, .nrecvs = 1};
}

static inline void initialize(remote_run *ps)
{
    const char *init[] = {"w/Assign"};
    fl_partition_run run = {.step_id = 1, .target_names = init, .ntargets = 1};
    ok(fl_partition_run_remote(ps->client, ps->handle, &run, NULL, NULL) == 0, "a run with one target initialises w: %s",
       fl_last_error());
}

#endif
