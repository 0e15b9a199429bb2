/* test_two_clusters.c: two clusters in one process share nothing. Each has
 * its own ps (a server on a free loopback port, in this process) and its own
 * connection to it; a variable set through one is not seen through the other,
 * each counts its own traffic, a lost ps is reconnected
 * and a goodbye said by its cluster alone, and freeing one cluster leaves
 * the other working. */
#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "distributed_runtime/ps/cluster_state.h"
#include "distributed_runtime/partition/partition_client.h"
#include "loopback.h"

/* One cluster: its ps task's spec and server, a worker's spec. */
typedef struct {
    fl_cluster *ps_spec, *worker;
    fl_server *ps;
} cluster_pair;

/* The worker's connection to /job:ps/task:0: the cluster's, made on first use. */
static fl_task_client *client_of(const cluster_pair *p) { return fl_cluster_client(p->worker, "ps", 0); }

static bool start(cluster_pair *p, const char *name)
{
    char ps_hosts[64], worker_hosts[64];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", loopback_free_port());
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", loopback_free_port());
    p->ps_spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    p->worker = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    p->ps = p->ps_spec ? fl_server_start(p->ps_spec, NULL) : NULL;
    fl_task_client *c = p->ps ? client_of(p) : NULL;
    return ok(c != NULL, "cluster %s: a ps on %s and the worker's connection to it (%s)", name, ps_hosts,
              c ? "ok" : fl_last_error());
}

/* Registers on c's task a partition that holds variable `name` (count
 * floats, all `value`) and reads it (name/read); its handle, or 0. */
static uint64_t register_variable(fl_task_client *c, const char *name, int count, float value)
{
    fl_graph_partition p = {.task = 0};
    snprintf(p.job, sizeof p.job, "ps");
    p.graph = fl_graph_new();
    char read[64];
    snprintf(read, sizeof read, "%s/read", name);
    fl_node *v = fl_get_variable(p.graph, name, fl_shape_make(1, count), fl_constant_initializer(value));
    fl_identity(p.graph, v, read);
    uint64_t handle = 0;
    if (fl_partition_register(c, &p, &handle) != 0)
        handle = 0;
    fl_graph_partition_free(&p);
    return handle;
}

/* Sets a variable through c's connection: its partition's initialiser runs. */
static bool init_variable(fl_task_client *c, const char *name, int count, float value)
{
    uint64_t handle = register_variable(c, name, count, value);
    char assign[64];
    snprintf(assign, sizeof assign, "%s/Assign", name);
    const char *targets[] = {assign};
    fl_partition_run run = {.step_id = 1, .target_names = targets, .ntargets = 1};
    return handle && fl_partition_run_remote(c, handle, &run, NULL, NULL) == 0;
}

/* -1: not set on the task or an error; else whether it has a value. */
static int has_value(fl_task_client *c, const char *name)
{
    bool has = false;
    uint32_t id = fl_task_client_is_initialized(c, name, &has);
    return id && fl_task_client_wait(c, id) == 0 ? has : -1;
}

/* The first of count floats, read through a partition of c's own that
 * shares the task's variable; -1 on an error. */
static float pull_first(fl_task_client *c, const char *name, int count)
{
    uint64_t handle = register_variable(c, name, count, -1);
    char read[64];
    snprintf(read, sizeof read, "%s/read", name);
    const char *fetches[] = {read};
    fl_partition_run run = {.step_id = 2, .fetch_names = fetches, .nfetches = 1};
    fl_tensor *out[1] = {NULL};
    float first = handle && fl_partition_run_remote(c, handle, &run, out, NULL) == 0 ? fl_tensor_floats(out[0])[0] : -1;
    fl_tensor_free(out[0]);
    if (handle)
        fl_partition_deregister(c, handle);
    return first;
}

static float pull_float(fl_task_client *c, const char *name) { return pull_first(c, name, 1); }

static void test_variables_apart(cluster_pair *a, cluster_pair *b)
{
    ok(client_of(a) != client_of(b), "the same task name, /job:ps/task:0, is a connection of each cluster's own");
    const size_t big = 4096 * sizeof(float);
    ok(init_variable(client_of(a), "v", 4096, 7) && init_variable(client_of(b), "w", 1, 2),
       "v is set through cluster a, w through cluster b");
    ok(has_value(client_of(b), "v") == 0 && has_value(client_of(a), "w") == 0,
       "neither variable is seen through the other cluster");
    ok(pull_first(client_of(a), "v", 4096) == 7 && pull_float(client_of(b), "w") == 2,
       "each reads its own back");
    uint64_t sent_a, received_a, sent_b, received_b;
    fl_remote_traffic(a->worker, &sent_a, &received_a);
    fl_remote_traffic(b->worker, &sent_b, &received_b);
    ok(received_a > big && received_b < big && sent_a > 0 && sent_b > 0,
       "each counts its own traffic: a sent %llu and received %llu bytes, b %llu and %llu",
       (unsigned long long)sent_a, (unsigned long long)received_a, (unsigned long long)sent_b,
       (unsigned long long)received_b);
    ok(fl_remote_task_traffic(b->worker, "/job:ps/task:1", &sent_b, &received_b) == 0,
       "a task a cluster never talked to has no traffic");
    ok(fl_remote_stale_variable_updates(a->worker) == 0 && fl_remote_stale_variable_updates(b->worker) == 0,
       "neither counts a stale update");
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
    fl_task_client *b_before = client_of(b);
    fl_server_stop(a->ps);
    ok(noticed_loss(client_of(a)), "cluster a's connection sees its ps stop");
    ok(!fl_task_client_broken(client_of(b)), "cluster b's does not");
    ok(fl_cluster_reconnect(b->worker) == 0, "reconnecting b finds nothing lost");
    a->ps = fl_server_start(a->ps_spec, NULL);
    int made = a->ps ? fl_cluster_reconnect(a->worker) : -1;
    ok(made == 1, "reconnecting a connects again to its restarted ps (%d: %s)", made,
       made == 1 ? "ok" : fl_last_error());
    ok(client_of(b) == b_before && pull_float(client_of(b), "w") == 2,
       "b's connection is the one it had, and still serves");
}

/* Goodbye from a: a's ps may exit, b's still waits for its worker. */
static void test_goodbye_apart(cluster_pair *a, cluster_pair *b)
{
    ok(fl_cluster_say_goodbye(a->worker) == 0, "cluster a's worker says goodbye");
    ok(fl_server_join(a->ps, 10) == 0, "a's ps knows its worker has finished");
    ok(fl_server_join(b->ps, 0.2) == 1, "b's ps still waits for its worker");
    ok(!fl_task_client_broken(client_of(b)) && pull_float(client_of(b), "w") == 2,
       "b's connection still serves");
}

static void test_free_apart(cluster_pair *a, cluster_pair *b)
{
    fl_cluster_free(a->worker);
    a->worker = NULL;
    ok(pull_float(client_of(b), "w") == 2, "freeing cluster a leaves cluster b working");
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
        test_reconnect_apart(&a, &b);
        test_goodbye_apart(&a, &b);
        test_free_apart(&a, &b);
    }
    stop(&a);
    stop(&b);
    return done_testing();
}
