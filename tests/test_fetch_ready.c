/* test_fetch_ready.c: fl_run_options' fetch_ready, the hook chapter 6's
 * lab reduces gradients from during the backward pass, and
 * fl_session_trace_event, which puts its collectives on the timeline.
 * The callback fires once per fetch, on the caller's thread, before the
 * run returns, with the final value, and early: before a slow chain queued
 * after the value ends. A run that fails early calls nothing; one that
 * fails late hands back no outputs. Runs on /cpu:0, and on /gpu:0 too when
 * an OpenCL device is there; run under ThreadSanitizer by make test-threads. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "session_internal.h" /* the recorded events, to read their times */

enum { N = 256, CHAIN = 8, MAX_CALLS = 16 };

/* What the callback saw. */
typedef struct {
    int calls, per_index[MAX_CALLS], order[MAX_CALLS]; /* order: the index of each call */
    const fl_tensor *value[MAX_CALLS];
    float first[MAX_CALLS]; /* element 0 when handed over */
    double at_us[MAX_CALLS];
    bool other_thread;
    pthread_t caller;
} seen;

static double monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void record(int index, const fl_tensor *value, void *user)
{
    seen *w = user;
    if (w->calls < MAX_CALLS)
        w->order[w->calls] = index;
    w->calls++;
    if (index < 0 || index >= MAX_CALLS)
        return;
    w->per_index[index]++;
    w->value[index] = value;
    w->first[index] = fl_tensor_floats(value) ? fl_tensor_floats(value)[0] : -1;
    w->at_us[index] = monotonic_us();
    w->other_thread |= !pthread_equal(pthread_self(), w->caller);
}

static fl_session *initialized_session(fl_graph *g)
{
    fl_node *init = fl_global_variables_initializer(g);
    fl_session *s = fl_session_new(g, &(fl_session_options){.allow_soft_placement = true});
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) == 0)
        return s;
    diag("initializing: %s", fl_session_error(s));
    fl_session_free(s);
    return NULL;
}

/* On device: `early` = sum(x), then a slow chain of matmuls and its sum. */
typedef struct {
    fl_graph *g;
    fl_node *early, *late, *last_matmul;
} chain_graph;

static chain_graph build_chain(const char *device)
{
    chain_graph c = {fl_graph_new(), NULL, NULL, NULL};
    fl_device_scope_push(c.g, device);
    fl_node *x = fl_get_variable(c.g, "x", fl_shape_make(1, 8), fl_constant_initializer(0.5f));
    c.early = fl_reduce_sum(c.g, x, NULL, 0, false, "early");
    fl_node *w = fl_get_variable(c.g, "w", fl_shape_make(2, N, N), fl_constant_initializer(1.0f / N));
    fl_node *h = w;
    for (int i = 0; i < CHAIN; i++)
        h = c.last_matmul = fl_matmul(c.g, h, w, false, false, NULL);
    c.late = fl_reduce_sum(c.g, h, NULL, 0, false, "late");
    fl_device_pop(c.g);
    return c;
}

static const fl_trace_event *event_of(const fl_session *s, const fl_node *n)
{
    for (int i = s->trace.nevents - 1; i >= 0; i--)
        if (s->trace.events[i].node == n->id && s->trace.events[i].copy_of == -1)
            return &s->trace.events[i];
    return NULL;
}

/* Fetches {early, late, early}: three calls, one per index, each with the
 * tensor the run returns and its final value; early's first. On /cpu:0,
 * where ops run in creation order, early's call comes before the chain's
 * last matmul has ended; on /gpu:0 only the order is certain (a loaded
 * host may see the device finish the chain before it copies early). */
