/* sync_cluster.h: the fixture of the synchronous between-graph tests
 * (test_sync_partitions.c, test_sync_two_ps.c): ps tasks and workers in this
 * process on loopback, each worker with a graph of its own (w and b on the ps
 * tasks, the loss sum((w - t)^2) + (b - 3)^2 on the worker, SGD at 0.1 under
 * fl_sync_replicas_optimizer), a gate on ps 0 that holds one worker between
 * reading its step and applying its gradients, and the steps' records. */
#ifndef FLOWLAB_TESTS_SYNC_CLUSTER_H
#define FLOWLAB_TESTS_SYNC_CLUSTER_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "loopback.h"
#include "runtime.h" /* the accumulator ops */
#include "tap.h"

#define STEPS 8
#define MAX_WORKERS 2
#define MAX_PS_TASKS 2

typedef struct {
    fl_cluster *cluster;
    fl_graph *g;
    fl_session *s;
    fl_optimizer *opt;
    fl_node *w, *b, *loss, *seen, *train, *init;
    fl_node *late; /* worker 1's: w's gradient of step 2, once the token passed it */
    fl_node *gate_open, *started; /* the held worker's gate, the chief's look at it */
    float losses[STEPS];
    int seen_steps[STEPS];
    int steps;
    char error[512];
} worker;

/* How a test's cluster starts: its workers, replicas_to_aggregate (of 2),
 * the worker held at the gate and the one that trains asynchronously (-1:
 * none), the checkpoint the chief restores instead of initializing, and
 * its ps tasks (1: it holds everything; 2: b on ps 1). */
typedef struct {
    int workers, replicas, held, async_task;
    const char *restore;
    int ps_tasks;
} setup;

typedef struct {
    char ps_hosts[64], worker_hosts[128];
    int ps_tasks;
    fl_cluster *ps_cluster[MAX_PS_TASKS];
    fl_server *ps[MAX_PS_TASKS];
    worker w[MAX_WORKERS];
} cluster;

/* The held worker's graph: its forward pass waits, on the ps, for the
 * accumulator "gate" to pass step 0, after telling "started" the global
 * step it read. */
static inline fl_node *hold_forward(worker *k)
{
    fl_device_scope_push(k->g, "/job:ps/task:0");
    fl_node *arrived = fl_accumulator_apply_gradient(k->g, "started", k->seen, fl_scalar(k->g, 1, NULL), NULL);
    fl_node *gate = NULL;
    if (fl_control_dependencies_push(k->g, &arrived, 1) == 0) {
        gate = fl_accumulator_wait_step(k->g, "gate", fl_shape_make(0), fl_int_scalar(k->g, 0, NULL), "gate");
        fl_control_dependencies_pop(k->g);
    }
    fl_device_pop(k->g);
    return gate;
}

/* The chief's: a take of "started" (the held worker read its step) and the
 * gate's opening. */
static inline void gate_controls(worker *k)
{
    fl_device_scope_push(k->g, "/job:ps/task:0");
    k->gate_open = fl_accumulator_set_global_step(k->g, "gate", fl_shape_make(0), fl_int_scalar(k->g, 1, NULL), NULL);
    k->started = fl_accumulator_take_gradient(k->g, "started", fl_shape_make(0), fl_int_scalar(k->g, 1, NULL), NULL);
    fl_device_pop(k->g);
}

/* Worker 1's late gradient: once the token passes step 2 (the chief set it
 * to the global step it restored), w's gradient tagged step 2. */
static inline fl_node *late_gradient(worker *k)
{
    fl_device_scope_push(k->g, "/job:ps/task:0");
    fl_node *two = fl_int_scalar(k->g, 2, NULL), *late = NULL;
    fl_node *passed = fl_accumulator_wait_step(k->g, "global_step/sync_token", fl_shape_make(0), two, NULL);
    if (fl_control_dependencies_push(k->g, &passed, 1) == 0) {
        fl_tensor *zero = fl_tensor_from_floats(fl_shape_make(1, 2), (float[]){0, 0});
        late = fl_accumulator_apply_gradient(k->g, "w/grad_accum", two, fl_constant(k->g, zero, NULL), "late");
        fl_tensor_free(zero);
        fl_control_dependencies_pop(k->g);
    }
    fl_device_pop(k->g);
    return late;
}

