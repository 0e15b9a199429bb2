/* test_partition_server.c: two task servers in this process on loopback
 * (one ps, one worker) serve hand-built partitions of one graph: the ps
 * holds w and sends its value to the worker, which computes g = w * x and
 * sends g straight back to the ps, which adds it to w. Several steps check
 * the values and that g went task to task; a step waiting on a value is
 * aborted; a second client's partition shares the ps's w (the task's
 * variable container); a client that goes away frees what it registered; a malformed
 * partition is refused naming the node; the servers end on the client's
 * goodbye. A warm step's host blocks are counted (alloc_count.h). Every wait has a deadline and says what it waited for. */
#include "alloc_count.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/transport/frame_reader.h"
#include "distributed_runtime/partition/partition_def.h"
#include "distributed_runtime/partition/partition_client.h"
#include "distributed_runtime/ps/cluster_state.h"
#include "flowlab_cluster.h"
#include "loopback.h"
#include "partition_fixture.h"
#include "runtime.h"
#include "tap.h"

typedef struct {
    fl_cluster *cluster[2]; /* ps, worker */
    fl_server *server[2];
    int port[2];
    FILE *log;
    char log_path[64];
} tasks;

static fl_task_client *connect_client(const tasks *t, int which)
{
    fl_connect_options o = {.who = which ? "/job:worker/task:0" : "/job:ps/task:0", .host = "127.0.0.1",
                            .port = t->port[which], .deadline_s = 20, .log_prefix = "client"};
    return fl_task_client_open(&o, FL_WIRE_CLIENT_JOB, 0);
}

static bool start_tasks(tasks *t)
{
    int base = loopback_free_ports(2);
    char ps[64], worker[64];
    snprintf(ps, sizeof ps, "127.0.0.1:%d", base);
    snprintf(worker, sizeof worker, "127.0.0.1:%d", base + 1);
    snprintf(t->log_path, sizeof t->log_path, "/tmp/test_partition_server.%d.log", (int)getpid());
    t->log = fopen(t->log_path, "w+");
    const char *jobs[2] = {"ps", "worker"};
    for (int i = 0; i < 2; i++) {
        t->port[i] = base + i;
        t->cluster[i] = fl_cluster_from_flags(ps, worker, jobs[i], 0);
        fl_server_options o = {.log = t->log};
        t->server[i] = t->cluster[i] ? fl_server_start(t->cluster[i], &o) : NULL;
        if (!t->server[i])
            return false;
    }
    return true;
}

static bool log_says(const tasks *t, const char *what, double within_s)
{
    double start = fl_now_s();
    char line[512];
    while (fl_now_s() - start < within_s) {
        fflush(t->log);
        FILE *f = fopen(t->log_path, "r");
        bool found = false;
        while (f && !found && fgets(line, sizeof line, f))
            found = strstr(line, what) != NULL;
        if (f)
            fclose(f);
        if (found)
            return true;
        fl_sleep_s(0.05);
    }
    diag("waited %.0f s for the servers' log to say \"%s\"", within_s, what);
    return false;
}

/* ---- the tests ---- */

/* Another client's partition on the ps shares its variables (the task's
 * container, TensorFlow's ResourceMgr): without initialising w it reads the
 * value the first client's three steps left, [1, 1] times [2, 3] cubed. */
static void test_second_client_shares(const tasks *t)
{
    fl_graph_partition p;
    ps_partition(&p);
    remote_run other = {.client = connect_client(t, 0)};
    ok(other.client && fl_partition_register(other.client, &p, &other.handle) == 0,
       "a second client registers the ps's partition: %s", fl_last_error());
    fl_graph_partition_free(&p);
    ok(log_says(t, "; 1 variable live on this task)", 10), "the ps says w already lives there");
    other.run = (fl_partition_run){.step_id = 900, .fetch_names = ps_fetches, .nfetches = 1};
    run_remote(&other);
    ok(other.rc == 0, "it fetches w without initialising it: %s", other.error);
    const float *w = other.rc == 0 ? fl_tensor_floats(other.out[0]) : NULL;
    ok(w && w[0] == 8 && w[1] == 27, "and reads the first client's w = [%g, %g] (want [8, 27])", w ? w[0] : -1,
       w ? w[1] : -1);
    if (other.rc == 0)
        fl_tensor_free(other.out[0]);
    fl_task_client_close(other.client);
}

