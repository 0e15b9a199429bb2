/* test_errors.c: every error carries a code beside its message (TensorFlow's
 * canonical codes), set where the message is set, kept when a caller adds
 * context, and kept by the session whose run it failed: a shape error, an
 * unfed placeholder, an uninitialized variable, a missing device, a missing
 * or corrupted checkpoint, bad cluster flags, and a ps that does not answer;
 * every code crosses the wire in an ERROR frame and arrives as itself;
 * and a caller's own mistakes (a NULL graph, outputs, counts that disagree
 * with their arrays) are errors, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "loopback.h"
#include "runtime.h" /* fl_set_error_code, fl_prefix_error */
#include "distributed_runtime/transport/wire.h"

static void is_code(fl_error_code got, fl_error_code want, const char *what)
{
    ok(got == want, "%s: %s", what, fl_error_code_name(want));
    if (got != want)
        diag("got %s (%s)", fl_error_code_name(got), fl_last_error());
}

static void test_codes_and_wrapping(void)
{
    is_string(fl_error_code_name(FL_UNAVAILABLE), "UNAVAILABLE", "codes have TensorFlow's names");
    ok(FL_INVALID_ARGUMENT == 3 && FL_NOT_FOUND == 5 && FL_ABORTED == 10 && FL_UNAVAILABLE == 14 &&
           FL_DATA_LOSS == 15, "and TensorFlow's numbers");
    fl_set_error("plain");
    is_code(fl_last_error_code(), FL_UNKNOWN, "fl_set_error means");
    fl_set_error_code(FL_UNAVAILABLE, "lost /job:ps/task:0");
    fl_prefix_error("%s: ", "train/Apply_1");
    is_string(fl_last_error(), "train/Apply_1: lost /job:ps/task:0", "a prefix goes before the message");
    is_code(fl_last_error_code(), FL_UNAVAILABLE, "and the code stays");
    fl_set_error_code(FL_OK, "an error is never OK");
    is_code(fl_last_error_code(), FL_UNKNOWN, "an error set with OK reads as");
}

/* The internal channel (src/status.h): a code set where the failure is seen, a message of a stated size. */
static void test_status(void)
{
    fl_status st = {0};
    ok(fl_status_ok(&st), "a status starts OK");
    ok(fl_status_set(&st, FL_NOT_FOUND, "no variable %s", "w") == -1, "setting one returns -1, the failure value");
    is_string(st.message, "no variable w", "with the message formatted");
    is_code(st.code, FL_NOT_FOUND, "and its code as given:");
    ok(!fl_status_ok(&st), "and it is no longer OK");
    fl_status_set(&st, st.code, "ps0: %s", st.message);
    is_string(st.message, "ps0: no variable w", "the message may be given its own words to prefix");
    fl_status_set(&st, FL_OK, "a failure is never OK");
    is_code(st.code, FL_UNKNOWN, "a failure set with OK reads as");
    char long_name[2 * FL_STATUS_MESSAGE_LEN];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    fl_status_set(&st, FL_INVALID_ARGUMENT, "%s", long_name);
    ok(strlen(st.message) == FL_STATUS_MESSAGE_LEN - 1, "a longer message is cut to the stated size");
    fl_status_set(&st, FL_DATA_LOSS, "frame 7 is cut short");
    fl_status_to_last_error(&st);
    is_string(fl_last_error(), "frame 7 is cut short", "a status handed on keeps its message");
    is_code(fl_last_error_code(), FL_DATA_LOSS, "and its code:");
}

