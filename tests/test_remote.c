/* test_remote.c: a worker's session with its variables on a ps task (the
 * worker cuts its graph by task: its master registers the ps's piece)
 * against a real ps server on a loopback port: the same losses as the same
 * graph kept local, the values on the ps, Adam's slots there, any op placed
 * on the ps run there, the ps done once the worker says goodbye, the
 * worker's own piece served on its own address, a traced step's updates
 * timed on the ps, and a lost ps named. The ps runs in this process, on its
 * own thread. */
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "distributed_runtime/transport/frame_reader.h"
#include "distributed_runtime/transport/socket_writer.h"
#include "loopback.h"

typedef struct {
    fl_graph *g;
    fl_node *x, *y, *loss, *train, *init, *w, *step;
    fl_optimizer *adam;
} model;

/* Variables (slots included) on the ps, the rest left to outer scopes: the
 * replica device setter's rule, written out. */
static const char *variables_on_ps(const fl_node *n, void *device)
{
    return strcmp(fl_node_op_type(n), "VariableV2") == 0 ? device : NULL;
}

/* y = x w + b fitted by Adam; variables on var_device (NULL: no device). */
static model build(const char *var_device, const char *op_device)
{
    model m = {.g = fl_graph_new()};
    if (op_device)
        fl_device_scope_push(m.g, op_device);
    if (var_device)
        fl_device_function_push(m.g, variables_on_ps, (void *)var_device);
    m.x = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, 4, 2), "x");
    m.y = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, 4, 1), "y");
    m.w = fl_get_variable(m.g, "w", fl_shape_make(2, 2, 1), fl_constant_initializer(0.5f));
    fl_node *b = fl_get_variable(m.g, "b", fl_shape_make(1, 1), fl_zeros_initializer());
    m.step = fl_get_or_create_global_step(m.g);
    fl_node *pred = fl_add(m.g, fl_matmul(m.g, m.x, m.w, false, false, NULL), b, NULL);
    fl_node *err = fl_sub(m.g, pred, m.y, NULL);
    m.loss = fl_reduce_mean(m.g, fl_mul(m.g, err, err, NULL), NULL, 0, false, "loss");
    m.adam = fl_adam_optimizer(0.1f, 0.9f, 0.999f, 1e-8f);
    m.train = fl_minimize(m.adam, m.g, m.loss, m.step, NULL);
    m.init = fl_global_variables_initializer(m.g);
    return m;
}

/* Losses of n steps on fixed data; -1 on error (diag says why). */
static int train(model *m, const fl_cluster *cluster, int n, double *losses, fl_session **out)
{
    const float xs[8] = {1, 2, 3, 1, 0, 1, 2, 2}, ys[4] = {5, 5, 2, 6};
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(2, 4, 2), xs);
    fl_tensor *y = fl_tensor_from_floats(fl_shape_make(2, 4, 1), ys);
    fl_session_options opt = {.cluster = cluster};
    fl_session *s = fl_session_new(m->g, &opt);
    int rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &m->init, 1);
    fl_feed feeds[2] = {{m->x, x}, {m->y, y}};
    for (int i = 0; i < n && rc == 0; i++) {
        fl_tensor *loss = NULL;
        fl_session_set_tracing(s, i == n - 1); /* the last step is traced (traced_requests) */
        rc = fl_session_run(s, feeds, 2, &m->loss, 1, &loss, &m->train, 1);
        losses[i] = rc == 0 ? fl_tensor_scalar(loss) : -1;
        fl_tensor_free(loss);
    }
    if (rc != 0)
        diag("training failed: %s", fl_session_error(s));
    fl_tensor_free(x);
    fl_tensor_free(y);
    *out = s;
    return rc;
}

/* The worker's device reads the global step the ps sent; an AssignAdd on
 * the ps ordered after that read must not overwrite the value before the
 * device has taken it in, however late its queue runs. */
static void read_before_increment(model *m, fl_session *s)
{
    fl_device_info devices[2];
    const char *device = fl_list_devices(devices, 2) > 1 ? "/job:worker/task:0/gpu:0" : "/job:worker/task:0/cpu:0";
    fl_device_scope_push(m->g, device);
    fl_node *seen = fl_cast(m->g, m->step, FL_FLOAT32, "seen");
    fl_device_pop(m->g);
    const int32_t one_value = 1;
    fl_tensor *one = fl_tensor_from_ints(fl_shape_make(0), &one_value);
    fl_node *delta = fl_constant(m->g, one, NULL);
    fl_tensor_free(one);
    fl_control_dependencies_push(m->g, &seen, 1);
    fl_device_scope_push(m->g, "/job:ps/task:0/cpu:0");
    fl_node *bump = fl_assign_add(m->g, m->step, delta, "bump");
    fl_device_pop(m->g);
    fl_control_dependencies_pop(m->g);
    fl_tensor *before = NULL;
    fl_session_run(s, NULL, 0, &m->step, 1, &before, NULL, 0);
    int first = before ? fl_tensor_ints(before)[0] : -1, in_order = 0;
    enum { ROUNDS = 200 };
    for (int k = 0; k < ROUNDS; k++) {
        fl_tensor *t = NULL;
        int rc = fl_session_run(s, NULL, 0, &seen, 1, &t, &bump, 1);
        if (rc != 0 && k == 0)
            diag("%s", fl_session_error(s));
        if (rc == 0 && fl_tensor_floats(t)[0] == (float)(first + k))
            in_order++;
        fl_tensor_free(t);
    }
    ok(first >= 0 && in_order == ROUNDS, "on %s, %d of %d reads of the step saw it before their own increment",
       device, in_order, ROUNDS);
    fl_tensor_free(before);
}

