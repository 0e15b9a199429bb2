/* test_run_cancel.c: a partition's run stops when its client hangs up
 * (server_partitions.c marks it cancelled, the session asks before each op:
 * fl_run_options.should_stop). A client registers one partition of 16,000 MatMuls
 * of 256 x 256 on a worker's task server in this process, starts a step and
 * hangs up; the run must end (its step counted) within 5 s, and well before
 * the whole run would have (estimated from 200 ops), not compute on.
 * Also, a run stopped through should_stop on a plain session ends ABORTED,
 * and a client that sends 32 MiB behind its run in flight gets no more than
 * --max_bytes_behind_run (1 MiB here) and the kernel's buffers read; a
 * third partition past --max_partitions 2 is refused, naming the flag. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "distributed_runtime/transport/frame_reader.h"
#include "distributed_runtime/partition/partition_def.h"
#include "distributed_runtime/partition/partition_client.h"
#include "distributed_runtime/transport/socket_writer.h"
#include "flowlab_cluster.h"
#include "loopback.h"
#include "runtime.h"
#include "tap.h"

#define MATMULS 16000
#define SIDE 256

/* y = x; y = y x, MATMULS times: seconds of work, in one run. */
static fl_graph *busy_graph(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, SIDE, SIDE), "x");
    fl_node *y = x;
    for (int i = 0; i < MATMULS; i++) {
        char name[32];
        snprintf(name, sizeof name, "m%d", i);
        y = fl_matmul(g, y, x, false, false, name);
    }
    fl_identity(g, y, "last");
    return g;
}

static int stops_after = 200, asked;
static double whole_run_s; /* a run of every op, estimated */

static bool stop_after_some(void *user)
{
    (void)user;
    return ++asked > stops_after;
}

static void test_should_stop(void)
{
    fl_graph *g = busy_graph();
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *x = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, SIDE, SIDE));
    fl_feed feed = {fl_graph_find(g, "x"), x};
    fl_node *last = fl_graph_find(g, "last");
    fl_tensor *out = NULL;
    fl_run_options o = {.should_stop = stop_after_some};
    double start = fl_now_s();
    int rc = fl_session_run_with_options(s, &o, &feed, 1, &last, 1, &out, NULL, 0);
    double took = fl_now_s() - start;
    whole_run_s = took * MATMULS / stops_after;
    ok(rc != 0 && fl_session_error_code(s) == FL_ABORTED && !out,
       "should_stop ends a run ABORTED (%.2f s; all %d ops would take about %.0f s): %s", took, MATMULS,
       whole_run_s, fl_session_error(s));
    ok(fl_session_ops_run(s) <= stops_after + 1, "after the ops run before it said so (%d)", fl_session_ops_run(s));
    fl_tensor_free(x);
    fl_session_free(s);
    fl_graph_free(g);
}

/* One request on the raw socket and its reply. */
static bool request(int fd, fl_wire_buf *out, fl_wire_buf *in, fl_wire_frame *reply)
{
    fl_status why = {0};
    bool sent = fl_socket_write_all(fd, out->data, out->len) == 0;
    fl_wire_buf_consume(out, out->len);
    return sent && fl_read_frame(fd, in, reply, &why) == 1;
}

/* Sends 1 MiB SEND_TENSOR frames without blocking for up to 2 s, or
 * until 32 MiB are out: the bytes the server let in. */
static size_t send_behind_run(int fd)
{
    fl_tensor *big = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 1 << 18));
    fl_wire_buf frame = {0};
    fl_wire_put_send_tensor(&frame, 9, 1, "behind", big);
    size_t sent = 0, at = 0;
    for (double end = fl_now_s() + 2; sent < (32u << 20) && fl_now_s() < end;) {
        ssize_t n = send(fd, frame.data + at, frame.len - at, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            break;
        if (n <= 0) {
            poll(NULL, 0, 10);
            continue;
        }
        sent += (size_t)n;
        at = (at + (size_t)n) % frame.len;
    }
    fl_wire_buf_free(&frame);
    fl_tensor_free(big);
    return sent;
}

/* REGISTER_PARTITION of a one-node graph: true when it was registered; the ERROR's words in why. */
static bool register_tiny(int fd, fl_wire_buf *out, fl_wire_buf *in, fl_status *why)
{
    fl_graph_partition p = {.task = 0};
    snprintf(p.job, sizeof p.job, "worker");
    p.graph = fl_graph_new();
    fl_placeholder(p.graph, FL_FLOAT32, fl_shape_make(1, 2), "x");
    fl_wire_buf graph = {0};
    fl_partition_def_encode(&p, &graph);
    fl_graph_partition_free(&p);
    fl_wire_put_register_partition(out, 2, graph.data, graph.len);
    fl_wire_buf_free(&graph);
    fl_wire_frame f;
    fl_wire_message *m = fl_xmalloc(sizeof *m);
    bool answered = request(fd, out, in, &f) && fl_wire_parse(&f, m, why) == 0;
    bool registered = answered && m->type == FL_WIRE_PARTITION_REGISTERED;
    if (answered && m->type == FL_WIRE_ERROR)
        fl_status_set(why, fl_wire_error_meaning(m->u.error.code), "%s", m->u.error.message);
    free(m);
    return registered;
}