static void test_graph_and_session(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 2, 3), "x");
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, 3, 1), fl_zeros_initializer());
    fl_node *y = fl_matmul(g, x, w, false, false, "y");
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, NULL, 0, &y, 1, &out, NULL, 0) != 0, "a run with an unfed placeholder fails");
    is_code(fl_session_error_code(s), FL_INVALID_ARGUMENT, "an unfed placeholder is");
    is_code(fl_last_error_code(), FL_INVALID_ARGUMENT, "and fl_last_error_code agrees");

    fl_node *twice = fl_add(g, w, w, "twice");
    ok(fl_session_run(s, NULL, 0, &twice, 1, &out, NULL, 0) != 0, "reading a variable before it has a value fails");
    is_code(fl_session_error_code(s), FL_FAILED_PRECONDITION, "an uninitialized variable is");
    fl_node *init = fl_global_variables_initializer(g);
    ok(fl_session_run(s, NULL, 0, &w, 1, &out, &init, 1) == 0, "after a good run");
    is_code(fl_session_error_code(s), FL_OK, "the session's code is");
    fl_tensor_free(out);

    fl_node *bad = fl_matmul(g, w, w, false, false, "bad"); /* [3,1] x [3,1] */
    ok(!bad, "a matmul of mismatched shapes is refused at build time");
    is_code(fl_last_error_code(), FL_INVALID_ARGUMENT, "a shape error is");
    fl_session_free(s);
    fl_graph_free(g);
}