/* Both task servers run in this process, on its one host device: its
 * buffers allocated so far, and the ps's run signatures resolved. */
static void warm_counts(fl_server *ps_server, uint64_t *buffers, uint64_t *signatures)
{
    fl_server_stats stats;
    fl_server_get_stats(ps_server, &stats);
    *buffers = fl_host_device()->allocations;
    *signatures = stats.partition_signatures;
}

/* The host blocks a warm step allocates in this process: both tasks and
 * the client. Left (issue 36 item 1): on the client, the two values
 * fetched (2 each), which the caller owns; none on the tasks, whose
 * partitions keep their fetched values from step to step (a new host
 * tensor each, 2 a task, until session 22; and the worker's ReduceSum's
 * accumulators, 1).
 * Frames are parsed once, into arenas kept from step to step (wire_pb.c),
 * and built in the same way: the 12 blocks of RUN_PARTITION and
 * PARTITION_DONE parsed twice went (21 before; 9 measured). The
 * rendezvous, a run's job and the connections' queues reuse the last
 * step's memory. libevent's buffer chains are counted apart, and said. */
#define WARM_STEP_BLOCKS_LEFT (2 * 2)

/* Both warm steps are counted, and the fewer blocks must be within the
 * bound. CI's loaded machine counted 5, then 6 and 5: a socket writer made
 * a spare buffer whenever more frames waited at once than ever before,
 * which depends on when its thread got a core. The spares are now made
 * with the writer (socket_writer.c); a change that allocates every step
 * still fails. */
static void check_warm_blocks(unsigned long long first, unsigned long long second)
{
    unsigned long long fewer = first < second ? first : second;
    ok(fewer <= WARM_STEP_BLOCKS_LEFT, "a warm step allocates at most %d host blocks in the runtime, client "
       "and both tasks together: %llu and %llu in the two warm steps (and libevent's buffers %llu)",
       WARM_STEP_BLOCKS_LEFT, first, second, alloc_count_libraries());
}

/* Three steps; w starts at [1, 1] and x is [1, 2]: g = w x, w += g. */
static void test_steps(remote_run *ps, remote_run *worker, fl_cluster *worker_cluster, fl_server *ps_server,
                       uint64_t first_step)
{
    static float w[2] = {1, 1}; /* the ps's w, carried from one call to the next */
    float xv[2] = {1, 2};
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(1, 2), xv);
    const fl_tensor *feeds[1] = {x};
    uint64_t sent_before, received;
    fl_remote_task_traffic(worker_cluster, "/job:ps/task:0", &sent_before, &received);
    uint64_t buffers = 0, signatures = 0;
    unsigned long long warm_blocks[2] = {0, 0};
    for (int step = 0; step < 3; step++) {
        if (step == 1) /* after the first step: the rest are warm */
            warm_counts(ps_server, &buffers, &signatures);
        setup_runs(ps, worker, first_step + (uint64_t)step, feeds);
        pthread_t ps_thread;
        if (step >= 1)
            alloc_count_start();
        pthread_create(&ps_thread, NULL, run_remote, ps);
        run_remote(worker);
        pthread_join(ps_thread, NULL);
        if (step >= 1)
            warm_blocks[step - 1] = alloc_count_stop();
        if (step == 2)
            check_warm_blocks(warm_blocks[0], warm_blocks[1]);
        float want_sum = w[0] * xv[0] + w[1] * xv[1];
        ok(ps->rc == 0 && worker->rc == 0, "step %d runs on both tasks (ps: %s; worker: %s)", step, ps->error,
           worker->error);
        if (ps->rc || worker->rc)
            return fl_tensor_free(x);
        const float *read = fl_tensor_floats(ps->out[0]);
        ok(read[0] == w[0] && read[1] == w[1], "step %d: the ps fetched w = [%g, %g] (want [%g, %g])", step, read[0],
           read[1], w[0], w[1]);
        is_near(fl_tensor_scalar(worker->out[0]), want_sum, 1e-6, "the worker's sum of g = w x");
        for (int i = 0; i < 2; i++)
            w[i] += w[i] * xv[i];
        fl_tensor_free(ps->out[0]);
        fl_tensor_free(worker->out[0]);
    }
    uint64_t buffers_after, signatures_after;
    warm_counts(ps_server, &buffers_after, &signatures_after);
    ok(buffers_after == buffers && signatures_after == signatures, "two warm steps allocate no device buffer on "
       "either task (%llu more) and resolve no new run signature on the ps (%llu more)",
       (unsigned long long)(buffers_after - buffers), (unsigned long long)(signatures_after - signatures));
    uint64_t sent_after;
    fl_remote_task_traffic(worker_cluster, "/job:ps/task:0", &sent_after, &received);
    /* A SEND_TENSOR of g, float32 [2]: the 20-byte header; a body of the step (2 bytes at least), the key
     * (2 + its bytes) and the head (10: dtype, shape); a tail of 8 bytes. */
    ok(sent_after - sent_before >= 3 * (20 + 2 + 2 + strlen(G_KEY) + 10 + 8),
       "g went from the worker to the ps directly: %llu bytes on the worker's own connection",
       (unsigned long long)(sent_after - sent_before));
    fl_server_stats stats;
    fl_server_get_stats(ps_server, &stats);
    ok(stats.values_received >= 3 && stats.value_bytes_received >= 3 * 8,
       "the ps counts the values other tasks sent it: %llu, %llu bytes", (unsigned long long)stats.values_received,
       (unsigned long long)stats.value_bytes_received);
    fl_tensor_free(x);
}

