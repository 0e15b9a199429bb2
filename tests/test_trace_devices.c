/* test_trace_devices.c: the timeline shows when ops really ran on
 * asynchronous devices. Two towers of heavy matmuls, one on /gpu:0 and one
 * on /gpu:1 (two PoCL devices), and a tiny Add on /cpu:0 that joins them.
 * The host enqueues each tower in microseconds; only the devices' own times
 * can show the towers computing at the same time. (PoCL 3.1 gives its
 * pthread devices one shared pool of POCL_MAX_PTHREAD_COUNT workers, so
 * with 1 the towers take turns on one thread: at the same time, not in
 * parallel. Their ops' intervals overlap either way.) */
#include <unistd.h>

#include "tools.h"
#include "tap.h"
#include "flowlab.h"
#include "session_internal.h" /* the recorded events, to measure them */

enum { N = 384, CHAIN = 4 };

typedef struct {
    fl_graph *g;
    fl_node *mm[2][CHAIN], *sum[2], *total;
    fl_tensor *x, *w;
} model;

/* Values in [0, scale); with w's scale 2/N each product keeps the entries
 * near where they were, far from overflow. */
static fl_tensor *matrix(unsigned seed, float scale)
{
    float *v = malloc(sizeof(float) * N * N);
    for (int i = 0; i < N * N; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = scale * (float)((seed >> 8) & 0xffff) / 65536.0f;
    }
    fl_tensor *t = fl_tensor_from_floats(fl_shape_make(2, N, N), v);
    free(v);
    return t;
}

static model build(void)
{
    model m = {.g = fl_graph_new(), .x = matrix(1, 2.0f), .w = matrix(2, 2.0f / N)};
    for (int t = 0; t < 2; t++) {
        char device[16];
        snprintf(device, sizeof device, "/gpu:%d", t);
        fl_device_scope_push(m.g, device);
        fl_node *h = fl_constant(m.g, m.x, NULL), *w = fl_constant(m.g, m.w, NULL);
        for (int i = 0; i < CHAIN; i++)
            h = m.mm[t][i] = fl_matmul(m.g, h, w, false, false, NULL);
        m.sum[t] = fl_reduce_sum(m.g, h, NULL, 0, false, NULL);
        fl_device_pop(m.g);
    }
    fl_device_scope_push(m.g, "/cpu:0");
    m.total = fl_add(m.g, m.sum[0], m.sum[1], "total");
    fl_device_pop(m.g);
    if (fl_graph_error(m.g))
        diag("graph error: %s", fl_graph_error(m.g));
    return m;
}

/* The fetched total, or NAN when the run fails. */
static float run_total(fl_session *s, const model *m)
{
    fl_tensor *out = NULL;
    if (fl_session_run(s, NULL, 0, &m->total, 1, &out, NULL, 0) != 0) {
        diag("run failed: %s", fl_session_error(s));
        return NAN;
    }
    float total = fl_tensor_floats(out)[0];
    fl_tensor_free(out);
    return total;
}

/* The events from `from` on: where each device was busy, end to end. */
typedef struct {
    double first, last, busy; /* earliest start, latest end, sum of durations */
    int count;
} lane;

static lane lane_of(const fl_session *s, int from, const char *device)
{
    lane l = {INFINITY, -INFINITY, 0, 0};
    for (int i = from; i < s->trace.nevents; i++) {
        const fl_trace_event *e = &s->trace.events[i];
        if (strcmp(e->device->name, device) != 0)
            continue;
        l.first = fmin(l.first, e->start_us);
        l.last = fmax(l.last, e->start_us + e->duration_us);
        l.busy += e->duration_us;
        l.count++;
    }
    return l;
}

static const fl_trace_event *event_of(const fl_session *s, int from, const fl_node *n)
{
    for (int i = from; i < s->trace.nevents; i++)
        if (s->trace.events[i].node == n->id && s->trace.events[i].copy_of < 0)
            return &s->trace.events[i];
    return NULL;
}

