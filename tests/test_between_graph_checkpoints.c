/* test_between_graph_checkpoints.c: the saver of a between-graph worker
 * that cuts its own graph (issue 36 item 2).
 * Its variables live in the ps's container; as TensorFlow's Saver (not
 * sharded) the values travel through the worker's master: a save fetches
 * them, a restore runs each initializer's Assign on the ps, fed the saved
 * value. A chief's monitored session trains a model with momentum (slots on
 * the ps) and saves every 2 steps; a fresh cluster, on other ports, restores
 * exactly those values: through a monitored session, and through
 * fl_session_restore_latest on a plain session. A save with a variable not
 * yet given a value fails, naming it. The client of a cluster (in-graph
 * across tasks) saves and restores the same way. Everything runs in this
 * process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "runtime.h" /* fl_tensor_bytes, fl_latest_checkpoint_step */
#include "loopback.h"
#include "tap.h"

#define NVARS 8

typedef struct {
    fl_graph *g;
    fl_node *x, *y, *train, *step;
    fl_node *vars[NVARS];
    int nvars;
    fl_optimizer *opt;
} model;

typedef struct {
    fl_cluster *ps_spec, *worker_spec;
    fl_server *ps;
    char ps_hosts[64], worker_hosts[64];
} cluster;

static const char *variables_on_ps(const fl_node *n, void *device)
{
    return strcmp(fl_node_op_type(n), "VariableV2") == 0 ? device : NULL;
}

/* y = x w + b, fitted with momentum: w, b, the global step and both slots on the ps. */
static model build(void)
{
    model m = {.g = fl_graph_new()};
    fl_device_function_push(m.g, variables_on_ps, "/job:ps/task:0/cpu:0");
    m.x = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, 4, 2), "x");
    m.y = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, 4, 1), "y");
    fl_node *w = fl_get_variable(m.g, "w", fl_shape_make(2, 2, 1), fl_constant_initializer(0.5f));
    fl_node *b = fl_get_variable(m.g, "b", fl_shape_make(1, 1), fl_zeros_initializer());
    m.step = fl_get_or_create_global_step(m.g);
    fl_node *err = fl_sub(m.g, fl_add(m.g, fl_matmul(m.g, m.x, w, false, false, NULL), b, NULL), m.y, NULL);
    fl_node *loss = fl_reduce_mean(m.g, fl_mul(m.g, err, err, NULL), NULL, 0, false, "loss");
    m.opt = fl_momentum_optimizer(0.01f, 0.9f, false);
    m.train = fl_minimize(m.opt, m.g, loss, m.step, NULL);
    fl_device_pop(m.g);
    m.nvars = fl_global_variables(m.g, m.vars, NVARS);
    return m;
}

static void free_model(model *m)
{
    fl_optimizer_free(m->opt);
    fl_graph_free(m->g);
}

/* A ps on a free port and the spec of worker 0 beside it. */
static cluster start_cluster(void)
{
    cluster c = {0};
    snprintf(c.ps_hosts, sizeof c.ps_hosts, "127.0.0.1:%d", loopback_free_port());
    snprintf(c.worker_hosts, sizeof c.worker_hosts, "127.0.0.1:%d", loopback_free_port());
    c.ps_spec = fl_cluster_from_flags(c.ps_hosts, c.worker_hosts, "ps", 0);
    c.worker_spec = fl_cluster_from_flags(c.ps_hosts, c.worker_hosts, "worker", 0);
    c.ps = c.ps_spec ? fl_server_start(c.ps_spec, NULL) : NULL;
    return c;
}

static void stop_cluster(cluster *c)
{
    ok(fl_server_join(c->ps, 20) == 0, "the ps is done once the worker said goodbye (waited up to 20 s)");
    fl_server_stop(c->ps);
    fl_cluster_free(c->ps_spec);
    fl_cluster_free(c->worker_spec);
}

/* Every variable's value, fetched in one run of s. */
static int fetch_all(fl_session *s, const model *m, fl_tensor **values)
{
    return fl_session_run(s, NULL, 0, m->vars, m->nvars, values, NULL, 0);
}

static void free_all(fl_tensor **values, int n)
{
    for (int i = 0; i < n; i++)
        fl_tensor_free(values[i]);
}

/* Whether a and b hold the same n tensors, byte for byte. */
static bool same_values(fl_tensor *const *a, fl_tensor *const *b, int n)
{
    for (int i = 0; i < n; i++)
        if (!a[i] || !b[i] || a[i]->dtype != b[i]->dtype || !fl_shape_equal(a[i]->shape, b[i]->shape) ||
            memcmp(a[i]->data, b[i]->data, fl_tensor_bytes(a[i])) != 0)
            return false;
    return true;
}

