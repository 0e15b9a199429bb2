/* test_session_master.c: the core's seam for a master in the client (in-graph
 * replication across tasks): with a plugin that has open_master, a session
 * hands every run to run_master and keeps fl_session_run's promises around
 * it (outputs NULL and the error's code on failure, fetch_ready per fetch);
 * it refuses fetch_to (its values live on the tasks); freeing the session
 * closes the master. A fake master: no cluster code. */
#include "tap.h"
#include "runtime.h"

typedef struct {
    int opened, runs, closed;
    bool fail;
} fake;

static void *open_master(void *state, fl_graph *g)
{
    (void)g;
    ((fake *)state)->opened++;
    return state;
}

static int run_master(void *master, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                      fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    fake *f = master;
    (void)feeds, (void)nfeeds, (void)fetches, (void)targets, (void)ntargets;
    f->runs++;
    if (f->fail) {
        outputs[0] = fl_tensor_new(FL_FLOAT32, fl_shape_make(0)); /* the session must not hand it back */
        fl_tensor_free(outputs[0]);
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

static int ready_calls;
static void on_ready(int index, const fl_tensor *value, void *user)
{
    (void)user;
    ready_calls += value && index == ready_calls;
}

int main(void)
{
    fake f = {0};
    fl_cluster_plugin plugin = {.state = &f, .open_master = open_master, .run_master = run_master,
                                .close_master = close_master};
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(0), "x");
    fl_node *y = fl_add(g, x, x, "y");
    fl_session_options opts = {.cluster = &plugin};
    fl_session *s = fl_session_new(g, &opts);
    ok(f.opened == 1, "making the session opens the master");
    fl_node *fetches[2] = {y, y};
    fl_tensor *out[2] = {NULL, NULL};
    fl_run_options ro = {.fetch_ready = on_ready};
    int rc = fl_session_run_with_options(s, &ro, NULL, 0, fetches, 2, out, NULL, 0);
    ok(rc == 0 && f.runs == 1 && out[0] && ((float *)out[0]->data)[0] == 42.0f && out[1] &&
       ((float *)out[1]->data)[0] == 43.0f, "a run is the master's, its outputs the caller's");
    ok(ready_calls == 2, "fetch_ready is called once per fetch, in order");
    fl_tensor_free(out[0]);
    fl_tensor_free(out[1]);
    f.fail = true;
    rc = fl_session_run(s, NULL, 0, fetches, 2, out, NULL, 0);
    ok(rc == -1 && out[0] == NULL && out[1] == NULL, "a failed master run hands back no outputs");
    ok(fl_session_error_code(s) == FL_UNAVAILABLE && strstr(fl_session_error(s), "/job:worker/task:1"),
       "the session's error is the master's, with its code: %s", fl_session_error(s));
    ok(fl_session_save(s, "/tmp", 1) == -1 && fl_session_error_code(s) == FL_UNIMPLEMENTED,
       "a client's session refuses to save, saying why: %s", fl_session_error(s));
    ok(fl_session_restore_latest(s, "/tmp") == -1 && fl_session_error_code(s) == FL_UNIMPLEMENTED,
       "and to restore");
    int runs = f.runs;
    fl_fetch_target stay[2] = {{.device = "/gpu:0"}, {.device = "/gpu:0"}};
    rc = fl_session_run_with_options(s, &(fl_run_options){.fetch_to = stay}, NULL, 0, fetches, 2, out, NULL, 0);
    ok(rc == -1 && f.runs == runs && !out[0] && fl_session_error_code(s) == FL_UNIMPLEMENTED &&
       strstr(fl_session_error(s), "fetch_to and device feeds"),
       "and fetch_to, before the master runs: %s", fl_session_error(s));
    fl_session_free(s);
    ok(f.closed == 1, "freeing the session closes the master");
    fl_graph_free(g);
    return done_testing();
}