/* The copies into n, one per input that came from another device. */
static int copies_into(const fl_session *s, int from, const fl_node *n)
{
    int count = 0;
    for (int i = from; i < s->trace.nevents; i++)
        count += s->trace.events[i].node == n->id && s->trace.events[i].copy_of >= 0 && s->trace.events[i].duration_us >= 0;
    return count;
}

/* Every op of the run appears once, on its own device, with a duration. */
static void check_every_op(const fl_session *s, int from, const model *m)
{
    int missing = 0, misplaced = 0, empty = 0;
    for (int t = 0; t < 2; t++) {
        char device[16];
        snprintf(device, sizeof device, "/gpu:%d", t);
        for (int i = 0; i <= CHAIN; i++) {
            const fl_trace_event *e = event_of(s, from, i < CHAIN ? m->mm[t][i] : m->sum[t]);
            missing += !e;
            misplaced += e && strcmp(e->device->name, device) != 0;
            empty += e && !(e->duration_us > 0);
        }
    }
    ok(missing == 0 && s->trace.nevents - from == 2 * (CHAIN + 1) + 1 + 2,
       "every op appears once, plus two copies (%d events, %d missing)", s->trace.nevents - from, missing);
    ok(copies_into(s, from, m->total) == 2, "both towers' sums are copied to /cpu:0, each a Copy event");
    ok(misplaced == 0, "each tower's ops are on its own device's lane");
    ok(empty == 0, "every device op has a positive duration");
    const fl_trace_event *add = event_of(s, from, m->total);
    ok(add && strcmp(add->device->name, "/cpu:0") == 0, "the Add is on /cpu:0's lane");
}

/* How long both devices were running an op at once. A lane's ops do not
 * overlap each other (an in-order queue), so the pairs' overlaps add up. */
static double both_busy(const fl_session *s, int from)
{
    double total = 0;
    for (int i = from; i < s->trace.nevents; i++) {
        const fl_trace_event *a = &s->trace.events[i];
        for (int j = from; j < s->trace.nevents && strcmp(a->device->name, "/gpu:0") == 0; j++) {
            const fl_trace_event *b = &s->trace.events[j];
            if (strcmp(b->device->name, "/gpu:1") != 0)
                continue;
            double start = fmax(a->start_us, b->start_us);
            double end = fmin(a->start_us + a->duration_us, b->start_us + b->duration_us);
            total += fmax(0, end - start);
        }
    }
    return total;
}

/* The two lanes overlap, the times are those of the run, and the Add (timed
 * on the host) starts after both towers end: the clocks agree. */
static void check_overlap(const fl_session *s, int from, const model *m, double run_start,
                          double run_end)
{
    lane a = lane_of(s, from, "/gpu:0"), b = lane_of(s, from, "/gpu:1");
    double span = fmax(a.last, b.last) - fmin(a.first, b.first), together = both_busy(s, from);
    diag("/gpu:0 busy %.1f ms in [%.1f, %.1f] ms; /gpu:1 busy %.1f ms in [%.1f, %.1f] ms",
         a.busy / 1e3, a.first / 1e3, a.last / 1e3, b.busy / 1e3, b.first / 1e3, b.last / 1e3);
    diag("both busy at once for %.1f ms; busy time / span = %.2f", together / 1e3,
         (a.busy + b.busy) / span);
    ok(together > 0.25 * fmin(a.busy, b.busy),
       "the towers ran at the same time: both busy for %.1f ms of the shorter's %.1f ms",
       together / 1e3, fmin(a.busy, b.busy) / 1e3);
    const double slack = 1000; /* microseconds: clock sync errs by one wake-up */
    ok(fmin(a.first, b.first) >= run_start - slack && fmax(a.last, b.last) <= run_end + slack,
       "device times lie within the run, as the host saw it");
    /* A clock in the wrong unit would be off by 1000x; a host preempted
     * on a loaded machine stretches the run's wall time by a few times. */
    ok(span > 0.1 * (run_end - run_start), "the devices' span is on the run's scale (%.1f of %.1f ms)",
       span / 1e3, (run_end - run_start) / 1e3);
    const fl_trace_event *add = event_of(s, from, m->total);
    ok(add && add->start_us >= fmax(a.last, b.last) - slack,
       "the Add on the host starts after both towers end");
}