static void once_per_fetch(const char *device)
{
    chain_graph c = build_chain(device);
    fl_session *s = initialized_session(c.g);
    if (!ok(s != NULL, "%s: the variables initialize", device)) {
        fl_graph_free(c.g);
        return;
    }
    seen w = {.caller = pthread_self()};
    fl_run_options options = {.fetch_ready = record, .user = &w};
    fl_tensor *out[3] = {NULL, NULL, NULL};
    fl_node *fetches[3] = {c.early, c.late, c.early};
    fl_session_set_tracing(s, true);
    int rc = fl_session_run_with_options(s, &options, NULL, 0, fetches, 3, out, NULL, 0);
    if (!ok(rc == 0, "%s: a run with fetch_ready succeeds", device))
        diag("%s", fl_session_error(s));
    ok(w.calls == 3 && w.per_index[0] == 1 && w.per_index[1] == 1 && w.per_index[2] == 1,
       "%s: fetch_ready fires once per fetch, a node fetched twice twice (%d calls)", device, w.calls);
    bool same = rc == 0;
    for (int i = 0; same && i < 3; i++)
        same = w.value[i] == out[i] && w.first[i] == fl_tensor_floats(out[i])[0];
    ok(same, "%s: each call has the tensor the run returns, with its final value", device);
    ok(rc == 0 && w.first[0] == 4.0f && fabsf(w.first[1] - (float)N) < 1e-2f,
       "%s: early = 4, late = %d", device, N);
    ok(!w.other_thread, "%s: every call comes on the thread that called the run", device);
    ok(w.calls == 3 && w.order[0] != 1 && w.order[1] != 1 && w.order[2] == 1,
       "%s: both fetches of early are handed over before late (calls: %d, %d, %d)", device,
       w.order[0], w.order[1], w.order[2]);
    const fl_trace_event *last = event_of(s, c.last_matmul);
    double chain_end = last ? s->trace.origin_us + last->start_us + last->duration_us : 0;
    if (strcmp(device, "/cpu:0") == 0 &&
        !ok(last && w.at_us[0] < chain_end, "%s: early is handed over before the chain's last "
            "matmul ends", device))
        diag("early at %.0f us, the chain ended at %.0f us", w.at_us[0], chain_end);
    for (int i = 0; i < 3; i++)
        fl_tensor_free(out[i]);
    fl_session_free(s);
    fl_graph_free(c.g);
}

/* An unfed placeholder fails the run before any node runs: no call. */
static void no_call_when_failing_early(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *p = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 2), "p");
    fl_node *doubled = fl_mul(g, p, fl_scalar(g, 2.0f, NULL), "doubled");
    fl_session *s = fl_session_new(g, NULL);
    seen w = {.caller = pthread_self()};
    fl_tensor *out = (fl_tensor *)&w; /* not NULL: the run must clear it */
    int rc = fl_session_run_with_options(s, &(fl_run_options){.fetch_ready = record, .user = &w}, NULL, 0, &doubled, 1,
                                         &out, NULL, 0);
    ok(rc == -1 && w.calls == 0 && out == NULL,
       "an unfed placeholder: the run fails, calls nothing and returns no output (%d calls)", w.calls);
    fl_session_free(s);
    fl_graph_free(g);
}

/* /cpu:0 hands `early` over, then an Add of mismatched fed shapes fails:
 * the run returns -1 and no outputs, the one it handed over included. */
static void no_outputs_when_failing_late(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/cpu:0");
    fl_tensor *value = fl_tensor_from_floats(fl_shape_make(1, 2), (float[]){1, 2});
    fl_node *x = fl_constant(g, value, "x");
    fl_tensor_free(value);
    fl_node *early = fl_reduce_sum(g, x, NULL, 0, false, "early");
    fl_node *a = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, -1), "a");
    fl_node *b = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, -1), "b");
    fl_node *bad = fl_add(g, a, b, "bad");
    fl_device_pop(g);
    fl_tensor *va = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 3));
    fl_tensor *vb = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 4));
    fl_session *s = fl_session_new(g, NULL);
    seen w = {.caller = pthread_self()};
    fl_tensor *out[2];
    int rc = fl_session_run_with_options(s, &(fl_run_options){.fetch_ready = record, .user = &w},
                                         (fl_feed[]){{a, va}, {b, vb}}, 2,
                                         (fl_node *[]){early, bad}, 2, out, NULL, 0);
    ok(rc == -1 && strstr(fl_session_error(s), "bad"), "Add of [3] and [4] fails the run, naming "
       "bad (%s)", fl_session_error(s));
    ok(w.calls == 1 && w.per_index[0] == 1 && w.first[0] == 3.0f,
       "early (3) was handed over before the failure (%d calls)", w.calls);
    ok(out[0] == NULL && out[1] == NULL, "and the failed run hands back no outputs");
    fl_tensor_free(va);
    fl_tensor_free(vb);
    fl_session_free(s);
    fl_graph_free(g);
}

