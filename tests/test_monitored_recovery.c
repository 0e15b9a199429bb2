/* test_monitored_recovery.c: the monitored session tries a failed run again
 * only when its code says a task was lost (UNAVAILABLE) or a step abandoned
 * (ABORTED). A bad feed (INVALID_ARGUMENT) is returned at once, with no
 * "connecting again"; a ps stopped and started again empty (UNAVAILABLE) is
 * recovered: the chief reconnects, restores the latest checkpoint into the
 * new ps and the run succeeds. The ps runs in this process, on a loopback
 * port. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "loopback.h"

typedef struct {
    fl_graph *g;
    fl_node *x, *y, *loss, *train, *step;
    fl_optimizer *sgd;
} model;

static const char *variables_on_ps(const fl_node *n, void *device)
{
    return strcmp(fl_node_op_type(n), "VariableV2") == 0 ? device : NULL;
}

/* y = x w fitted by gradient descent; variables on the ps, the rest here. */
static model build(void)
{
    model m = {.g = fl_graph_new()};
    fl_device_scope_push(m.g, "/job:worker/task:0/cpu:0");
    fl_device_function_push(m.g, variables_on_ps, "/job:ps/task:0/cpu:0");
    m.x = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, 4, 2), "x");
    m.y = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, 4, 1), "y");
    fl_node *w = fl_get_variable(m.g, "w", fl_shape_make(2, 2, 1), fl_constant_initializer(0.5f));
    m.step = fl_get_or_create_global_step(m.g);
    fl_node *err = fl_sub(m.g, fl_matmul(m.g, m.x, w, false, false, NULL), m.y, NULL);
    m.loss = fl_reduce_mean(m.g, fl_mul(m.g, err, err, NULL), NULL, 0, false, "loss");
    m.sgd = fl_gradient_descent_optimizer(0.01f);
    m.train = fl_minimize(m.sgd, m.g, m.loss, m.step, NULL);
    return m;
}

/* Whether the session's log so far has the text. */
static bool log_has(FILE *log, const char *text)
{
    char all[16384];
    fflush(log);
    long end = ftell(log);
    rewind(log);
    size_t n = fread(all, 1, sizeof all - 1, log);
    all[n] = '\0';
    fseek(log, end, SEEK_SET);
    return strstr(all, text) != NULL;
}

static int run_step(fl_monitored_session *ms, model *m, const fl_tensor *x, const fl_tensor *y)
{
    fl_feed feeds[2] = {{m->x, x}, {m->y, y}};
    return fl_monitored_session_run(ms, feeds, 2, NULL, 0, NULL, &m->train, 1);
}

static void test_recovers_on_codes(const char *checkpoint_dir)
{
    char ps_hosts[64], worker_hosts[64];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", loopback_free_port());
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", loopback_free_port());
    fl_cluster *ps_spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    fl_cluster *worker_spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    FILE *ps_log = tmpfile(), *log = tmpfile();
    fl_server_options so = {.log = ps_log};
    fl_server *ps = fl_server_start(ps_spec, &so);
    ok(ps != NULL, "a ps starts on %s", ps_hosts);
    if (!ps)
        return;
    model m = build();
    const float xs[8] = {1, 2, 3, 1, 0, 1, 2, 2}, ys[4] = {5, 5, 2, 6}, wrong[3] = {1, 2, 3};
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(2, 4, 2), xs);
    fl_tensor *y = fl_tensor_from_floats(fl_shape_make(2, 4, 1), ys);
    fl_tensor *bad_x = fl_tensor_from_floats(fl_shape_make(2, 1, 3), wrong);
    fl_session_options config = {.cluster = worker_spec};
    fl_monitored_session_options o = {.chief = FL_CHIEF_YES, .checkpoint_dir = checkpoint_dir,
                                      .save_checkpoint_steps = 1, .log_step_count_steps = -1,
                                      .config = &config, .log = log};
    fl_monitored_session *ms = fl_monitored_training_session(m.g, m.step, &o);
    ok(ms != NULL, "the chief's monitored session starts (%s)", ms ? "ok" : fl_last_error());
    if (!ms)
        return;
    int rc = 0;
    for (int i = 0; i < 3; i++)
        rc |= run_step(ms, &m, x, y);
    ok(rc == 0 && fl_monitored_session_global_step(ms) == 3, "three steps train (global step %ld)",
       fl_monitored_session_global_step(ms));

    /* A bad feed: the same failure every time, so no retry. */
    ok(run_step(ms, &m, bad_x, y) != 0, "a step fed x of the wrong shape fails");
    ok(fl_last_error_code() == FL_INVALID_ARGUMENT, "with INVALID_ARGUMENT (%s)",
       fl_error_code_name(fl_last_error_code()));
    ok(!log_has(log, "connecting again"), "and is returned at once: no \"connecting again\"");
    ok(run_step(ms, &m, x, y) == 0, "the next good step runs");

    /* The ps stops (its connections close) and comes back empty. */
    fl_server_stop(ps);
    nanosleep(&(struct timespec){0, 100000000}, NULL);
    ps = fl_server_start(ps_spec, &so);
    ok(ps != NULL, "a new, empty ps starts at the same address");
    rc = ps ? run_step(ms, &m, x, y) : -1;
    ok(rc == 0, "the step that lost the ps is recovered and run again (%s)",
       rc == 0 ? "ok" : fl_monitored_session_error(ms));
    ok(log_has(log, "connecting again"), "after the session said it was connecting again");
    ok(log_has(log, "restored the latest checkpoint"), "and the chief restored the new ps from the checkpoint");
    ok(fl_monitored_session_global_step(ms) >= 4, "the global step went on from the checkpoint (%ld)",
       fl_monitored_session_global_step(ms));

    fl_monitored_session_close(ms);
    ok(ps && fl_server_join(ps, 10) == 0, "closing the monitored session said goodbye, and the ps is done");
    fl_server_stop(ps);
    fl_tensor_free(x);
    fl_tensor_free(y);
    fl_tensor_free(bad_x);
    fl_optimizer_free(m.sgd);
    fl_graph_free(m.g);
    fl_cluster_free(ps_spec);
    fl_cluster_free(worker_spec);
    fclose(log);
    fclose(ps_log);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "20", 1); /* a test never waits two minutes */
    char dir[] = "/tmp/test_monitored_recovery.XXXXXX";
    if (!mkdtemp(dir))
        return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    test_recovers_on_codes(dir);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    if (system(command) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