/* One traced run, measured from its own start and end on the trace clock;
 * returns the index of its first event. */
static int traced_run(fl_session *s, const model *m, float want, const char *what)
{
    int from = s->trace.nevents;
    double start = s->trace.origin_us ? fl_now_us() - s->trace.origin_us : 0; /* else the run sets it */
    float got = run_total(s, m);
    double end = fl_now_us() - s->trace.origin_us;
    ok(got == want, "%s: the same total as untraced (%g)", what, (double)got);
    check_every_op(s, from, m);
    check_overlap(s, from, m, start, end);
    return from;
}

/* The second run's ops all start after the first run's have ended. */
static void check_in_order(const fl_session *s, int second)
{
    double first_end = -INFINITY, second_start = INFINITY;
    for (int i = 0; i < s->trace.nevents; i++) {
        const fl_trace_event *e = &s->trace.events[i];
        if (i < second)
            first_end = fmax(first_end, e->start_us + e->duration_us);
        else
            second_start = fmin(second_start, e->start_us);
    }
    ok(second_start >= first_end - 1000, "one timeline: the second run follows the first (%.1f ms later)",
       (second_start - first_end) / 1e3);
}

static int count_of(const char *text, const char *part)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, part)); p += strlen(part))
        n++;
    return n;
}

static void check_written(const fl_session *s, int nevents)
{
    char path[] = "/tmp/test_trace_devices.XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    ok(fd >= 0 && fl_session_write_trace(s, path) == 0, "the trace is written");
    char *json = read_text(path);
    ok(json && count_of(json, "\"ph\":\"X\"") == nevents, "one X event per op run (%d)", nevents);
    int lanes = 0;
    const char *names[] = {"/gpu:0", "/gpu:1", "/cpu:0"};
    for (int i = 0; i < 3; i++) {
        char line[128];
        snprintf(line, sizeof line, "\"ph\":\"M\",\"pid\":1,\"tid\":%%d,\"args\":{\"name\":\"%s\"}",
                 names[i]);
        for (int tid = 1; tid <= 3; tid++) {
            char want[128];
            snprintf(want, sizeof want, line, tid);
            lanes += json && strstr(json, want) != NULL;
        }
    }
    ok(lanes == 3, "/gpu:0, /gpu:1 and /cpu:0 each have a lane of their own");
    free(json);
    unlink(path);
}

int main(void)
{
    /* The copy path, as a GPU takes it: on PoCL a host op would read the
     * value where it lies (test_lab02 and test_fused_updates check that). */
    setenv("FLOWLAB_OPENCL_HOST_MEMORY", "0", 1);
    /* Before the first flowlab call: the device list is fixed at first use. */
    setenv("POCL_DEVICES", "pthread pthread", 1);
    setenv("POCL_MAX_PTHREAD_COUNT", "1", 1);
    setenv("FLOWLAB_BACKEND", "opencl", 1);
    if (fl_accelerator_count() < 2) {
        char why[600];
        snprintf(why, sizeof why, "two OpenCL devices are needed, found %d (%s)",
                 fl_accelerator_count(), fl_opencl_backend.why_unavailable());
        skip_all(why);
    }
    model m = build();
    fl_session *s = fl_session_new(m.g, NULL);
    float want = run_total(s, &m); /* warm: kernels built, buffers made */
    ok(isfinite(want), "an untraced run computes the total (%g)", (double)want);

    fl_session_set_tracing(s, true);
    traced_run(s, &m, want, "first traced run");
    check_in_order(s, traced_run(s, &m, want, "second traced run"));
    int nevents = s->trace.nevents;
    fl_session_set_tracing(s, false);

    ok(run_total(s, &m) == want, "an untraced run after tracing: the same total");
    ok(s->trace.nevents == nevents, "an untraced run records nothing");
    check_written(s, nevents);

    fl_session_free(s);
    fl_graph_free(m.g);
    fl_tensor_free(m.x);
    fl_tensor_free(m.w);
    return done_testing();
}