/* The traced last step of train(): the ps's own ops, timed on the ps and
 * merged into the worker's trace (task_trace.c, master_trace.c): its lane
 * is there, with both ApplyAdam updates. */
static void traced_requests(const fl_session *s)
{
    char path[] = "/tmp/test_remote_trace.XXXXXX";
    int fd = mkstemp(path);
    bool written = fd >= 0 && fl_session_write_trace(s, path) == 0;
    char text[1 << 16] = "";
    FILE *f = written ? fopen(path, "r") : NULL;
    size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[got] = 0;
    int applies = 0;
    for (const char *p = text; (p = strstr(p, "ApplyAdam")); p++)
        applies++;
    ok(written && strstr(text, "/job:ps/task:0/cpu:0") && applies >= 2,
       "a traced step has the ps's lane, with its ApplyAdam updates (%d mentions)", applies);
    if (f)
        fclose(f);
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
}

static void test_worker_against_ps(void)
{
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    fl_cluster *ps_spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    fl_cluster *worker_spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    fl_server *ps = fl_server_start(ps_spec, NULL);
    ok(ps != NULL, "a ps server starts on %s (%s)", ps_hosts, ps ? "ok" : fl_last_error());
    if (!ps)
        return;

    enum { STEPS = 20 };
    double local[STEPS], remote[STEPS];
    model here = build(NULL, NULL), there = build("/job:ps/task:0/cpu:0", "/job:worker/task:0/cpu:0");
    fl_session *s_here, *s_there;
    train(&here, NULL, STEPS, local, &s_here);
    int rc = train(&there, worker_spec, STEPS, remote, &s_there);
    ok(rc == 0, "a worker trains with its variables on /job:ps/task:0");
    traced_requests(s_there);
    bool same = true;
    for (int i = 0; i < STEPS; i++)
        same = same && fabs(local[i] - remote[i]) <= 1e-6 * fmax(1, fabs(local[i]));
    ok(same && remote[STEPS - 1] < remote[0], "the same losses as the graph kept local, falling (%.4f -> %.4f)",
       remote[0], remote[STEPS - 1]);
    is_string(fl_session_node_device(s_there, there.w), "/job:ps/task:0/cpu:0", "w ran on the ps");

    fl_server_stats st;
    fl_server_get_stats(ps, &st);
    ok(st.variables == 9, "the ps holds w, b, the step, Adam's two slots each and two beta powers (%d)",
       st.variables);
    fl_tensor *w_here = NULL, *w_there = NULL, *step = NULL;
    fl_session_run(s_here, NULL, 0, &here.w, 1, &w_here, NULL, 0);
    fl_session_run(s_there, NULL, 0, &there.w, 1, &w_there, NULL, 0);
    fl_session_run(s_there, NULL, 0, &there.step, 1, &step, NULL, 0);
    ok(w_here && w_there && fabs(fl_tensor_floats(w_here)[1] - fl_tensor_floats(w_there)[1]) < 1e-6,
       "a pulled weight equals the local one");
    ok(step && fl_tensor_ints(step)[0] == STEPS, "the global step on the ps counted %d updates", STEPS);
    uint64_t sent, received;
    fl_remote_traffic(worker_spec, &sent, &received);
    ok(sent > 0 && received > 0, "traffic is counted: %llu bytes sent, %llu received", (unsigned long long)sent,
       (unsigned long long)received);
    /* The ps's values reach the worker's server on connections the ps made:
     * they count as received from the ps (chapter 3's --cluster_graph). */
    uint64_t to_ps, from_ps, to_self, from_self;
    int talked = fl_remote_task_traffic(worker_spec, "/job:ps/task:0", &to_ps, &from_ps);
    fl_remote_task_traffic(worker_spec, "/job:worker/task:0", &to_self, &from_self);
    ok(talked > 0 && to_ps > 0 && from_ps + from_self <= received && from_ps + from_self + 1024 >= received,
       "per task: %llu bytes from the ps and %llu from this worker's own master make the %llu received, but for "
       "the handshakes", (unsigned long long)from_ps, (unsigned long long)from_self, (unsigned long long)received);

    /* Any op may run on the ps, as in TensorFlow: it goes into the ps's piece. */
    fl_node *two = fl_scalar(there.g, 2, NULL);
    fl_device_scope_push(there.g, "/job:ps/task:0/cpu:0");
    fl_node *twice = fl_mul(there.g, there.w, two, "twice");
    fl_device_pop(there.g);
    fl_tensor *t = NULL;
    int ran = fl_session_run(s_there, NULL, 0, &twice, 1, &t, NULL, 0);
    ok(ran == 0 && t && w_there && fabs(fl_tensor_floats(t)[1] - 2 * fl_tensor_floats(w_there)[1]) < 1e-6,
       "a Mul placed on the ps runs there: 2 w (%s)", ran == 0 ? "ok" : fl_session_error(s_there));
    const char *where = fl_session_node_device(s_there, twice);
    is_string(where ? where : "(none)", "/job:ps/task:0/cpu:0", "on the ps");
    fl_tensor_free(t);

    read_before_increment(&there, s_there);
    int worker_port = atoi(strchr(worker_hosts, ':') + 1), fd = loopback_bind(&worker_port, 1);
    ok(fd < 0, "the worker's session serves its own piece on its own address, %s", worker_hosts);
    if (fd >= 0)
        close(fd);

    ok(fl_server_join(ps, 0.2) == 1, "the ps waits while its worker has not finished");
    ok(fl_cluster_say_goodbye(worker_spec) == 0, "the worker says goodbye");
    ok(fl_server_join(ps, 10) == 0, "and the ps knows every worker has finished");
    fl_tensor_free(w_here);
    fl_tensor_free(w_there);
    fl_tensor_free(step);
    fl_session_free(s_here);
    fl_session_free(s_there);
    fl_optimizer_free(here.adam);
    fl_optimizer_free(there.adam);
    fl_graph_free(here.g);
    fl_graph_free(there.g);
    fl_server_stop(ps);
    fl_cluster_free(ps_spec);
    fl_cluster_free(worker_spec);
}