static int train_steps(fl_monitored_session *ms, const model *m, int steps)
{
    const float xs[8] = {1, 2, 3, 1, 0, 1, 2, 2}, ys[4] = {5, 5, 2, 6};
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(2, 4, 2), xs);
    fl_tensor *y = fl_tensor_from_floats(fl_shape_make(2, 4, 1), ys);
    fl_feed feeds[2] = {{m->x, x}, {m->y, y}};
    int rc = 0;
    for (int i = 0; i < steps && rc == 0; i++)
        rc = fl_monitored_session_run(ms, feeds, 2, NULL, 0, NULL, &m->train, 1);
    fl_tensor_free(x);
    fl_tensor_free(y);
    return rc;
}

/* Trains 5 steps, saving every 2 (and at the end), and keeps the values. */
static void train_and_save(const char *dir, fl_tensor **saved, model *m)
{
    cluster c = start_cluster();
    if (!c.ps)
        return (void)ok(false, "a ps starts on loopback: %s", fl_last_error());
    FILE *log = tmpfile();
    fl_session_options config = {.cluster = c.worker_spec};
    fl_monitored_session_options o = {.chief = FL_CHIEF_YES, .checkpoint_dir = dir, .save_checkpoint_steps = 2,
                                      .log_step_count_steps = -1, .config = &config, .log = log};
    fl_monitored_session *ms = fl_monitored_training_session(m->g, m->step, &o);
    ok(ms != NULL, "the chief's monitored session starts, the switch on (%s)", ms ? "ok" : fl_last_error());
    if (ms) {
        ok(train_steps(ms, m, 5) == 0, "five steps train (%s)", fl_monitored_session_error(ms));
        ok(fetch_all(fl_monitored_session_session(ms), m, saved) == 0, "the %d variables are fetched from the ps",
           m->nvars);
        ok(fl_monitored_session_close(ms) == 0, "closing saves the last checkpoint and says goodbye");
    }
    ok(fl_latest_checkpoint_step(dir) == 5, "the latest checkpoint is step 5 (%ld)", fl_latest_checkpoint_step(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/model.ckpt-4", dir);
    ok(access(path, F_OK) == 0, "the save every 2 steps wrote %s", path);
    stop_cluster(&c);
    fclose(log);
}

/* The file itself holds what the ps held. */
static void check_file(const char *dir, fl_tensor **saved, const model *m)
{
    char path[512];
    snprintf(path, sizeof path, "%s/model.ckpt-5", dir);
    fl_named_tensor *read = NULL;
    int n = 0;
    int rc = fl_checkpoint_read(path, &read, &n);
    ok(rc == 0 && n == m->nvars, "%s holds %d tensors (%d)", path, m->nvars, n);
    int same = 0;
    for (int i = 0; i < n; i++)
        for (int v = 0; v < m->nvars; v++)
            if (strcmp(read[i].name, fl_node_name(m->vars[v])) == 0 && saved[v] &&
                memcmp(read[i].tensor->data, saved[v]->data, fl_tensor_bytes(saved[v])) == 0)
                same++;
    ok(same == m->nvars, "each is the value the ps held, byte for byte (%d of %d)", same, m->nvars);
    fl_checkpoint_free(read, n);
}

/* A fresh cluster's chief restores; a plain session there restores too. */
static void restore_fresh(const char *dir, fl_tensor **saved)
{
    model m = build();
    cluster c = start_cluster();
    if (!c.ps) {
        free_model(&m);
        return (void)ok(false, "a second ps starts on loopback: %s", fl_last_error());
    }
    FILE *log = tmpfile();
    fl_session_options config = {.cluster = c.worker_spec};
    fl_monitored_session_options o = {.chief = FL_CHIEF_YES, .checkpoint_dir = dir, .log_step_count_steps = -1,
                                      .config = &config, .log = log};
    fl_monitored_session *ms = fl_monitored_training_session(m.g, m.step, &o);
    ok(ms && fl_monitored_session_global_step(ms) == 5, "a fresh cluster's chief restores global step 5 (%s)",
       ms ? "ok" : fl_last_error());
    fl_tensor *got[NVARS] = {0};
    ok(ms && fetch_all(fl_monitored_session_session(ms), &m, got) == 0 && same_values(saved, got, m.nvars),
       "the new ps holds the saved values exactly, slots included");
    free_all(got, m.nvars);
    /* a plain session's saver, on the same new ps: overwrite, then restore */
    fl_session *s = fl_session_new(m.g, &config);
    fl_node *init = fl_global_variables_initializer(m.g);
    ok(s && fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) == 0 && fetch_all(s, &m, got) == 0 &&
       !same_values(saved, got, m.nvars), "a plain session initialises the ps anew, to other values: %s",
       fl_last_error());
    free_all(got, m.nvars);
    ok(fl_session_restore_latest(s, dir) == 1, "fl_session_restore_latest restores through its master: %s",
       fl_session_error(s));
    ok(fetch_all(s, &m, got) == 0 && same_values(saved, got, m.nvars), "the saved values are back");
    free_all(got, m.nvars);
    fl_session_free(s);
    fl_monitored_session_close(ms);
    stop_cluster(&c);
    free_model(&m);
    fclose(log);
}

/* Before any initialisation: the save fails, naming what has no value. */
static void save_uninitialized(const char *dir)
{
    model m = build();
    cluster c = start_cluster();
    fl_session_options config = {.cluster = c.worker_spec};
    fl_session *s = c.ps ? fl_session_new(m.g, &config) : NULL;
    ok(s && fl_session_save(s, dir, 99) != 0, "a save before the variables have values fails");
    ok(s && fl_session_error_code(s) == FL_FAILED_PRECONDITION && strstr(fl_session_error(s), "before it is "
       "initialized"), "FAILED_PRECONDITION, saying what is not initialized: %s", s ? fl_session_error(s) : "");
    ok(fl_latest_checkpoint_step(dir) == 5, "and writes nothing (latest still 5)");
    fl_session_free(s);
    fl_cluster_say_goodbye(c.worker_spec);
    if (c.ps)
        stop_cluster(&c);
    free_model(&m);
}

/* The client of a cluster (in-graph across tasks) saves and restores
 * through its master too: a ps and worker 0 serve, the client trains a
 * step, saves, initialises anew and restores what it saved. */
static void test_in_graph_client(const char *dir)
{
    model m = build();
    cluster c = start_cluster();
    fl_server *worker = c.ps ? fl_server_start(c.worker_spec, NULL) : NULL;
    fl_cluster *client = fl_cluster_client_from_flags(c.ps_hosts, c.worker_hosts);
    fl_session_options o = {.cluster = client};
    fl_session *s = worker && client ? fl_session_new(m.g, &o) : NULL;
    fl_node *init = fl_global_variables_initializer(m.g);
    const float xs[8] = {1, 2, 3, 1, 0, 1, 2, 2}, ys[4] = {5, 5, 2, 6};
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(2, 4, 2), xs);
    fl_tensor *y = fl_tensor_from_floats(fl_shape_make(2, 4, 1), ys);
    fl_feed feeds[2] = {{m.x, x}, {m.y, y}};
    fl_tensor *before[NVARS] = {0}, *after[NVARS] = {0};
    ok(s && fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) == 0 &&
       fl_session_run(s, feeds, 2, NULL, 0, NULL, &m.train, 1) == 0 && fetch_all(s, &m, before) == 0,
       "in-graph: a client initialises and trains a step on the ps and worker 0: %s", fl_last_error());
    ok(s && fl_session_save(s, dir, 1) == 0, "in-graph: the client saves through its master: %s", fl_last_error());
    ok(s && fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) == 0 && fl_session_restore_latest(s, dir) == 1 &&
       fetch_all(s, &m, after) == 0 && same_values(before, after, m.nvars),
       "in-graph: initialised anew, it restores the values it saved: %s", fl_last_error());
    free_all(before, m.nvars);
    free_all(after, m.nvars);
    fl_tensor_free(x);
    fl_tensor_free(y);
    fl_session_free(s); /* its master says goodbye to every task */
    ok(worker && fl_server_join(worker, 20) == 0, "in-graph: worker 0 is done once the client said goodbye");
    fl_server_stop(worker);
    fl_cluster_free(client);
    if (c.ps)
        stop_cluster(&c);
    free_model(&m);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "20", 1);
    char dir[] = "/tmp/test_between_graph_checkpoints.XXXXXX";
    if (!mkdtemp(dir))
        return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    model m = build();
    ok(m.nvars == 5, "w, b, the global step and two momentum slots are global variables (%d)", m.nvars);
    fl_tensor *saved[NVARS] = {0};
    train_and_save(dir, saved, &m);
    check_file(dir, saved, &m);
    restore_fresh(dir, saved);
    save_uninitialized(dir);
    char in_graph[sizeof dir + 16];
    snprintf(in_graph, sizeof in_graph, "%s/in-graph", dir);
    test_in_graph_client(in_graph);
    free_all(saved, m.nvars);
    free_model(&m);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    if (system(command) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
