/* test_session_master.c: the core's seam to a cluster (cluster_plugin.h).
 * With a cluster whose plugin has open_master, a session hands every run to
 * run_master and keeps fl_session_run's promises around it (outputs NULL
 * and the error's code on failure, fetch_ready per fetch); it refuses
 * fetch_to (its values live on the tasks); its saver runs the master
 * (check_saver); freeing the session closes the master. A pointer given as
 * the cluster that is not a live fl_cluster (a cast, a freed one) is
 * refused with a message, never followed. The DOT picture colours a node
 * by the task device the master ran it on. A fake cluster and master: no
 * cluster code. */
#include <unistd.h>

#include "tap.h"
#include "tools.h"
#include "cluster_plugin.h"
#include "runtime.h"

/* A cluster as the core sees one: the head first, then its own state. */
typedef struct {
    fl_cluster_head head;
    int opened, runs, closed;
    bool fail;
} fake;

static void *open_master(const fl_cluster *cluster, fl_graph *g, const fl_session_options *options)
{
    (void)g;
    (void)options;
    fake *f = (fake *)(void *)cluster;
    f->opened++;
    return f;
}

static int run_master(void *master, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                      fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    fake *f = master;
    (void)feeds, (void)nfeeds, (void)fetches, (void)targets, (void)ntargets;
    f->runs++;
    if (f->fail) {
        if (nfetches > 0) { /* a value the session must not hand back */
            outputs[0] = fl_tensor_new(FL_FLOAT32, fl_shape_make(0));
            fl_tensor_free(outputs[0]);
        }
        fl_set_error_code(FL_UNAVAILABLE, "/job:worker/task:1 was lost (a fake)");
        return -1;
    }
    for (int i = 0; i < nfetches; i++) {
        outputs[i] = fl_tensor_new(FL_FLOAT32, fl_shape_make(0));
        ((float *)outputs[i]->data)[0] = 42.0f + (float)i;
    }
    return 0;
}

static void close_master(void *master) { ((fake *)master)->closed++; }

static const char *node_device(void *master, const fl_node *n)
{
    (void)master;
    return strcmp(fl_node_name(n), "y") == 0 ? "/job:worker/task:1/device:CPU:0" : NULL;
}

/* The picture of a client's session asks the master where each node ran. */
static void check_picture(const fl_session *s)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_session_master.%ld.dot", (long)getpid());
    char *dot = fl_session_write_dot(s, path) == 0 ? read_text(path) : NULL;
    ok(dot && strstr(dot, "/job:worker/task:1/device:CPU:0"), "the DOT picture colours y by its task's device");
    free(dot);
    unlink(path);
}

/* A client's variables live on the tasks: its saver reads and writes them
 * in runs of its master (a failing one here), whose error it keeps. */
static void check_saver(fl_session *s, fake *f)
{
    char dir[] = "/tmp/test_session_master.XXXXXX", path[64];
    ok(mkdtemp(dir) != NULL, "a checkpoint directory");
    int runs = f->runs;
    ok(fl_session_save(s, dir, 1) == -1 && f->runs == runs + 1 && fl_session_error_code(s) == FL_UNAVAILABLE &&
       strstr(fl_session_error(s), "saving the variables from their tasks"),
       "a client's session saves through its master, whose failure it says: %s", fl_session_error(s));
    snprintf(path, sizeof path, "%s/model.ckpt-1", dir);
    fl_named_tensor t = {(char *)"v", fl_tensor_new(FL_FLOAT32, fl_shape_make(0))};
    memset(t.tensor->data, 0, sizeof(float));
    FILE *state = fl_checkpoint_write(path, &t, 1) == 0 ? fopen(strcat(strcpy(path, dir), "/checkpoint"), "w") : NULL;
    ok(state && fputs("model_checkpoint_path: \"model.ckpt-1\"\n", state) >= 0 && fclose(state) == 0,
       "a checkpoint of v is there");
    ok(fl_session_restore_latest(s, dir) == -1 && f->runs == runs + 2 && fl_session_error_code(s) == FL_UNAVAILABLE &&
       strstr(fl_session_error(s), "restoring the variables on their tasks"), "and restores through it: %s",
       fl_session_error(s));
    fl_tensor_free(t.tensor);
    char command[96];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    ok(system(command) == 0, "the directory is removed");
}

static int ready_calls;
static void on_ready(int index, const fl_tensor *value, void *user)
{
    (void)user;
    ready_calls += value && index == ready_calls;
}

static const fl_cluster_plugin client_plugin = {.open_master = open_master, .run_master = run_master,
                                                .close_master = close_master, .node_device = node_device};