/* The ps waits for g, which never comes: the client gives the step up. */
static void test_abort(remote_run *ps)
{
    const fl_tensor *none[1] = {NULL};
    remote_run unused;
    setup_runs(ps, &unused, 500, none);
    pthread_t thread;
    pthread_create(&thread, NULL, run_remote, ps);
    fl_sleep_s(0.3);
    ok(fl_partition_abort_step(ps->client, 500) == 0, "ABORT_STEP is answered while the run waits: %s",
       fl_last_error());
    pthread_join(thread, NULL);
    ok(ps->rc != 0 && ps->code == FL_ABORTED, "the waiting run ends ABORTED after %.1f s (deadline 20 s): %s",
       ps->seconds, ps->error);
    contains(ps->error, G_KEY, "the message names the value it waited for");
}

/* The ABORT_STEP right behind its RUN_PARTITION, as a client sends it when
 * another task of the step failed at once: queued back to back, they may
 * reach the server in one read, and the run must still learn of the abort
 * (it waited out the deadline when the server looked only at the first
 * frame behind a run, CI's test_sync_partitions 38). */
static void test_abort_behind_run(remote_run *ps)
{
    const fl_tensor *none[1] = {NULL};
    remote_run unused;
    setup_runs(ps, &unused, 501, none);
    fl_partition_call run = {.outputs = ps->out}, abort = {0};
    double start = fl_now_s();
    bool sent = fl_partition_run_start(ps->client, ps->handle, &ps->run, &run) == 0 &&
                fl_partition_abort_start(ps->client, 501, &abort) == 0;
    int rc = sent ? fl_partition_run_finish(ps->client, &run) : -1;
    fl_error_code code = fl_last_error_code();
    double took = fl_now_s() - start;
    char error[512];
    snprintf(error, sizeof error, "%s", fl_last_error());
    int answered = sent ? fl_partition_run_finish(ps->client, &abort) : -1; /* the abort's OK, after the run's */
    ok(sent && rc != 0 && code == FL_ABORTED && took < 5 && answered == 0, "a run and its ABORT_STEP sent back to "
       "back: the run ends ABORTED at once (%.1f s; deadline 20 s), then the abort is answered: %s", took, error);
}