/* w and the global step on ps 0, b on ps b_task; the loss on the worker. */
static inline void build(worker *k, int task, int replicas, bool held, bool async, int b_task)
{
    char here[64], b_home[64];
    snprintf(here, sizeof here, "/job:worker/task:%d", task);
    snprintf(b_home, sizeof b_home, "/job:ps/task:%d", b_task);
    k->g = fl_graph_new();
    fl_device_scope_push(k->g, "/job:ps/task:0");
    k->w = fl_get_variable(k->g, "w", fl_shape_make(1, 2), fl_constant_initializer(1.0f));
    fl_node *global_step = fl_get_or_create_global_step(k->g);
    fl_device_pop(k->g);
    fl_device_scope_push(k->g, b_home);
    fl_node *b = k->b = fl_get_variable(k->g, "b", fl_shape_make(0), fl_constant_initializer(0.0f));
    fl_device_pop(k->g);
    fl_device_scope_push(k->g, here);
    k->seen = fl_identity(k->g, global_step, "step_seen");
    fl_node *gate = held ? hold_forward(k) : NULL;
    if (task == 0 && !async)
        gate_controls(k);
    else if (!async)
        k->late = late_gradient(k);
    if (gate)
        fl_control_dependencies_push(k->g, &gate, 1);
    fl_tensor *t = fl_tensor_from_floats(fl_shape_make(1, 2), (float[]){3, -1});
    fl_node *dw = fl_sub(k->g, k->w, fl_constant(k->g, t, "t"), NULL), *db = fl_sub(k->g, b, fl_scalar(k->g, 3, NULL), NULL);
    fl_tensor_free(t);
    k->loss = fl_add(k->g, fl_reduce_sum(k->g, fl_mul(k->g, dw, dw, NULL), NULL, 0, false, NULL),
                     fl_mul(k->g, db, db, NULL), "loss");
    if (gate)
        fl_control_dependencies_pop(k->g);
    fl_optimizer *sgd = fl_gradient_descent_optimizer(0.1f);
    k->opt = async ? sgd : fl_sync_replicas_optimizer(sgd, replicas, 2);
    if (!async)
        fl_optimizer_free(sgd);
    k->train = fl_minimize(k->opt, k->g, k->loss, global_step, "train");
    fl_device_pop(k->g);
    k->init = fl_global_variables_initializer(k->g);
    fl_session_options o = {.cluster = k->cluster};
    k->s = fl_session_new(k->g, &o);
}

static inline int up(cluster *c, const setup *how)
{
    memset(c, 0, sizeof *c);
    c->ps_tasks = how->ps_tasks == MAX_PS_TASKS ? MAX_PS_TASKS : 1;
    int ps0 = loopback_free_port(), ps1 = c->ps_tasks > 1 ? loopback_free_port() : 0;
    snprintf(c->ps_hosts, sizeof c->ps_hosts, ps1 ? "127.0.0.1:%d,127.0.0.1:%d" : "127.0.0.1:%d", ps0, ps1);
    int w0 = loopback_free_port(), w1 = loopback_free_port();
    snprintf(c->worker_hosts, sizeof c->worker_hosts, "127.0.0.1:%d,127.0.0.1:%d", w0, w1);
    for (int p = 0; p < c->ps_tasks; p++) {
        c->ps_cluster[p] = fl_cluster_from_flags(c->ps_hosts, c->worker_hosts, "ps", p);
        c->ps[p] = c->ps_cluster[p] ? fl_server_start(c->ps_cluster[p], NULL) : NULL;
        if (!c->ps[p])
            return -1;
    }
    for (int i = 0; i < how->workers; i++) {
        c->w[i].cluster = fl_cluster_from_flags(c->ps_hosts, c->worker_hosts, "worker", i);
        build(&c->w[i], i, how->replicas, i == how->held, i == how->async_task, c->ps_tasks - 1);
        if (!c->w[i].s || !c->w[i].train)
            return -1;
    }
    if (how->restore)
        return fl_session_restore_latest(c->w[0].s, how->restore) == 1 ? 0 : -1;
    return fl_session_run(c->w[0].s, NULL, 0, NULL, 0, NULL, &c->w[0].init, 1);
}