/* NULL options, or options without a callback, are fl_session_run. */
static void no_options(void)
{
    chain_graph c = build_chain("/cpu:0");
    fl_session *s = initialized_session(c.g);
    fl_tensor *out = NULL, *again = NULL;
    int rc = s ? fl_session_run_with_options(s, NULL, NULL, 0, &c.early, 1, &out, NULL, 0) : -1;
    int rc2 = s ? fl_session_run_with_options(s, &(fl_run_options){0}, NULL, 0, &c.early, 1,
                                              &again, NULL, 0) : -1;
    ok(rc == 0 && rc2 == 0 && fl_tensor_floats(out)[0] == 4.0f && fl_tensor_floats(again)[0] == 4.0f,
       "NULL options and options without fetch_ready run as fl_session_run");
    fl_tensor_free(out);
    fl_tensor_free(again);
    fl_session_free(s);
    fl_graph_free(c.g);
}

/* A second thread adds events while the session runs. */
typedef struct {
    fl_session *s;
    int added;
} adder;

static void *add_events(void *arg)
{
    adder *a = arg;
    for (int i = 0; i < 50; i++) {
        double t = monotonic_us();
        fl_session_trace_event(a->s, "comm \"thread\"", "collective", t, t + 5);
        a->added++;
    }
    return NULL;
}

static void external_events(const char *dir)
{
    chain_graph c = build_chain("/cpu:0");
    fl_session *s = initialized_session(c.g);
    fl_session_trace_event(s, "lane", "before tracing", 0, 1); /* not recorded */
    fl_session_set_tracing(s, true);
    adder a = {s, 0};
    pthread_t thread;
    bool started = pthread_create(&thread, NULL, add_events, &a) == 0;
    fl_tensor *out = NULL;
    int rc = fl_session_run(s, NULL, 0, &c.late, 1, &out, NULL, 0);
    if (started)
        pthread_join(thread, NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    ok(started && rc == 0 && fl_session_write_trace(s, path) == 0,
       "a run traces while another thread adds 50 events");
    char text[1 << 16] = "";
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[got] = '\0';
    if (f)
        fclose(f);
    int count = 0;
    for (const char *p = text; (p = strstr(p, "\"name\":\"collective\"")); p++)
        count++;
    ok(count == 50, "the trace has the 50 events (%d)", count);
    ok(strstr(text, "\"args\":{\"name\":\"comm \\\"thread\\\"\"}") != NULL,
       "on a lane of their own, its name escaped in the JSON");
    ok(!strstr(text, "before tracing"), "an event added while tracing was off is not recorded");
    fl_tensor_free(out);
    fl_session_free(s);
    fl_graph_free(c.g);
    remove(path);
}

int main(void)
{
    setenv("POCL_DEVICES", "pthread", 0);
    setenv("POCL_MAX_PTHREAD_COUNT", "1", 0);
    char dir[] = "/tmp/test_fetch_ready.XXXXXX";
    if (!mkdtemp(dir))
        skip_all("no scratch directory in /tmp");
    once_per_fetch("/cpu:0");
    if (fl_accelerator_count() >= 1)
        once_per_fetch("/gpu:0");
    else
        skip("fetch_ready on /gpu:0", "no accelerator here (FLOWLAB_BACKEND=host, or no OpenCL device)");
    no_call_when_failing_early();
    no_outputs_when_failing_late();
    no_options();
    external_events(dir);
    rmdir(dir);
    return done_testing();
}
