/* test_between_graph_partitions.c: a between-graph worker partitions its
 * own graph (issue 36 item 2, stage A).
 * One ps and two workers in this process on loopback, each worker with a
 * graph of its own: w on the ps, loss = sum(w x) on the worker, and the
 * update w += -0.1 x back on the ps, as ordinary kernels of the ps's piece.
 * The chief initialises w, which worker 1 then finds initialised (the ps
 * answers from its container); worker 1, which never initialises w, trains the same w
 * (the ps's variable container); a node placed nowhere runs on the worker
 * that built it, not on worker 0; two workers training at once lose no
 * update. Every wait has a deadline (FLOWLAB_TASK_DEADLINE). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "loopback.h"
#include "tap.h"

#define STEPS 20

typedef struct {
    fl_cluster *cluster;
    fl_graph *g;
    fl_session *s;
    fl_node *w, *x, *loss, *step, *init, *scaled;
    const char *error; /* a training thread's failure */
} worker;

/* w on the ps; x, the loss on this worker; scaled = -0.1 x placed nowhere. */
static void build(worker *k, int task)
{
    char here[64];
    snprintf(here, sizeof here, "/job:worker/task:%d", task);
    k->g = fl_graph_new();
    fl_device_scope_push(k->g, "/job:ps/task:0");
    k->w = fl_get_variable(k->g, "w", fl_shape_make(1, 2), fl_constant_initializer(1.0f));
    fl_device_pop(k->g);
    fl_device_scope_push(k->g, here);
    k->x = fl_placeholder(k->g, FL_FLOAT32, fl_shape_make(1, 2), "x");
    k->loss = fl_reduce_sum(k->g, fl_mul(k->g, k->w, k->x, "wx"), NULL, 0, false, "loss");
    fl_device_pop(k->g);
    fl_tensor *rate = fl_tensor_from_floats(fl_shape_make(0), (float[]){-0.1f});
    k->scaled = fl_mul(k->g, k->x, fl_constant(k->g, rate, "rate"), "scaled");
    fl_tensor_free(rate);
    fl_device_scope_push(k->g, "/job:ps/task:0");
    k->step = fl_assign_add(k->g, k->w, k->scaled, "update");
    fl_device_pop(k->g);
    k->init = fl_global_variables_initializer(k->g);
    fl_session_options o = {.cluster = k->cluster};
    k->s = fl_session_new(k->g, &o);
}

/* One step fed x; the loss before the update; NAN when the step fails. */
static float train_step(worker *k, float x0, float x1)
{
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(1, 2), (float[]){x0, x1}), *loss = NULL;
    fl_feed feed = {k->x, x};
    int rc = fl_session_run(k->s, &feed, 1, &k->loss, 1, &loss, &k->step, 1);
    fl_tensor_free(x);
    float v = rc == 0 ? fl_tensor_scalar(loss) : NAN;
    fl_tensor_free(loss);
    return v;
}

static void test_shared_variable(worker *chief, worker *other)
{
    const char *missing[2] = {NULL, NULL};
    int n = fl_session_uninitialized_variables(other->s, missing, 2);
    ok(n == 1 && missing[0] && strcmp(missing[0], "w") == 0, "before the chief's init worker 1 finds w uninitialised "
       "(%d: %s)", n, n < 0 ? fl_session_error(other->s) : missing[0] ? missing[0] : "none");
    ok(fl_session_run(chief->s, NULL, 0, NULL, 0, NULL, &chief->init, 1) == 0, "the chief initialises w on the ps: %s",
       fl_session_error(chief->s));
    n = fl_session_uninitialized_variables(other->s, NULL, 0);
    ok(n == 0, "after it, worker 1 finds every variable initialised, as a monitored session waits for (%d)", n);
    is_near(train_step(chief, 1, 2), 3, 1e-6, "the chief's step: loss = [1,1].[1,2] = 3, w becomes [0.9, 0.8]");
    is_near(train_step(other, 1, 1), 1.7, 1e-6, "worker 1, which never initialised w, trains the chief's w: 1.7");
    is_near(train_step(chief, 1, 0), 0.8, 1e-6, "and the chief sees worker 1's update: w[0] = 0.8");
    const char *where = fl_session_node_device(other->s, other->scaled);
    is_string(where ? where : "(none)", "/job:worker/task:1/cpu:0", "a node placed nowhere runs on its own worker");
    where = fl_session_node_device(other->s, other->step);
    is_string(where ? where : "(none)", "/job:ps/task:0/cpu:0", "the update runs on the ps, beside w");
}

static void *train(void *arg)
{
    worker *k = arg;
    for (int i = 0; i < STEPS && !k->error; i++)
        if (isnan(train_step(k, 1, 0)))
            k->error = fl_session_error(k->s);
    return NULL;
}

static void test_two_workers_at_once(worker *w)
{
    float before = train_step(&w[0], 1, 0) - 0.1f; /* w[0] after that step */
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, train, &w[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        ok(!w[i].error, "worker %d's %d steps ran: %s", i, STEPS, w[i].error ? w[i].error : "yes");
    }
    is_near(train_step(&w[0], 1, 0), before - 0.1 * 2 * STEPS, 1e-4,
            "two workers training at once: every update of w reached the ps");
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "30", 1);
    char ps_hosts[64], worker_hosts[128];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", loopback_free_port());
    int w0 = loopback_free_port(), w1 = loopback_free_port();
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d,127.0.0.1:%d", w0, w1);
    fl_cluster *ps_cluster = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    fl_server *ps = ps_cluster ? fl_server_start(ps_cluster, NULL) : NULL;
    if (!ps) {
        diag("%s", fl_last_error());
        skip_all("cannot start a ps on loopback");
    }
    worker w[2] = {{0}};
    for (int i = 0; i < 2; i++) {
        w[i].cluster = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", i);
        build(&w[i], i);
        ok(w[i].s != NULL, "worker %d's session starts its own server: %s", i, fl_last_error());
    }
    if (w[0].s && w[1].s) {
        test_shared_variable(&w[0], &w[1]);
        test_two_workers_at_once(w);
    }
    for (int i = 0; i < 2; i++) {
        fl_session_free(w[i].s);
        ok(fl_cluster_say_goodbye(w[i].cluster) == 0, "worker %d says goodbye once its session is closed: %s", i,
           fl_last_error());
        fl_graph_free(w[i].g);
        fl_cluster_free(w[i].cluster);
    }
    ok(fl_server_join(ps, 20) == 0, "the ps is done once both workers said goodbye (waited up to 20 s)");
    fl_server_stop(ps);
    fl_cluster_free(ps_cluster);
    return done_testing();
}