/* ---- a lost connection names the op ---- */

/* A ps that says hello, then hangs up on the first other request (the
 * worker's piece), which stays unanswered. */
static void *answer_hello_then_hang_up(void *listener)
{
    int fd = accept(*(int *)listener, NULL, NULL);
    struct timeval deadline = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
    fl_wire_buf in = {0}, out = {0};
    fl_wire_frame f;
    fl_status why = {0};
    while (fd >= 0 && fl_read_frame(fd, &in, &f, &why) == 1) {
        if (f.type == FL_WIRE_HELLO)
            fl_wire_put_hello_ok(&out, f.request_id, "ps", 0);
        else
            break;
        if (fl_socket_write_all(fd, out.data, out.len) != 0)
            break;
        fl_wire_buf_consume(&out, out.len);
    }
    if (fd >= 0)
        close(fd);
    fl_wire_buf_free(&in);
    fl_wire_buf_free(&out);
    return NULL;
}

/* A run that loses its ps while a request is in flight names the task it
 * lost and why. */
static void test_lost_connection_names_the_task(void)
{
    int port = 0, listener = loopback_bind(&port, 1);
    struct timeval deadline = {10, 0};
    setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
    char ps_hosts[64], worker_hosts[64];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", port);
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", loopback_free_port());
    pthread_t ps;
    if (listener < 0 || pthread_create(&ps, NULL, answer_hello_then_hang_up, &listener) != 0) {
        ok(false, "a stand-in ps listens on a loopback port");
        return;
    }
    fl_cluster *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/job:ps/task:0/cpu:0");
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, 2, 1), fl_zeros_initializer());
    fl_device_pop(g);
    const float ones[2] = {1, 1};
    fl_tensor *value = fl_tensor_from_floats(fl_shape_make(2, 2, 1), ones);
    fl_node *v = fl_constant(g, value, "ones");
    fl_device_scope_push(g, "/job:ps/task:0/cpu:0");
    fl_node *assign = fl_assign(g, w, v, "assign_w");
    fl_device_pop(g);
    fl_session_options opt = {.cluster = spec};
    fl_session *s = fl_session_new(g, &opt);
    ok(fl_session_run(s, NULL, 0, NULL, 0, NULL, &assign, 1) != 0, "a run whose ps hangs up fails");
    const char *error = fl_session_error(s);
    contains(error, "lost the connection to /job:ps/task:0", "the message names the task");
    contains(error, "closed the connection", "and says what happened");
    fl_session_free(s);
    fl_graph_free(g);
    fl_tensor_free(value);
    pthread_join(ps, NULL);
    close(listener);
    fl_cluster_say_goodbye(spec); /* fails (the ps is gone) but closes the connection */
    fl_cluster_free(spec);
}

int main(void)
{
    test_worker_against_ps();
    test_lost_connection_names_the_task();
    return done_testing();
}
