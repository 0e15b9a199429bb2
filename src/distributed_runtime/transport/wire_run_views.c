/* wire_run_views.c: the bodies of a partition's run, checked and read into views:
 * RUN_PARTITION (RunGraphRequest: feeds, fetches, targets) and PARTITION_DONE
 * (RunGraphResponse: the fetched values and the task's timings of the step,
 * TensorFlow's StepStats). Lists are bounded, names checked, every trace event
 * lies within its step. The views' arrays come from the parse's arena. */
#include <stdio.h>
#include <stdlib.h>

#include "wire_internal.h"

static int check_names(fl_wire_type type, const char *list, const char *what, char *const *names, size_t n,
                       fl_status *st)
{
    if (wire_check_count(type, list, n, st) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (wire_check_field(type, what, names[i], st) != 0)
            return -1;
    return 0;
}

int wire_view_run(const Flowlab__RunGraphRequest *m, fl_wire_arena *a, fl_wire_run_partition *out, fl_status *st)
{
    const fl_wire_type type = FL_WIRE_RUN_PARTITION;
    fl_wire_tensor value;
    if (wire_check_count(type, "feeds", m->n_send, st) != 0 ||
        check_names(type, "fetches", "fetch", m->recv_key, m->n_recv_key, st) != 0 ||
        check_names(type, "targets", "target", m->target, m->n_target, st) != 0)
        return -1;
    const char **names = a ? wire_arena_alloc(a, (m->n_send + 1) * sizeof *names) : NULL;
    fl_wire_tensor *values = a ? wire_arena_alloc(a, (m->n_send + 1) * sizeof *values) : NULL;
    if (a && (!names || !values))
        return wire_refuse(type, st, "out of memory for %zu feeds", m->n_send);
    for (size_t i = 0; i < m->n_send; i++) {
        const Flowlab__NamedTensorProto *feed = m->send[i];
        if (wire_check_field(type, "feed", feed->name, st) != 0 ||
            wire_view_tensor(type, feed->name, feed->tensor, NULL, values ? &values[i] : &value, st) != 0)
            return -1;
        if (names)
            names[i] = feed->name;
    }
    if (!out)
        return 0;
    *out = (fl_wire_run_partition){.handle = m->graph_handle, .step_id = m->step_id,
                                   .flags = m->trace ? FL_WIRE_RUN_TRACE : 0, .nfeeds = (int)m->n_send,
                                   .feed_names = names, .feed_values = values};
    out->lists[0] = (fl_wire_name_list){(int)m->n_recv_key, (const char *const *)m->recv_key};
    out->lists[1] = (fl_wire_name_list){(int)m->n_target, (const char *const *)m->target};
    return 0;
}

/* ---- PARTITION_DONE ---- */

/* Each device's peak bytes: at most FL_WIRE_MAX_PEAKS, each device named. */
static int view_peaks(const Flowlab__StepStats *s, fl_wire_arena *a, fl_wire_step_trace *out, fl_status *st)
{
    const fl_wire_type type = FL_WIRE_PARTITION_DONE;
    if (s->n_memory > FL_WIRE_MAX_PEAKS)
        return wire_refuse(type, st, "%zu device peaks in a trace, more than %d", s->n_memory, FL_WIRE_MAX_PEAKS);
    fl_wire_device_peak *peaks = a ? wire_arena_alloc(a, (s->n_memory + 1) * sizeof *peaks) : NULL;
    if (a && !peaks)
        return wire_refuse(type, st, "out of memory for %zu device peaks", s->n_memory);
    for (size_t i = 0; i < s->n_memory; i++) {
        const Flowlab__AllocatorMemoryUsed *m = s->memory[i];
        if (wire_check_field(type, "device peak's device", m->allocator_name, st) != 0)
            return -1;
        if (peaks)
            peaks[i] = (fl_wire_device_peak){m->allocator_name, m->peak_bytes};
    }
    if (out) {
        out->npeaks = (int)s->n_memory;
        out->peaks = peaks;
    }
    return 0;
}

static int view_trace(const Flowlab__StepStats *s, fl_wire_arena *a, fl_wire_step_trace *out, fl_status *st)
{
    const fl_wire_type type = FL_WIRE_PARTITION_DONE;
    if (!s)
        return 0; /* untraced */
    if (s->step_ns > FL_WIRE_MAX_STEP_NS)
        return wire_refuse(type, st, "a traced step of %llu ns, longer than a day", (unsigned long long)s->step_ns);
    if (wire_check_count(type, "trace events", s->n_node_stats, st) != 0)
        return -1;
    fl_wire_trace_event *events = a ? wire_arena_alloc(a, (s->n_node_stats + 1) * sizeof *events) : NULL;
    if (a && !events)
        return wire_refuse(type, st, "out of memory for %zu trace events", s->n_node_stats);
    for (size_t i = 0; i < s->n_node_stats; i++) {
        const Flowlab__NodeExecStats *e = s->node_stats[i];
        if (wire_check_field(type, "trace event's name", e->node_name, st) != 0 ||
            wire_check_field(type, "trace event's op", e->op, st) != 0 ||
            wire_check_field(type, "trace event's device", e->device, st) != 0)
            return -1;
        if (e->start_ns > s->step_ns || e->duration_ns > s->step_ns - e->start_ns)
            return wire_refuse(type, st, "trace event %zu (%s): an event outside its step", i, e->node_name);
        if (events)
            events[i] = (fl_wire_trace_event){e->node_name, e->op, e->device, e->start_ns, e->duration_ns};
    }
    if (out)
        *out = (fl_wire_step_trace){.step_ns = s->step_ns, .count = (int)s->n_node_stats, .events = events};
    return view_peaks(s, a, out, st);
}

int wire_view_done(const Flowlab__RunGraphResponse *m, fl_wire_arena *a, fl_wire_partition_done *out, fl_status *st)
{
    const fl_wire_type type = FL_WIRE_PARTITION_DONE;
    fl_wire_tensor value;
    if (wire_check_count(type, "values", m->n_recv, st) != 0 || view_trace(m->step_stats, a, out ? &out->trace : NULL, st) != 0)
        return -1;
    fl_wire_tensor *values = a ? wire_arena_alloc(a, (m->n_recv + 1) * sizeof *values) : NULL;
    if (a && !values)
        return wire_refuse(type, st, "out of memory for %zu values", m->n_recv);
    for (size_t i = 0; i < m->n_recv; i++) {
        char what[32];
        snprintf(what, sizeof what, "value %zu", i);
        if (wire_view_tensor(type, what, m->recv[i], NULL, values ? &values[i] : &value, st) != 0)
            return -1;
    }
    if (out) {
        out->count = (int)m->n_recv;
        out->values = values;
    }
    return 0;
}

void fl_wire_step_trace_free(fl_wire_step_trace *t)
{
    free(t->storage);
    memset(t, 0, sizeof *t);
}

/* src's text at *pool, which moves past it. */
static const char *copy_name(char **pool, const char *src)
{
    size_t len = strlen(src) + 1;
    const char *at = memcpy(*pool, src, len);
    *pool += len;
    return at;
}

/* The events, the peaks and their names in one block: a traced step's one
 * allocation. */
void fl_wire_step_trace_copy(const fl_wire_step_trace *t, fl_wire_step_trace *out)
{
    size_t names = 0;
    for (int i = 0; i < t->count; i++)
        names += strlen(t->events[i].name) + strlen(t->events[i].op) + strlen(t->events[i].device) + 3;
    for (int i = 0; i < t->npeaks; i++)
        names += strlen(t->peaks[i].device) + 1;
    *out = (fl_wire_step_trace){.step_ns = t->step_ns};
    size_t tables = (size_t)t->count * sizeof *t->events + (size_t)t->npeaks * sizeof *t->peaks;
    if ((t->count == 0 && t->npeaks == 0) || !(out->storage = malloc(tables + names)))
        return; /* untraced; or out of memory, which loses the timings only */
    out->events = out->storage;
    out->peaks = (fl_wire_device_peak *)(out->events + t->count);
    out->count = t->count;
    out->npeaks = t->npeaks;
    char *pool = (char *)(out->peaks + t->npeaks);
    for (int i = 0; i < t->count; i++) {
        const fl_wire_trace_event *e = &t->events[i];
        out->events[i] = (fl_wire_trace_event){copy_name(&pool, e->name), copy_name(&pool, e->op),
                                               copy_name(&pool, e->device), e->start_ns, e->duration_ns};
    }
    for (int i = 0; i < t->npeaks; i++)
        out->peaks[i] = (fl_wire_device_peak){copy_name(&pool, t->peaks[i].device), t->peaks[i].peak_bytes};
}