static void test_refusals(remote_run *ps)
{
    fl_graph_partition bad;
    ps_partition(&bad);
    bad.task = 0;
    fl_node *send = fl_graph_find(bad.graph, W_SEND); /* a Send to no task */
    snprintf(send->attrs.peer_task, sizeof send->attrs.peer_task, "/cpu:0");
    uint64_t handle;
    ok(fl_partition_register(ps->client, &bad, &handle) != 0 && fl_last_error_code() == FL_INVALID_ARGUMENT,
       "a malformed partition is refused (INVALID_ARGUMENT)");
    contains(fl_last_error(), "node _send/w/read/to/worker/0: attr peer_task /cpu:0 is no task name",
             "naming the node and what is wrong");
    contains(fl_last_error(), "/job:ps/task:0", "and the task");
    fl_graph_partition_free(&bad);
    const char *nothing[] = {"no_such_node"};
    fl_partition_run run = {.step_id = 600, .target_names = nothing, .ntargets = 1};
    ok(fl_partition_run_remote(ps->client, ps->handle, &run, NULL, NULL) != 0 && fl_last_error_code() == FL_INVALID_ARGUMENT,
       "a run naming no node of the partition is refused: %s", fl_last_error());
    ok(fl_partition_run_remote(ps->client, ps->handle + 100, &run, NULL, NULL) != 0,
       "a handle never registered is refused: %s", fl_last_error());
}

static void test_deregister(remote_run *ps)
{
    fl_graph_partition p;
    uint64_t handle = 0;
    worker_partition(&p);
    ok(fl_partition_register(ps->client, &p, &handle) != 0 && fl_last_error_code() == FL_INVALID_ARGUMENT,
       "the worker's partition sent to the ps is refused: %s", fl_last_error());
    fl_graph_partition_free(&p);
    ps_partition(&p);
    ok(fl_partition_register(ps->client, &p, &handle) == 0 && handle != ps->handle,
       "the same partition registered twice gets a handle of its own");
    fl_graph_partition_free(&p);
    fl_tensor *before[1], *after[1];
    fl_partition_run read = {.step_id = 790, .fetch_names = ps_fetches, .nfetches = 1};
    int rc = fl_partition_run_remote(ps->client, ps->handle, &read, before, NULL);
    read.step_id = 791;
    rc |= fl_partition_run_remote(ps->client, handle, &read, after, NULL);
    ok(rc == 0 && memcmp(before[0]->data, after[0]->data, 2 * sizeof(float)) == 0,
       "and starts from the variables the first one trained (w = [%g, %g]): they live in the task: %s",
       rc ? 0 : fl_tensor_floats(after[0])[0], rc ? 0 : fl_tensor_floats(after[0])[1], rc ? fl_last_error() : "");
    if (rc == 0) {
        fl_tensor_free(before[0]);
        fl_tensor_free(after[0]);
    }
    ok(fl_partition_deregister(ps->client, handle) == 0, "DEREGISTER_PARTITION frees it");
    const char *init[] = {"w/Assign"};
    fl_partition_run run = {.step_id = 800, .target_names = init, .ntargets = 1};
    ok(fl_partition_run_remote(ps->client, handle, &run, NULL, NULL) != 0 && fl_last_error_code() == FL_INVALID_ARGUMENT,
       "a run of it is refused after: %s", fl_last_error());
    ok(fl_partition_deregister(ps->client, handle) != 0, "so is a second DEREGISTER_PARTITION");
}

/* A client that goes away mid-run, as a raw socket (a killed process):
 * HELLO, REGISTER_PARTITION, RUN_PARTITION, then the connection closes. */
static bool raw_request(int fd, fl_wire_buf *out, fl_wire_frame *reply, fl_wire_buf *in)
{
    fl_status why = {0};
    bool sent = write(fd, out->data, out->len) == (ssize_t)out->len;
    fl_wire_buf_consume(out, out->len);
    fl_wire_buf_consume(in, in->len);
    return sent && fl_read_frame(fd, in, reply, &why) == 1;
}

