/* test_errors.c: every error carries a code beside its message (TensorFlow's
 * canonical codes), set where the message is set, kept when a caller adds
 * context, and kept by the session whose run it failed: a shape error, an
 * unfed placeholder, an uninitialized variable, a missing device, a missing
 * or corrupted checkpoint, bad cluster flags, and a ps that does not answer. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "loopback.h"
#include "runtime.h" /* fl_set_error_code, fl_prefix_error */

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

static void test_devices(void)
{
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
    fl_session_options o = {.cluster = fl_cluster_session_plugin(cluster)};
    fl_session *s = fl_session_new(g, &o);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, NULL, 0, &w, 1, &out, NULL, 0) != 0, "a run with its variable on a closed port fails");
    is_code(fl_session_error_code(s), FL_UNAVAILABLE, "a task that does not answer is");
    fl_session_free(s);
    fl_graph_free(g);
    fl_cluster_free(cluster);
}

int main(void)
{
    test_codes_and_wrapping();
    test_graph_and_session();
    test_devices();
    test_checkpoints();
    test_flags();
    test_unreachable_ps();
    return done_testing();
}
