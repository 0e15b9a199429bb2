/* test_waiting_values.c: a live task server with a cluster secret bounds
 * the values sent to it (SEND_TENSOR) for a step that never runs there, per
 * connection (--max_waiting_value_bytes) and in all
 * (--max_waiting_value_bytes_total), and frees a connection's values when it
 * closes (server_partitions.c, rendezvous.c). Two workers that hold the
 * secret send 4 KB values for step 1000: one past its cap is refused
 * RESOURCE_EXHAUSTED naming the flag while the other's values are still
 * taken; closing the first frees its values, and room is made. And a
 * connection that closes while a step it sent a value for runs here does
 * not take that value from the run: a partition waits for b, then a; a
 * is sent and its connection closed (its value for a step not running goes
 * at once; the server logs the sender as disconnected, not as finished),
 * then b comes on another, and the run ends with a + b. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "distributed_runtime/partition/cluster_security.h"
#include "distributed_runtime/partition/graph_partition.h"
#include "distributed_runtime/partition/partition_client.h"
#include "distributed_runtime/partition/rendezvous.h"
#include "flowlab_cluster.h"
#include "loopback.h"
#include "runtime.h"
#include "tap.h"

#define FLOATS 1024
#define CHARGE (FLOATS * 4 + FL_RENDEZVOUS_VALUE_OVERHEAD) /* what one value is charged */
#define PER_CONNECTION 16                                  /* values one connection may leave waiting */
#define IN_ALL 24                                          /* ... all connections */
#define NEVER_RUNS 1000                                    /* a step no run here takes */

static const char SECRET[] = "fedcba9876543210fedcba9876543210\n";
static char dir[64], secret_file[96], log_path[96];
static const char *A_KEY = "a:/job:worker/task:1->/job:worker/task:0", *B_KEY = "b:/job:worker/task:1->/job:worker/task:0";

static void write_secret(void)
{
    snprintf(dir, sizeof dir, "/tmp/flowlab_waiting_XXXXXX");
    if (!mkdtemp(dir))
        diag("cannot make a temporary directory");
    snprintf(secret_file, sizeof secret_file, "%s/secret", dir);
    snprintf(log_path, sizeof log_path, "%s/server.log", dir);
    int fd = open(secret_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, SECRET, strlen(SECRET)) != (ssize_t)strlen(SECRET))
        diag("cannot write %s", secret_file);
    close(fd);
}

/* worker `task`'s connection to the task server, with the secret. */
static fl_task_client *open_worker(int port, fl_cluster *mine, int task)
{
    fl_connect_options o = {.who = "/job:worker/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 20,
                            .job = "worker", .task = 0};
    o.secret = fl_cluster_secret(mine, &o.secret_len);
    return fl_task_client_open(&o, "worker", task);
}

/* Sends values "k<first>".. for the step that never runs until one is
 * refused or `count` are sent: how many were taken (the refusal's words in why). */
static int send_values(fl_task_client *c, int first, int count, char *why, size_t len)
{
    fl_tensor *value = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, FLOATS));
    int taken = 0;
    why[0] = '\0';
    for (int i = first; c && i < first + count; i++, taken++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        uint32_t id = fl_partition_send_tensor(c, NEVER_RUNS, key, value);
        if (id == 0 || fl_task_client_wait(c, id) != 0) {
            snprintf(why, len, "%s (code %d)", fl_last_error(), (int)fl_last_error_code());
            break;
        }
    }
    fl_tensor_free(value);
    return taken;
}

/* The bytes the server holds for waiting values, once they are `want`, or after 10 s. */
static uint64_t waiting_bytes(fl_server *server, uint64_t want)
{
    fl_server_stats st = {0};
    for (double end = fl_now_s() + 10; fl_now_s() < end; poll(NULL, 0, 20)) {
        fl_server_get_stats(server, &st);
        if (st.waiting_value_bytes == want)
            break;
    }
    return st.waiting_value_bytes;
}