static void test_master(void)
{
    fake f = {.head = {FL_CLUSTER_MAGIC, &client_plugin}};
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(0), "x");
    fl_node *y = fl_add(g, x, x, "y");
    fl_get_variable(g, "v", fl_shape_make(0), fl_zeros_initializer()); /* for the saver */
    fl_session_options opts = {.cluster = (const fl_cluster *)(void *)&f};
    fl_session *s = fl_session_new(g, &opts);
    ok(f.opened == 1, "making the session opens the master");
    fl_node *fetches[2] = {y, y};
    fl_tensor *out[2] = {NULL, NULL};
    fl_run_options ro = {.fetch_ready = on_ready};
    int rc = fl_session_run_with_options(s, &ro, NULL, 0, fetches, 2, out, NULL, 0);
    ok(rc == 0 && f.runs == 1 && out[0] && ((float *)out[0]->data)[0] == 42.0f && out[1] &&
       ((float *)out[1]->data)[0] == 43.0f, "a run is the master's, its outputs the caller's");
    ok(ready_calls == 2, "fetch_ready is called once per fetch, in order");
    check_picture(s);
    fl_tensor_free(out[0]);
    fl_tensor_free(out[1]);
    f.fail = true;
    rc = fl_session_run(s, NULL, 0, fetches, 2, out, NULL, 0);
    ok(rc == -1 && out[0] == NULL && out[1] == NULL, "a failed master run hands back no outputs");
    ok(fl_session_error_code(s) == FL_UNAVAILABLE && strstr(fl_session_error(s), "/job:worker/task:1"),
       "the session's error is the master's, with its code: %s", fl_session_error(s));
    check_saver(s, &f);
    int runs = f.runs;
    fl_fetch_target stay[2] = {{.device = "/gpu:0"}, {.device = "/gpu:0"}};
    rc = fl_session_run_with_options(s, &(fl_run_options){.fetch_to = stay}, NULL, 0, fetches, 2, out, NULL, 0);
    ok(rc == -1 && f.runs == runs && !out[0] && fl_session_error_code(s) == FL_UNIMPLEMENTED &&
       strstr(fl_session_error(s), "fetch_to and device feeds"),
       "and fetch_to, before the master runs: %s", fl_session_error(s));
    fl_session_free(s);
    ok(f.closed == 1, "freeing the session closes the master");
    fl_graph_free(g);
}

/* What the previous API handed a session: a table of functions whose first
 * field pointed at the cluster. */
typedef struct {
    void *state;
    void *functions[8];
} old_plugin_table;

/* A session given something that is not a cluster fails with a message
 * that says what to pass, and follows no pointer of it (this would crash
 * if it did: the functions are NULL). */
static void refused(const char *what, const fl_cluster *cluster, const char *says)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(0), "x");
    fl_node *y = fl_add(g, x, x, "y");
    fl_session_options opts = {.cluster = cluster};
    fl_session *s = fl_session_new(g, &opts);
    ok(s == NULL && fl_last_error_code() == FL_INVALID_ARGUMENT, "a session given %s is not made", what);
    contains(fl_last_error(), says, "fl_session_new says why");
    contains(fl_last_error(), "pass the cluster itself, as returned by fl_cluster_from_flags", "and what to pass");
    fl_session_free(s);
    fl_monitored_session_options mo = {.config = &opts};
    fl_monitored_session *ms = fl_monitored_training_session(g, fl_get_or_create_global_step(g), &mo);
    ok(ms == NULL, "so is a monitored session");
    contains(fl_last_error(), "fl_monitored_training_session: fl_session_options.cluster is", "naming its own call");
    fl_monitored_session_close(ms);
    (void)y;
    fl_graph_free(g);
}

static void test_not_a_cluster(void)
{
    fake f = {.head = {FL_CLUSTER_MAGIC, &client_plugin}};
    old_plugin_table old = {.state = &f};
    refused("the previous API's plugin table, cast", (const fl_cluster *)(void *)&old,
            "fl_session_new: fl_session_options.cluster is not an fl_cluster");
    fl_graph *graph = fl_graph_new();
    refused("a graph, cast", (const fl_cluster *)(void *)graph, "is not an fl_cluster");
    fl_graph_free(graph);
    fake freed = {.head = {FL_CLUSTER_FREED, &client_plugin}};
    refused("a cluster already freed", (const fl_cluster *)(void *)&freed, "is a cluster already freed");
    fake no_table = {.head = {FL_CLUSTER_MAGIC, NULL}};
    refused("a cluster head without a table", (const fl_cluster *)(void *)&no_table, "is not an fl_cluster");
    ok(f.opened == 0, "none of them was called");
}

int main(void)
{
    test_master();
    test_not_a_cluster();
    return done_testing();
}
