/* wire_step_trace.c: the trace field of PARTITION_DONE, a task's timings of
 * the step its client asked it to trace (RUN_PARTITION's FL_WIRE_RUN_TRACE,
 * TensorFlow's RunMetadata step_stats): the step's length, then one event
 * per op (name, op, device, start, duration; nanoseconds since the task's
 * step began). Every event lies within the step; encoder and parser refuse
 * the same things, and the parser bounds the count by the bytes left. */
#include <stdlib.h>

#include "wire_internal.h"

/* Each event takes three names of at least 2 bytes and two u64s. */
#define EVENT_MIN_BYTES (3u * 2u + 16u)

static const char *event_fault(uint64_t step_ns, uint64_t start_ns, uint64_t duration_ns)
{
    if (step_ns > FL_WIRE_MAX_STEP_NS)
        return "a step longer than a day";
    if (start_ns > step_ns || duration_ns > step_ns - start_ns)
        return "an event outside its step";
    return NULL;
}

int wire_put_step_trace(fl_wire_buf *buf, long start, const fl_wire_step_trace *trace)
{
    const fl_wire_type type = FL_WIRE_PARTITION_DONE;
    fl_wire_step_trace none = {0};
    const fl_wire_step_trace *t = trace ? trace : &none;
    if (t->count < 0 || t->count > FL_WIRE_MAX_LIST)
        return wire_abort(buf, start, "PARTITION_DONE: %d trace events, outside 0..%d", t->count, FL_WIRE_MAX_LIST);
    if (wire_put_u64(buf, t->step_ns) != 0 || wire_put_u32(buf, (uint32_t)t->count) != 0)
        return wire_abort(buf, start, "PARTITION_DONE: out of memory");
    for (int i = 0; i < t->count; i++) {
        const fl_wire_trace_event *e = &t->events[i];
        const char *fault = event_fault(t->step_ns, e->start_ns, e->duration_ns);
        if (fault)
            return wire_abort(buf, start, "PARTITION_DONE: trace event %d (%s): %s", i, e->name ? e->name : "?", fault);
        if (wire_put_name(buf, start, type, "trace event's name", e->name) != 0 ||
            wire_put_name(buf, start, type, "trace event's op", e->op) != 0 ||
            wire_put_name(buf, start, type, "trace event's device", e->device) != 0)
            return -1;
        if (wire_put_u64(buf, e->start_ns) != 0 || wire_put_u64(buf, e->duration_ns) != 0)
            return wire_abort(buf, start, "PARTITION_DONE: out of memory");
    }
    return 0;
}

static int get_event(wire_cursor *c, uint64_t step_ns, char **pool, fl_wire_trace_event *e)
{
    if (wire_get_pooled_name(c, "trace event's name", pool, &e->name) != 0 ||
        wire_get_pooled_name(c, "trace event's op", pool, &e->op) != 0 ||
        wire_get_pooled_name(c, "trace event's device", pool, &e->device) != 0 ||
        wire_get_u64(c, "trace event's start", &e->start_ns) != 0 ||
        wire_get_u64(c, "trace event's duration", &e->duration_ns) != 0)
        return -1;
    const char *fault = event_fault(step_ns, e->start_ns, e->duration_ns);
    return fault ? wire_fail(c, "trace event %s: %s", e->name, fault) : 0;
}

/* The events and their names share one block: the names take at most the
 * bytes left in the payload, so a hostile count asks for no more memory
 * than the frame brought. */
int wire_get_step_trace(wire_cursor *c, fl_wire_step_trace *out)
{
    fl_wire_step_trace t = {0};
    uint32_t n;
    if (wire_get_u64(c, "step length", &t.step_ns) != 0 || wire_get_u32(c, "trace events", &n) != 0)
        return -1;
    if (t.step_ns > FL_WIRE_MAX_STEP_NS)
        return wire_fail(c, "a traced step of %llu ns, longer than a day", (unsigned long long)t.step_ns);
    if (n > FL_WIRE_MAX_LIST)
        return wire_fail(c, "%u trace events, over the %d limit", (unsigned)n, FL_WIRE_MAX_LIST);
    if ((uint64_t)n * EVENT_MIN_BYTES > c->left)
        return wire_fail(c, "%u trace events cannot fit in the %zu bytes left", (unsigned)n, c->left);
    t.count = (int)n;
    if (n > 0 && !(t.storage = malloc((size_t)n * sizeof *t.events + c->left + 1))) /* untraced: none */
        return wire_fail(c, "out of memory");
    t.events = t.storage;
    char *pool = t.storage ? (char *)(t.events + n) : NULL;
    for (int i = 0; i < t.count; i++)
        if (get_event(c, t.step_ns, &pool, &t.events[i]) != 0) {
            fl_wire_step_trace_free(&t);
            return -1;
        }
    *out = t;
    return 0;
}

void fl_wire_step_trace_free(fl_wire_step_trace *t)
{
    free(t->storage);
    memset(t, 0, sizeof *t);
}