/* worker 0's partition: sum = a + b, both received from worker 0's peers. */
static void sum_partition(fl_graph_partition *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "worker");
    p->graph = fl_graph_new();
    fl_node *b = fl_recv(p->graph, FL_FLOAT32, fl_shape_make(1, 2), B_KEY, "/job:worker/task:0", "recv/b");
    fl_node *a = fl_recv(p->graph, FL_FLOAT32, fl_shape_make(1, 2), A_KEY, "/job:worker/task:0", "recv/a");
    fl_add(p->graph, a, b, "sum");
}

typedef struct {
    fl_task_client *client;
    uint64_t handle;
    fl_tensor *sum;
    int rc;
    char error[FL_ERROR_LEN];
} sum_run;

static void *run_sum(void *arg)
{
    sum_run *r = arg;
    const char *fetches[] = {"sum"};
    fl_partition_run run = {.step_id = 77, .fetch_names = fetches, .nfetches = 1};
    r->rc = fl_partition_run_remote(r->client, r->handle, &run, &r->sum, NULL);
    snprintf(r->error, sizeof r->error, "%s", r->rc ? fl_last_error() : "");
    return NULL;
}

/* A value [x, 2x] for `key` in `step` on c: true when it was taken. */
static bool send_pair(fl_task_client *c, uint64_t step, const char *key, float x)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 2));
    fl_tensor_floats(t)[0] = x;
    fl_tensor_floats(t)[1] = 2 * x;
    uint32_t id = c ? fl_partition_send_tensor(c, step, key, t) : 0;
    bool taken = id != 0 && fl_task_client_wait(c, id) == 0;
    fl_tensor_free(t);
    return taken;
}

/* Waits up to `seconds` for the server's log to hold text. */
static bool log_says(const char *text, double seconds)
{
    for (double end = fl_now_s() + seconds; fl_now_s() < end; poll(NULL, 0, 50)) {
        char have[8192] = "";
        FILE *f = fopen(log_path, "r");
        if (f) {
            have[fread(have, 1, sizeof have - 1, f)] = '\0';
            fclose(f);
        }
        if (strstr(have, text))
            return true;
    }
    return false;
}

static void test_running_step_keeps(fl_server *server, int port, fl_cluster *mine)
{
    fl_graph_partition p;
    sum_partition(&p);
    sum_run r = {.client = open_worker(port, mine, 0)};
    fl_task_client *a = open_worker(port, mine, 1);
    bool registered = r.client && fl_partition_register(r.client, &p, &r.handle) == 0;
    ok(registered, "a client registers a partition that waits for b, then a (%s)", registered ? "" : fl_last_error());
    fl_graph_partition_free(&p);
    ok(send_pair(a, 77, A_KEY, 1) && send_pair(a, 78, "z", 5), "a peer sends a for step 77 and z for step 78");
    pthread_t thread;
    bool started = registered && pthread_create(&thread, NULL, run_sum, &r) == 0;
    ok(started && log_says("step 77 waiting for b:", 20), "step 77 runs, waiting for b (waited up to 20 s for the "
       "server's line)");
    if (a)
        fl_task_client_close(a);
    uint64_t held = waiting_bytes(server, 0); /* step 77's Recv of a took it before the line about b */
    ok(held == 0, "the peer closes: its z (step 78 does not run) goes, its a is step 77's Recv's already: %llu "
       "bytes held (waited up to 10 s)", (unsigned long long)held);
    ok(log_says("the task that sent values here disconnected: it exited, or was lost", 10),
       "the server logs the sender as disconnected (exited or lost), not as finished (waited up to 10 s)");
    fl_task_client *b = open_worker(port, mine, 1);
    ok(send_pair(b, 77, B_KEY, 10), "another connection sends b");
    if (started)
        pthread_join(thread, NULL);
    const float *sum = r.sum ? fl_tensor_floats(r.sum) : NULL;
    ok(r.rc == 0 && sum && sum[0] == 11 && sum[1] == 22, "the run took a after its sender had gone: a + b = [%g, %g] "
       "(want [11, 22]) %s", sum ? (double)sum[0] : 0, sum ? (double)sum[1] : 0, r.error);
    fl_tensor_free(r.sum);
    if (b)
        fl_task_client_close(b);
    if (r.client)
        fl_task_client_close(r.client);
}

