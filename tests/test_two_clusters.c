/* test_two_clusters.c: two clusters in one process share nothing. Each has
 * its own ps (a server on a free loopback port, in this process) and its own
 * remote device; a variable set through one is not seen through the other,
 * each counts its own traffic and synchronous step, a lost ps is reconnected
 * and a goodbye said by its cluster alone, and freeing one cluster leaves
 * the other working. */
#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "distributed_runtime/ps/remote_device.h"
#include "loopback.h"

/* One cluster: its ps task's spec and server, a worker's spec, the worker's
 * remote device for /job:ps/task:0 and that device's connection. */
typedef struct {
    fl_cluster *ps_spec, *worker;
    fl_server *ps;
    fl_device *device;
    fl_remote_task *task;
} cluster_pair;

static bool start(cluster_pair *p, const char *name)
{
    char ps_hosts[64], worker_hosts[64];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", loopback_free_port());
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", loopback_free_port());
    p->ps_spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    p->worker = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    p->ps = p->ps_spec ? fl_server_start(p->ps_spec, NULL) : NULL;
    p->device = p->ps ? fl_remote_device(p->worker, "ps", 0) : NULL;
    p->task = p->device ? p->device->impl : NULL;
    return ok(p->device != NULL, "cluster %s: a ps on %s and the worker's device for it (%s)", name, ps_hosts,
              p->device ? p->device->name : fl_last_error());
}

/* Sets a variable through c's connection (its first value). */
static bool init_scalar(fl_task_client *c, const char *name, fl_tensor *value)
{
    uint32_t id = fl_task_client_init(c, name, value, NULL);
    fl_tensor_free(value);
    return id && fl_task_client_wait(c, id) == 0;
}

/* -1: not set on the task or an error; else whether it has a value. */
static int has_value(fl_task_client *c, const char *name)
{
    bool has = false;
    uint32_t id = fl_task_client_is_initialized(c, name, &has);
    return id && fl_task_client_wait(c, id) == 0 ? has : -1;
}

/* The first of count floats; -1 on an error. */
static float pull_first(fl_task_client *c, const char *name, int count)
{
    float *values = calloc((size_t)count, sizeof *values);
    uint32_t id = fl_task_client_pull(c, name, values, (size_t)count * sizeof *values);
    float first = id && fl_task_client_wait(c, id) == 0 ? values[0] : -1;
    free(values);
    return first;
}

static float pull_float(fl_task_client *c, const char *name) { return pull_first(c, name, 1); }

static void test_variables_apart(cluster_pair *a, cluster_pair *b)
{
    ok(a->device != b->device && a->task->client != b->task->client,
       "the same task name, /job:ps/task:0, is a device of each cluster's own");
    const float big[4096] = {7};
    ok(init_scalar(a->task->client, "v", fl_tensor_from_floats(fl_shape_make(1, 4096), big)) &&
           init_scalar(b->task->client, "w", fl_tensor_from_floats(fl_shape_make(0), (const float[]){2})),
       "v is set through cluster a, w through cluster b");
    ok(has_value(b->task->client, "v") == 0 && has_value(a->task->client, "w") == 0,
       "neither variable is seen through the other cluster");
    ok(pull_first(a->task->client, "v", 4096) == 7 && pull_float(b->task->client, "w") == 2,
       "each reads its own back");
    uint64_t sent_a, received_a, sent_b, received_b;
    fl_remote_traffic(a->worker, &sent_a, &received_a);
    fl_remote_traffic(b->worker, &sent_b, &received_b);
    ok(sent_a > sizeof big && sent_b < sizeof big && received_a > sizeof big && received_b < sizeof big,
       "each counts its own traffic: a sent %llu and received %llu bytes, b %llu and %llu",
       (unsigned long long)sent_a, (unsigned long long)received_a, (unsigned long long)sent_b,
       (unsigned long long)received_b);
    ok(fl_remote_task_traffic(b->worker, "/job:ps/task:1", &sent_b, &received_b) == 0,
       "a task a cluster never talked to has no traffic");
}

/* One synchronous step through a (replicas 1: it completes at once): a's
 * step is learnt from the token, b's stays unknown. */