/* What a C caller can get wrong in the arguments themselves. */
static void test_caller_mistakes(void)
{
    ok(!fl_session_new(NULL, NULL) && strstr(fl_last_error(), "graph is NULL"), "a session on a NULL graph: %s",
       fl_last_error());
    is_code(fl_last_error_code(), FL_INVALID_ARGUMENT, "a NULL graph is");
    int ran = fl_session_run(NULL, NULL, 0, NULL, 0, NULL, NULL, 0);
    ok(ran == -1 && strstr(fl_last_error(), "session is NULL") && strstr(fl_session_error(NULL), "NULL"),
       "a run of a NULL session fails, saying so: %s", fl_last_error());
    fl_optimizer_set_learning_rate(NULL, 0.1f); /* nothing to set: no crash */
    ok(!fl_tensor_copy(NULL) && strstr(fl_last_error(), "no tensor"), "copying no tensor: %s", fl_last_error());
    ok(!fl_tensor_from_floats(fl_shape_make(1, 3), NULL) && strstr(fl_last_error(), "values is NULL"),
       "a tensor from a NULL array of values: %s", fl_last_error());
    ok(!fl_tensor_from_ints(fl_shape_make(1, 3), NULL) && strstr(fl_last_error(), "fl_tensor_from_ints"),
       "and of int values: %s", fl_last_error());
    int saved = fl_session_save(NULL, "/tmp", 1);
    ok(saved == -1 && strstr(fl_last_error(), "fl_session_save: the session is NULL"), "saving a NULL session: %s",
       fl_last_error());
    int restored = fl_session_restore_latest(NULL, "/tmp");
    ok(restored == -1 && strstr(fl_last_error(), "restore_latest: the session is NULL"),
       "restoring into a NULL session: %s", fl_last_error());
    fl_tensor *bytes = fl_tensor_new(FL_UINT8, fl_shape_make(1, 2));
    ((uint8_t *)bytes->data)[0] = 200;
    ok(fl_tensor_scalar(bytes) == 200.0f, "a uint8 tensor's scalar is its byte (%g)", fl_tensor_scalar(bytes));
    fl_tensor_free(bytes);
    fl_shape five = fl_shape_make(5, 1, 2, 3, 4, 5);
    ok(five.rank == -1 && strstr(fl_last_error(), "rank 5"), "a rank-5 shape is refused at once: %s",
       fl_last_error());
    int controlled = fl_control_dependencies_push(NULL, NULL, 0);
    ok(controlled == -1 && strstr(fl_last_error(), "fl_control_dependencies_push: the graph is NULL"),
       "control dependencies in a NULL graph: %s", fl_last_error());
    int scoped = fl_name_scope_push(NULL, "a");
    ok(fl_graph_error(NULL) && scoped == -1 && fl_graph_node_count(NULL) == 0 &&
           !fl_global_variables_initializer(NULL) && !fl_graph_find(NULL, "x"),
       "a NULL graph has an error, and scopes, lookups and the initializer refuse it: %s", fl_last_error());
    ok(!fl_node_name(NULL) && fl_node_shape(NULL).rank == -1 && fl_node_input_count(NULL) == 0,
       "asking about a NULL node (a builder's refusal) answers NULL, an unknown shape, no inputs");
    fl_graph *g = fl_graph_new();
    int pushed = fl_device_scope_push_colocated(g, NULL);
    ok(pushed == -1 && fl_graph_error(g) && strstr(fl_graph_error(g), "NULL"),
       "colocating with a NULL node is the graph's error: %s", fl_graph_error(g));
    fl_graph_clear_error(g);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 2), "x");
    fl_node *y = fl_add(g, x, x, "y");
    fl_node *v = fl_get_variable(g, "v", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_node *loss = fl_reduce_sum(g, fl_mul(g, v, v, NULL), NULL, 0, false, "loss");
    int pairs = fl_compute_gradients(g, loss, NULL, 0, NULL);
    ok(pairs == -1 && fl_graph_error(g) && strstr(fl_graph_error(g), "out is NULL"),
       "gradients with nowhere to write them: %s", fl_graph_error(g));
    fl_graph_clear_error(g);
    fl_grad_var one[1];
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 2), fl_zeros_initializer());
    pairs = fl_compute_gradients(g, fl_add(g, loss, fl_reduce_sum(g, w, NULL, 0, false, NULL), NULL), NULL, 1, one);
    ok(pairs == -1 && fl_graph_error(g) && strstr(fl_graph_error(g), "out holds 1 pairs but the graph has 2"),
       "gradients of every variable into too small an out: %s", fl_graph_error(g));
    fl_graph_clear_error(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *value = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 2)), *out = NULL;
    fl_feed feed = {x, value};
    ok(fl_session_run(s, &feed, 1, &y, 1, NULL, NULL, 0) != 0 && strstr(fl_session_error(s), "outputs is NULL"),
       "a fetch with no outputs array fails the run: %s", fl_session_error(s));
    is_code(fl_session_error_code(s), FL_INVALID_ARGUMENT, "no outputs array is");
    ok(fl_session_run(s, &feed, 1, NULL, 1, &out, NULL, 0) != 0 && strstr(fl_session_error(s), "fetches is NULL"),
       "a fetch count with no fetches array: %s", fl_session_error(s));
    ok(fl_session_run(s, NULL, 1, &y, 1, &out, NULL, 0) != 0 && strstr(fl_session_error(s), "feeds is NULL"),
       "a feed count with no feeds array: %s", fl_session_error(s));
    ok(fl_session_run(s, &feed, -1, &y, 1, &out, NULL, 0) != 0 && strstr(fl_session_error(s), "negative count"),
       "a negative count: %s", fl_session_error(s));
    fl_tensor no_data = {.dtype = FL_FLOAT32, .shape = fl_shape_make(1, 2)};
    fl_feed empty_feed = {x, &no_data};
    ok(fl_session_run(s, &empty_feed, 1, &y, 1, &out, NULL, 0) != 0 && strstr(fl_session_error(s), "data is NULL"),
       "a fed tensor whose data is NULL: %s", fl_session_error(s));
    ok(fl_session_run(s, &feed, 1, &y, 1, &out, NULL, 0) == 0 && out, "and the same run, asked right, works");
    fl_tensor_free(out);

    ok(!fl_checkpoint_saver_hook(NULL, 0, 10, 1) && strstr(fl_last_error(), "no directory"),
       "a checkpoint saver hook with no directory is refused: %s", fl_last_error());
    ok(!fl_logging_tensor_hook(&y, 17, 10) && strstr(fl_last_error(), "1 to 16"),
       "a logging hook for 17 tensors is refused, not cut to 16: %s", fl_last_error());
    fl_session_hook *hooks[2] = {fl_stop_at_step_hook(5), fl_logging_tensor_hook(NULL, 1, 10)};
    fl_monitored_session_options m = {.hooks = hooks, .nhooks = 2, .log_step_count_steps = -1};
    fl_node *step = fl_get_or_create_global_step(g);
    ok(!fl_monitored_training_session(g, step, &m) && strstr(fl_last_error(), "hooks[1] is NULL"),
       "a monitored session given a hook its maker refused fails, naming it: %s", fl_last_error());
    is_code(fl_last_error_code(), FL_INVALID_ARGUMENT, "a NULL hook is");
    fl_session_hook_free(hooks[0]);
    fl_tensor_free(value);
    fl_session_free(s);
    fl_graph_free(g);
}