static void attack(fl_server *server, int port, fl_cluster *mine)
{
    char why[FL_ERROR_LEN];
    fl_task_client *a = open_worker(port, mine, 0), *b = open_worker(port, mine, 1);
    ok(a && b, "two workers with the secret connect (%s)", a && b ? "" : fl_last_error());
    int sent = send_values(a, 0, PER_CONNECTION + 1, why, sizeof why);
    ok(sent == PER_CONNECTION, "the first connection leaves %d values of 4 KB waiting (want %d)", sent,
       PER_CONNECTION);
    ok(fl_last_error_code() == FL_RESOURCE_EXHAUSTED, "its next is refused RESOURCE_EXHAUSTED: %s", why);
    contains(why, "--max_waiting_value_bytes (", "the refusal names the per-connection flag");
    sent = send_values(b, 0, IN_ALL - PER_CONNECTION, why, sizeof why);
    ok(sent == IN_ALL - PER_CONNECTION, "the other connection's values are still taken (%d of %d): %s", sent,
       IN_ALL - PER_CONNECTION, why);
    sent = send_values(b, 100, 1, why, sizeof why);
    ok(sent == 0 && strstr(why, "--max_waiting_value_bytes_total"),
       "past %d values in all, the server refuses, naming --max_waiting_value_bytes_total: %s", IN_ALL, why);
    uint64_t held = waiting_bytes(server, (uint64_t)IN_ALL * CHARGE);
    ok(held == (uint64_t)IN_ALL * CHARGE, "the server holds %llu bytes for them (want %d)",
       (unsigned long long)held, IN_ALL * CHARGE);
    if (a)
        fl_task_client_close(a);
    uint64_t want = (uint64_t)(IN_ALL - PER_CONNECTION) * CHARGE;
    held = waiting_bytes(server, want);
    ok(held == want, "closing the first connection frees its values: %llu bytes held (want %llu; waited up to 10 s)",
       (unsigned long long)held, (unsigned long long)want);
    sent = send_values(b, 200, 1, why, sizeof why);
    ok(sent == 1, "and the other connection may send again (%s)", why);
    if (b)
        fl_task_client_close(b);
    ok(waiting_bytes(server, 0) == 0, "closing the second frees the rest");
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "30", 1); /* the run waits for b this long; a value waits as long */
    write_secret();
    char ps_hosts[64], worker_hosts[128];
    int port = loopback_free_port();
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", loopback_free_port());
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d,127.0.0.1:%d", port, loopback_free_port());
    fl_cluster *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    fl_cluster *mine = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 1);
    ok(spec && mine && fl_cluster_set_secret_file(spec, secret_file) == 0 &&
           fl_cluster_set_secret_file(mine, secret_file) == 0,
       "the cluster has a secret (%s)", spec && mine ? secret_file : fl_last_error());
    FILE *log = fopen(log_path, "w");
    fl_server_options options = {.log = log, .max_waiting_value_bytes = PER_CONNECTION * CHARGE,
                                 .max_waiting_value_bytes_total = IN_ALL * CHARGE};
    fl_server *server = spec ? fl_server_start(spec, &options) : NULL;
    ok(server != NULL, "worker 0's task server starts (%s)", server ? "" : fl_last_error());
    if (server && mine) {
        attack(server, port, mine);
        test_running_step_keeps(server, port, mine);
    }
    fl_server_stop(server);
    fl_cluster_free(spec);
    fl_cluster_free(mine);
    fclose(log);
    unlink(secret_file);
    unlink(log_path);
    rmdir(dir);
    return done_testing();
}