static void test_lost_client(const tasks *t)
{
    int fd = loopback_connect(t->port[1], 20);
    fl_wire_buf out = {0}, in = {0}, graph = {0};
    fl_wire_frame f;
    uint64_t handle = 0;
    fl_status why = {0};
    fl_graph_partition p;
    worker_partition(&p);
    fl_partition_def_encode(&p, &graph);
    fl_graph_partition_free(&p);
    fl_wire_put_hello(&out, 1, FL_WIRE_CLIENT_JOB, 0);
    bool hello = fd >= 0 && raw_request(fd, &out, &f, &in) && f.type == FL_WIRE_HELLO_OK;
    fl_wire_put_register_partition(&out, 2, graph.data, graph.len);
    ok(hello && raw_request(fd, &out, &f, &in) && fl_wire_parse_number(&f, &handle, &why) == 0,
       "a client on a raw socket registers a partition on the worker (handle %llu)", (unsigned long long)handle);
    float xv[2] = {1, 1};
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(1, 2), xv);
    const char *feeds[] = {"x"}, *fetches[] = {"g_sum"};
    const fl_tensor *values[] = {x};
    const char *targets[] = {G_SEND};
    fl_wire_name_list lists[2] = {{1, fetches}, {1, targets}};
    fl_wire_put_run_partition(&out, 3, handle, 700, 0, 1, feeds, values, lists);
    ok(write(fd, out.data, out.len) == (ssize_t)out.len, "and starts a step, whose w no ps will send");
    fl_sleep_s(0.3);
    close(fd); /* killed mid-run */
    ok(log_says(t, "dropping the 1 partition", 10), "the worker drops what the lost client registered");
    fl_tensor_free(x);
    fl_wire_buf_free(&out);
    fl_wire_buf_free(&in);
    fl_wire_buf_free(&graph);
}

static void register_pair(tasks *t, remote_run *ps, remote_run *worker)
{
    fl_graph_partition p, q;
    ps_partition(&p);
    worker_partition(&q);
    ps->client = connect_client(t, 0);
    worker->client = connect_client(t, 1);
    ok(ps->client && fl_partition_register(ps->client, &p, &ps->handle) == 0, "the ps partition registers: %s",
       fl_last_error());
    ok(worker->client && fl_partition_register(worker->client, &q, &worker->handle) == 0,
       "the worker partition registers: %s", fl_last_error());
    fl_graph_partition_free(&p);
    fl_graph_partition_free(&q);
}

static void say_goodbye(tasks *t, remote_run *ps, remote_run *worker)
{
    ok(fl_task_client_goodbye(ps->client) == 0 && fl_task_client_goodbye(worker->client) == 0,
       "the client says goodbye to both tasks");
    ok(fl_server_join(t->server[0], 10) == 0 && fl_server_join(t->server[1], 10) == 0,
       "both servers are done once their client said goodbye (waited up to 10 s each)");
    fl_task_client_close(ps->client);
    fl_task_client_close(worker->client);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "20", 1);
    tasks t = {0};
    if (!start_tasks(&t)) {
        diag("%s", fl_last_error());
        skip_all("cannot start two task servers on loopback");
    }
    remote_run ps = {0}, worker = {0};
    register_pair(&t, &ps, &worker);
    initialize(&ps);
    test_steps(&ps, &worker, t.cluster[1], t.server[0], 10);
    test_second_client_shares(&t);
    test_abort(&ps);
    test_abort_behind_run(&ps);
    test_refusals(&ps);
    test_deregister(&ps);
    test_lost_client(&t);
    /* A new client after the lost one: registers again and trains. */
    fl_task_client_close(worker.client);
    fl_graph_partition q;
    worker_partition(&q);
    worker.client = connect_client(&t, 1);
    ok(worker.client && fl_partition_register(worker.client, &q, &worker.handle) == 0,
       "a new client registers on the worker after the lost one: %s", fl_last_error());
    fl_graph_partition_free(&q);
    test_steps(&ps, &worker, t.cluster[1], t.server[0], 20);
    say_goodbye(&t, &ps, &worker);
    for (int i = 0; i < 2; i++) {
        fl_server_stop(t.server[i]);
        fl_cluster_free(t.cluster[i]);
    }
    fclose(t.log);
    remove(t.log_path);
    return done_testing();
}