static void test_sync_steps_apart(cluster_pair *a, cluster_pair *b)
{
    fl_task_client *c = a->task->client;
    const int32_t zero = 0, one = 1;
    bool set = init_scalar(c, "global_step", fl_tensor_from_ints(fl_shape_make(0), &zero));
    fl_tensor *delta = fl_tensor_from_ints(fl_shape_make(0), &one);
    fl_wire_sync sync = {FL_WIRE_STEP_UNKNOWN, 1};
    uint32_t id = fl_task_client_sync_assignment(c, FL_WIRE_SYNC_ASSIGN_ADD, &sync, "global_step", delta);
    fl_tensor_free(delta);
    uint32_t token = id ? fl_task_client_wait_step(c, "global_step", FL_WIRE_STEP_UNKNOWN,
                                                 fl_sync_step_token_buffer(a->task->sync))
                        : 0;
    if (token)
        fl_sync_step_expect_token(a->task->sync, c, token);
    ok(set && token && fl_task_client_wait(c, token) == 0, "cluster a completes a synchronous step");
    uint64_t step_a = fl_sync_step_now(a->task->sync), step_b = fl_sync_step_now(b->task->sync);
    ok(step_a == 1 && step_b == FL_WIRE_STEP_UNKNOWN, "a's worker is at step %lld, b's still unknown (%s)",
       (long long)step_a, step_b == FL_WIRE_STEP_UNKNOWN ? "unknown" : "known");
    ok(fl_remote_stale_variable_updates(a->worker) == 0 && fl_remote_stale_variable_updates(b->worker) == 0,
       "no update was dropped as stale");
}

/* Waits up to 10 s for c to see its ps gone. */
static bool noticed_loss(fl_task_client *c)
{
    for (int i = 0; i < 1000 && !fl_task_client_broken(c); i++)
        usleep(10000);
    return fl_task_client_broken(c);
}

/* a's ps stops and comes back on its port: only a's connection is lost,
 * and only a reconnects. */
static void test_reconnect_apart(cluster_pair *a, cluster_pair *b)
{
    fl_task_client *b_before = b->task->client;
    fl_server_stop(a->ps);
    ok(noticed_loss(a->task->client), "cluster a's connection sees its ps stop");
    ok(!fl_task_client_broken(b->task->client), "cluster b's does not");
    ok(fl_cluster_reconnect(b->worker) == 0, "reconnecting b finds nothing lost");
    a->ps = fl_server_start(a->ps_spec, NULL);
    int made = a->ps ? fl_cluster_reconnect(a->worker) : -1;
    ok(made == 1, "reconnecting a connects again to its restarted ps (%d: %s)", made,
       made == 1 ? "ok" : fl_last_error());
    ok(b->task->client == b_before && pull_float(b->task->client, "w") == 2,
       "b's connection is the one it had, and still serves");
    ok(fl_sync_step_now(a->task->sync) == FL_WIRE_STEP_UNKNOWN, "a's step is unknown again after the loss");
}

/* Goodbye from a: a's ps may exit, b's still waits for its worker. */
static void test_goodbye_apart(cluster_pair *a, cluster_pair *b)
{
    ok(fl_cluster_say_goodbye(a->worker) == 0, "cluster a's worker says goodbye");
    ok(fl_server_join(a->ps, 10) == 0, "a's ps knows its worker has finished");
    ok(fl_server_join(b->ps, 0.2) == 1, "b's ps still waits for its worker");
    ok(!fl_task_client_broken(b->task->client) && pull_float(b->task->client, "w") == 2,
       "b's connection still serves");
}

static void test_free_apart(cluster_pair *a, cluster_pair *b)
{
    fl_cluster_free(a->worker);
    a->worker = NULL;
    ok(pull_float(b->task->client, "w") == 2, "freeing cluster a leaves cluster b working");
    ok(fl_cluster_say_goodbye(b->worker) == 0 && fl_server_join(b->ps, 10) == 0,
       "and b says its own goodbye");
}

static void stop(cluster_pair *p)
{
    fl_cluster_free(p->worker);
    fl_server_stop(p->ps);
    fl_cluster_free(p->ps_spec);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "20", 1);
    cluster_pair a = {0}, b = {0};
    if (start(&a, "a") && start(&b, "b")) {
        test_variables_apart(&a, &b);
        test_sync_steps_apart(&a, &b);
        test_reconnect_apart(&a, &b);
        test_goodbye_apart(&a, &b);
        test_free_apart(&a, &b);
    }
    stop(&a);
    stop(&b);
    return done_testing();
}
