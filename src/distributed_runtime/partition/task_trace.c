/* task_trace.c: a task's timings of one step its client asked it to trace
 * (RUN_PARTITION's FL_WIRE_RUN_TRACE): the partition's session traces the
 * step, and its ops become PARTITION_DONE's trace field, in nanoseconds
 * since the step began on this task, each on "/job:worker/task:1/cpu:0",
 * with each device's peak bytes in the step (fl_session_memory). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "task_trace.h"

void fl_task_trace_begin(fl_session *session, double *began_us)
{
    *began_us = fl_now_us();
    fl_session_set_tracing(session, true); /* a fresh timeline: it was off since the last step */
}

/* A name the wire takes, at *pool: 1..255 bytes of '!'..'~' (others
 * become '_'); *pool moves past it. */
static const char *put_name(char **pool, const char *prefix, const char *name)
{
    char *at = *pool;
    int len = snprintf(at, FL_WIRE_MAX_NAME + 1, "%s%s", prefix, name && name[0] ? name : "?");
    len = len > (int)FL_WIRE_MAX_NAME ? (int)FL_WIRE_MAX_NAME : len;
    for (int i = 0; i < len; i++)
        if (at[i] <= ' ' || at[i] > '~')
            at[i] = '_';
    *pool += len + 1;
    return at;
}

/* Microseconds as nanoseconds within [0, limit]. */
static uint64_t ns_within(double us, uint64_t limit)
{
    double ns = round(us * 1e3);
    return ns <= 0 ? 0 : ns >= (double)limit ? limit : (uint64_t)ns;
}

/* "/job:worker/task:1/" before a device of this task's ("/cpu:0" or "cpu:0"). */
static void device_prefix(const char *task, const char *device, char *out, size_t len)
{
    bool named = strncmp(device, "/job:", 5) == 0;
    snprintf(out, len, "%s%s", named ? "" : task, named || device[0] == '/' ? "" : "/");
}

/* One event: on its device's lane named with this task, its times clamped
 * to the step (a device's clock a hair outside it would be refused). */
static void take_event(const fl_step_event *e, const char *task, double began_us, uint64_t step_ns, char **pool,
                       fl_wire_trace_event *out)
{
    char prefix[FL_WIRE_MAX_NAME + 2];
    device_prefix(task, e->device, prefix, sizeof prefix);
    out->name = put_name(pool, "", e->name);
    out->op = put_name(pool, "", e->op);
    out->device = put_name(pool, prefix, e->device);
    out->start_ns = ns_within(e->start_us - began_us, step_ns);
    out->duration_ns = ns_within(e->duration_us, step_ns - out->start_ns);
}

/* The bytes the events' names take at most, ends included. */
static size_t name_bytes(const fl_step_event *events, int n, const char *task)
{
    size_t total = 1;
    for (int i = 0; i < n; i++)
        total += strlen(events[i].name) + strlen(events[i].op) + strlen(events[i].device) + strlen(task) + 8;
    return total;
}

/* Each device's peak in the step, on its device named with this task. */
static void take_peaks(const fl_device_memory *memory, int n, const char *task, char **pool, fl_wire_device_peak *out)
{
    for (int i = 0; i < n; i++) {
        char prefix[FL_WIRE_MAX_NAME + 2];
        device_prefix(task, memory[i].device, prefix, sizeof prefix);
        out[i] = (fl_wire_device_peak){put_name(pool, prefix, memory[i].device), memory[i].peak_bytes};
    }
}

void fl_task_trace_end(fl_session *session, const char *task, double began_us, fl_wire_step_trace *out)
{
    memset(out, 0, sizeof *out);
    out->step_ns = ns_within(fl_now_us() - began_us, FL_WIRE_MAX_STEP_NS);
    int n = fl_session_step_events(session, NULL, 0);
    n = n > FL_WIRE_MAX_LIST ? FL_WIRE_MAX_LIST : n;
    fl_step_event *events = fl_xcalloc((size_t)n + 1, sizeof *events);
    fl_session_step_events(session, events, n);
    fl_device_memory memory[FL_WIRE_MAX_PEAKS];
    int npeaks = fl_session_memory(session, memory, FL_WIRE_MAX_PEAKS);
    npeaks = npeaks < 0 ? 0 : npeaks > FL_WIRE_MAX_PEAKS ? FL_WIRE_MAX_PEAKS : npeaks;
    size_t peak_names = (size_t)npeaks * (strlen(task) + sizeof memory[0].device + 2);
    out->storage = fl_xmalloc((size_t)n * sizeof *out->events + (size_t)npeaks * sizeof *out->peaks +
                              name_bytes(events, n, task) + peak_names);
    out->events = out->storage;
    out->peaks = (fl_wire_device_peak *)(out->events + n);
    char *pool = (char *)(out->peaks + npeaks);
    for (int i = 0; i < n; i++)
        take_event(&events[i], task, began_us, out->step_ns, &pool, &out->events[i]);
    take_peaks(memory, npeaks, task, &pool, out->peaks);
    out->count = n;
    out->npeaks = npeaks;
    free(events);
    fl_session_set_tracing(session, false);
}