/* The cluster calls, given a NULL cluster or server (a failed start). */
static void test_cluster_caller_mistakes(void)
{
    ok(fl_server_join(NULL, 1) == -1 && strstr(fl_last_error(), "server is NULL"), "joining a NULL server: %s",
       fl_last_error());
    fl_server_stats stats = {.frames = 7};
    fl_server_get_stats(NULL, &stats);
    ok(stats.frames == 0, "a NULL server's stats are zero");
    ok(fl_cluster_say_goodbye(NULL) == -1 && fl_cluster_reconnect(NULL) == -1 &&
           fl_cluster_set_secret_file(NULL, "x") == -1 && fl_cluster_set_tls(NULL, "a", "b", "c") == -1,
       "goodbye, reconnect, a secret and TLS for a NULL cluster are refused: %s", fl_last_error());
    uint64_t sent = 1, received = 1;
    fl_remote_traffic(NULL, &sent, &received);
    ok(sent == 0 && received == 0 && fl_remote_stale_steps(NULL) == 0 &&
       fl_remote_stale_variable_updates(NULL) == 0, "a NULL cluster has moved nothing");
    fl_cluster *c = fl_cluster_from_flags("127.0.0.1:1", "127.0.0.1:2", "worker", 0);
    int set = fl_cluster_set_secret_file(c, NULL);
    ok(set == -1 && strstr(fl_last_error(), "no file given"), "a secret file that is NULL: %s", fl_last_error());
    fl_optimizer *wrapped = fl_sync_replicas_optimizer(NULL, 1, 1);
    ok(!wrapped && strstr(fl_last_error(), "optimizer to wrap is NULL"), "synchronous replicas of no optimizer: %s",
       fl_last_error());
    fl_cluster_free(c);
}

static void test_devices(void)
{
    fl_device_info first[1], many[16];
    int all = fl_list_devices(NULL, 0), listed = fl_list_devices(first, 1), up_to_16 = fl_list_devices(many, 16);
    ok(all >= 1 && all == up_to_16 && listed == 1 && strcmp(first[0].name, "/cpu:0") == 0,
       "fl_list_devices(NULL, 0) counts the devices (%d, as a list of 16 has %d) and a list of 1 holds /cpu:0",
       all, up_to_16);
    float host[2];
    int read = fl_device_buffer_read("/cpu:0", NULL, host, sizeof host);
    ok(read == -1 && strstr(fl_last_error(), "device buffer is NULL"), "reading from a NULL device buffer: %s",
       fl_last_error());
    void *buffer = fl_device_buffer_alloc("/cpu:0", sizeof host);
    int written = fl_device_buffer_write("/cpu:0", buffer, NULL, sizeof host);
    ok(written == -1 && strstr(fl_last_error(), "host memory is NULL"), "writing from NULL host memory: %s",
       fl_last_error());
    fl_device_buffer_free("/cpu:0", buffer);
    fl_backend_info backends[8];
    int built = fl_list_backends(NULL, 0);
    ok(built >= 0 && built == fl_list_backends(backends, 8), "fl_list_backends(NULL, 0) counts the backends (%d)",
       built);
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/cpu:3");
    fl_node *c = fl_scalar(g, 1, "c");
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, NULL, 0, &c, 1, &out, NULL, 0) != 0, "a node on /cpu:3 cannot be placed");
    is_code(fl_session_error_code(s), FL_NOT_FOUND, "a device that does not exist is");
    fl_session_free(s);
    fl_graph_free(g);
}

static void test_checkpoints(void)
{
    fl_named_tensor *read = NULL;
    int n = 0;
    ok(fl_checkpoint_read("/nonexistent/model.ckpt-1", &read, &n) != 0, "a missing checkpoint cannot be read");
    is_code(fl_last_error_code(), FL_NOT_FOUND, "a missing file is");

    char path[] = "/tmp/test_errors.XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    float values[4] = {1, 2, 3, 4};
    fl_tensor *t = fl_tensor_from_floats(fl_shape_make(1, 4), values);
    fl_named_tensor one = {"w", t};
    ok(fl_checkpoint_write(path, &one, 1) == 0, "a checkpoint is written");
    FILE *f = fopen(path, "r+b");
    fseek(f, -3, SEEK_END); /* inside w's data */
    fputc(0x5a, f);
    fclose(f);
    ok(fl_checkpoint_read(path, &read, &n) != 0, "a checkpoint with a changed byte is refused");
    is_code(fl_last_error_code(), FL_DATA_LOSS, "a corrupted checkpoint is");
    unlink(path);
    fl_tensor_free(t);
}