static inline void down(cluster *c, int workers);

/* up, or a failed check saying why and everything stopped. */
static inline bool started(cluster *c, const setup *how, const char *what)
{
    if (up(c, how) == 0)
        return true;
    ok(0, "%s start: %s", what, fl_last_error());
    down(c, how->workers);
    return false;
}

static inline void down(cluster *c, int workers)
{
    for (int i = 0; i < workers; i++) {
        fl_session_free(c->w[i].s);
        fl_cluster_say_goodbye(c->w[i].cluster);
        fl_optimizer_free(c->w[i].opt);
        fl_graph_free(c->w[i].g);
        fl_cluster_free(c->w[i].cluster);
    }
    for (int p = 0; p < c->ps_tasks; p++) {
        if (c->ps[p])
            ok(fl_server_join(c->ps[p], 20) == 0, "ps %d is done once the workers said goodbye (waited up to 20 s)",
               p);
        fl_server_stop(c->ps[p]);
        fl_cluster_free(c->ps_cluster[p]);
    }
}

/* One synchronous step: the loss and the global step this step read. */
static inline int train_step(worker *k)
{
    fl_node *fetch[2] = {k->loss, k->seen};
    fl_tensor *out[2] = {NULL, NULL};
    int rc = fl_session_run(k->s, NULL, 0, fetch, 2, out, &k->train, 1);
    if (rc == 0 && k->steps < STEPS) {
        k->losses[k->steps] = fl_tensor_scalar(out[0]);
        k->seen_steps[k->steps++] = *(const int32_t *)out[1]->data;
    }
    if (rc != 0)
        snprintf(k->error, sizeof k->error, "%s", fl_session_error(k->s));
    fl_tensor_free(out[0]);
    fl_tensor_free(out[1]);
    return rc;
}

static inline int global_step_now(worker *k)
{
    fl_node *step = fl_get_or_create_global_step(k->g);
    fl_tensor *out = NULL;
    int v = fl_session_run(k->s, NULL, 0, &step, 1, &out, NULL, 0) == 0 ? *(const int32_t *)out->data : -1;
    fl_tensor_free(out);
    return v;
}

static inline void *train_once(void *arg)
{
    train_step(arg);
    return NULL;
}

static inline int run_target(worker *k, fl_node *target, fl_node *fetch)
{
    fl_tensor *out = NULL;
    int rc = fl_session_run(k->s, NULL, 0, fetch ? &fetch : NULL, fetch ? 1 : 0, fetch ? &out : NULL,
                            target ? &target : NULL, target ? 1 : 0);
    fl_tensor_free(out);
    return rc;
}

/* 1 of 2 with worker 1 held: its step, on a thread of its own, reads global
 * step 0 and waits at the gate while the chief runs chief_steps steps alone;
 * then the gate opens and that step ends (its gradients now stale). */
static inline void hold_worker_1(cluster *c, int chief_steps)
{
    pthread_t held;
    pthread_create(&held, NULL, train_once, &c->w[1]);
    ok(run_target(&c->w[0], NULL, c->w[0].started) == 0, "worker 1 read its step and waits at the gate");
    for (int i = 0; i < chief_steps; i++)
        train_step(&c->w[0]);
    ok(c->w[0].steps == chief_steps, "1 of 2: the chief runs %d steps alone (%d): %s", chief_steps, c->w[0].steps,
       c->w[0].error);
    ok(run_target(&c->w[0], c->w[0].gate_open, NULL) == 0, "the gate opens");
    pthread_join(held, NULL);
    ok(c->w[1].steps == 1 && c->w[1].seen_steps[0] == 0, "worker 1's step ran, at global step 0: %s",
       c->w[1].error[0] ? c->w[1].error : "no error");
}

#endif