static void test_partitions_per_connection(int port)
{
    fl_wire_buf out = {0}, in = {0};
    fl_wire_frame f;
    fl_status why = {0};
    int fd = loopback_connect(port, 20);
    fl_wire_put_hello(&out, 1, FL_WIRE_CLIENT_JOB, 0);
    bool hello = fd >= 0 && request(fd, &out, &in, &f) && f.type == FL_WIRE_HELLO_OK;
    bool two = hello && register_tiny(fd, &out, &in, &why) && register_tiny(fd, &out, &in, &why);
    ok(two, "a client registers two partitions");
    ok(two && !register_tiny(fd, &out, &in, &why), "a third is refused (--max_partitions 2)");
    contains(why.message, "--max_partitions", "the error names the flag");
    if (fd >= 0)
        close(fd);
    fl_wire_buf_free(&out);
    fl_wire_buf_free(&in);
}

static void start_busy_run_and_hang_up(int port)
{
    fl_graph_partition p = {.task = 0};
    snprintf(p.job, sizeof p.job, "worker");
    p.graph = busy_graph();
    fl_wire_buf graph = {0}, out = {0}, in = {0};
    fl_partition_def_encode(&p, &graph);
    fl_graph_partition_free(&p);
    int fd = loopback_connect(port, 20);
    fl_wire_frame f;
    uint64_t handle = 0;
    fl_status why = {0};
    fl_wire_put_hello(&out, 1, FL_WIRE_CLIENT_JOB, 0);
    bool hello = fd >= 0 && request(fd, &out, &in, &f) && f.type == FL_WIRE_HELLO_OK;
    fl_wire_put_register_partition(&out, 2, graph.data, graph.len);
    bool registered = hello && request(fd, &out, &in, &f) && fl_wire_parse_number(&f, &handle, &why) == 0;
    ok(registered, "a client registers %d MatMuls of %d x %d (handle %llu)", MATMULS, SIDE, SIDE,
       (unsigned long long)handle);
    fl_tensor *x = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, SIDE, SIDE));
    const char *feeds[] = {"x"}, *fetches[] = {"last"};
    const fl_tensor *values[] = {x};
    fl_wire_name_list lists[4] = {{1, fetches}, {0, NULL}, {0, NULL}, {0, NULL}};
    fl_wire_put_run_partition(&out, 3, handle, 7, 0, 1, feeds, values, lists);
    ok(fd >= 0 && fl_socket_write_all(fd, out.data, out.len) == 0, "starts a step");
    size_t behind = fd >= 0 ? send_behind_run(fd) : 0;
    ok(behind < (16u << 20), "of 32 MiB sent behind the run, the server let %.1f MiB in (--max_bytes_behind_run 1 MiB)",
       behind / 1048576.0);
    if (fd >= 0) /* hangs up */
        close(fd);
    fl_tensor_free(x);
    fl_wire_buf_free(&graph);
    fl_wire_buf_free(&out);
    fl_wire_buf_free(&in);
}

static void test_client_hangs_up(void)
{
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    int port = atoi(strchr(worker_hosts, ':') + 1);
    setenv("FLOWLAB_TASK_DEADLINE", "20", 1);
    fl_cluster *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    FILE *log = tmpfile();
    fl_server_options options = {.log = log, .max_bytes_behind_run = 1 << 20, .max_partitions = 2};
    fl_server *worker = fl_server_start(spec, &options);
    ok(worker != NULL, "a worker's task server starts (%s)", worker ? "" : fl_last_error());
    if (!worker)
        return;
    test_partitions_per_connection(port);
    double start = fl_now_s();
    start_busy_run_and_hang_up(port);
    fl_server_stats st = {0};
    while (st.partition_steps == 0 && fl_now_s() - start < 60) {
        poll(NULL, 0, 20);
        fl_server_get_stats(worker, &st);
    }
    double took = fl_now_s() - start;
    ok(st.partition_steps == 1 && took < 8 && took < whole_run_s / 3,
       "the run ended %.2f s after its client hung up (want < 8 s, and well under the %.0f s of the whole run)", took,
       whole_run_s);
    fl_server_stop(worker);
    fl_cluster_free(spec);
    fclose(log);
}

int main(void)
{
    test_should_stop();
    test_client_hangs_up();
    return done_testing();
}