static void test_flags(void)
{
    ok(!fl_cluster_from_flags("127.0.0.1:port", "127.0.0.1:2223", "worker", 0), "a port that is not a number");
    is_code(fl_last_error_code(), FL_INVALID_ARGUMENT, "a bad flag is");
    ok(!fl_cluster_from_flags("127.0.0.1:2222", "127.0.0.1:2223", "worker", 3), "worker 3 of one");
    is_code(fl_last_error_code(), FL_INVALID_ARGUMENT, "a task index past the list is");
}

/* A ps that never started: the worker's run waits out the deadline. */
static void test_unreachable_ps(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "1", 1);
    char ps_hosts[64], worker_hosts[64];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", loopback_free_port());
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", loopback_free_port());
    fl_cluster *cluster = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/job:ps/task:0/cpu:0");
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_device_pop(g);
    fl_session_options o = {.cluster = cluster};
    fl_session *s = fl_session_new(g, &o);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, NULL, 0, &w, 1, &out, NULL, 0) != 0, "a run with its variable on a closed port fails");
    is_code(fl_session_error_code(s), FL_UNAVAILABLE, "a task that does not answer is");
    fl_session_free(s);
    fl_graph_free(g);
    fl_cluster_free(cluster);
}

/* c sent as a task server sends a failed run's code, read as a client reads it. */
static fl_error_code across_the_wire(fl_error_code c)
{
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_wire_message m;
    fl_status why = {0};
    fl_error_code got = FL_OK;
    if (fl_wire_put_error(&buf, 7, fl_wire_error_for(c), "it failed") == 0 &&
        fl_wire_decode(buf.data, buf.len, &f, &why) == FL_WIRE_FRAME &&
        fl_wire_parse(&f, &m, &why) == 0)
        got = fl_wire_error_meaning(m.u.error.code);
    else
        diag("%s%s", buf.error, why.message);
    fl_wire_buf_free(&buf);
    return got;
}

/* A ps's or a task's failure keeps its code on the wire: NOT_FOUND went
 * out as INTERNAL before; the codes the wire names keep their numbers. */
static void test_wire_codes(void)
{
    is_code(across_the_wire(FL_NOT_FOUND), FL_NOT_FOUND, "a NOT_FOUND from a ps arrives as");
    is_code(across_the_wire(FL_FAILED_PRECONDITION), FL_FAILED_PRECONDITION,
            "a FAILED_PRECONDITION from a ps arrives as");
    bool all = true;
    for (int c = FL_CANCELLED; c <= FL_UNAUTHENTICATED; c++)
        all = all && across_the_wire((fl_error_code)c) == (fl_error_code)c;
    ok(all, "every code from CANCELLED to UNAUTHENTICATED arrives as itself");
    ok(fl_wire_error_for(FL_INVALID_ARGUMENT) == FL_WIRE_E_INVALID_ARGUMENT &&
           fl_wire_error_for(FL_RESOURCE_EXHAUSTED) == FL_WIRE_E_RESOURCE_EXHAUSTED &&
           fl_wire_error_meaning(FL_WIRE_E_NOT_INITIALIZED) == FL_FAILED_PRECONDITION &&
           fl_wire_error_meaning(FL_WIRE_E_UNKNOWN_VARIABLE) == FL_NOT_FOUND &&
           fl_wire_error_meaning(FL_WIRE_E_BAD_FRAME) == FL_DATA_LOSS,
       "the codes the wire names keep their numbers and meanings");
    ok(!fl_wire_error_code_known(13) && !fl_wire_error_code_known(FL_WIRE_E_CANONICAL) &&
           !fl_wire_error_code_known(FL_WIRE_E_CANONICAL + FL_UNAUTHENTICATED + 1),
       "a code between or past them is refused as unknown");
}

int main(void)
{
    test_codes_and_wrapping();
    test_status();
    test_graph_and_session();
    test_caller_mistakes();
    test_cluster_caller_mistakes();
    test_devices();
    test_checkpoints();
    test_flags();
    test_unreachable_ps();
    test_wire_codes();
    return done_testing();
}
