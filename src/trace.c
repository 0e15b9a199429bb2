/* trace.c: a session's timeline. While tracing is on, the executor records
 * one event per op and per cross-device copy here (timed by the device
 * itself where it can); this file writes them as Chrome trace JSON, for
 * chrome://tracing or ui.perfetto.dev, one lane (thread) per device. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session_internal.h"

static const char *device_name(const fl_device *d) { return d ? d->name : "?"; }

void fl_session_open_trace(fl_session *s) { pthread_mutex_init(&s->trace.external_lock, NULL); }

void fl_session_close_trace(fl_session *s)
{
    free(s->trace.events);
    free(s->trace.external);
    pthread_mutex_destroy(&s->trace.external_lock);
}

void fl_session_trace_run_starts(fl_session *s)
{
    if (s->trace.on && s->trace.origin_us == 0)
        s->trace.origin_us = fl_now_us(); /* before any op: one origin for every lane */
}

/* Turning tracing on starts a fresh timeline; turning it off keeps the
 * events so they can still be written. */
void fl_session_set_tracing(fl_session *s, bool on)
{
    if (!s)
        return;
    fl_trace_state *t = &s->trace;
    pthread_mutex_lock(&t->external_lock);
    if (on && !t->on) {
        t->nevents = 0;
        t->nexternal = 0;
        t->origin_us = 0;
    }
    t->on = on;
    t->external_on = on;
    pthread_mutex_unlock(&t->external_lock);
}

/* Another thread's event: kept apart from the executor's, under a lock, so
 * that the executor records its own without one. */
void fl_session_trace_event(fl_session *s, const char *lane, const char *name, double start_us,
                            double end_us)
{
    fl_session_trace_span(s, lane, name, "external", start_us, end_us);
}

void fl_session_trace_span(fl_session *s, const char *lane, const char *name, const char *kind,
                           double start_us, double end_us)
{
    if (!s || !lane || !name || !kind)
        return;
    fl_trace_state *t = &s->trace;
    pthread_mutex_lock(&t->external_lock);
    if (t->external_on) {
        if (t->nexternal == t->external_cap) {
            t->external_cap = t->external_cap ? t->external_cap * 2 : 64;
            t->external = fl_xrealloc(t->external, (size_t)t->external_cap * sizeof *t->external);
        }
        fl_external_event *e = &t->external[t->nexternal++];
        snprintf(e->lane, sizeof e->lane, "%s", lane);
        snprintf(e->name, sizeof e->name, "%s", name);
        snprintf(e->kind, sizeof e->kind, "%s", kind);
        e->start_us = start_us;
        e->end_us = end_us;
    }
    pthread_mutex_unlock(&t->external_lock);
}

static void add_event(fl_session *s, int node, int copy_of, const fl_device *d, double start,
                      double end)
{
    fl_trace_state *t = &s->trace;
    if (t->nevents == t->events_cap) {
        t->events_cap = t->events_cap ? t->events_cap * 2 : 1024;
        t->events = fl_xrealloc(t->events, (size_t)t->events_cap * sizeof *t->events);
    }
    /* The op the step ran under the node's id: a fused one shows as such. */
    const char *op = fl_node_op_type(fl_session_planned(s, node));
    t->events[t->nevents++] = (fl_trace_event){node, d, start - t->origin_us, end - start, copy_of, 0, NULL, op};
}

void fl_session_trace_op(fl_session *s, const fl_node *n, const fl_device *d, double start,
                         double end)
{
    add_event(s, n->id, -1, d, start, end);
}

void fl_session_trace_copy(fl_session *s, int reader, int value, const fl_device *d, double start,
                           double end)
{
    add_event(s, reader, value, d, start, end);
    fl_trace_event *e = &s->trace.events[s->trace.nevents - 1];
    e->bytes = fl_tensor_bytes(&s->slots[value].value);
    e->from = s->slots[value].device;
}

/* Whether d times its own ops in this traced run: an asynchronous device
 * does, as run() only enqueues there. Asked once per device and run. */
bool fl_session_device_times_ops(fl_session *s, fl_device *d)
{
    fl_trace_state *t = &s->trace;
    for (int i = 0; i < t->ntraced; i++)
        if (t->traced[i].device == d)
            return t->traced[i].timed;
    if (t->ntraced == FL_TRACED_DEVICES)
        return false; /* the host clock around run() times it */
    bool timed = fl_device_set_tracing(d, true) == 0;
    t->traced[t->ntraced++] = (fl_traced_device){d, timed};
    return timed;
}

/* After a traced run: the device-timed ops join the timeline with the times
 * they really ran, and the devices stop timing until the next traced run.
 * A device that fails to report has failed the run's wait already. */
void fl_session_take_device_timings(fl_session *s)
{
    enum { BATCH = 64 };
    fl_op_timing batch[BATCH];
    for (int i = 0; i < s->trace.ntraced; i++) {
        fl_device *d = s->trace.traced[i].device;
        int got = s->trace.traced[i].timed ? BATCH : 0;
        while (got == BATCH) { /* a full batch: more may wait */
            got = fl_device_take_timings(d, batch, BATCH);
            for (int k = 0; k < got; k++)
                add_event(s, batch[k].node, -1, d, batch[k].start_us, batch[k].end_us);
        }
        fl_device_set_tracing(d, false);
    }
    s->trace.ntraced = 0;
}

int fl_session_step_events(const fl_session *s, fl_step_event *out, int max)
{
    const fl_trace_state *t = &s->trace;
    for (int i = 0; i < t->nevents && i < max; i++) {
        const fl_trace_event *e = &t->events[i];
        const fl_node *n = fl_graph_node(s->graph, e->copy_of >= 0 ? e->copy_of : e->node);
        out[i] = (fl_step_event){n ? fl_node_name(n) : "?", e->copy_of >= 0 ? "Copy" : e->op ? e->op : "?",
                                 device_name(e->device), t->origin_us + e->start_us, e->duration_us};
    }
    return t->nevents;
}

/* Writes text as the inside of a JSON string. */
static void put_json_string(FILE *f, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
}

/* Lanes: the distinct devices of the events, in the order of their names
 * (sort_lanes), so that a run draws the same picture whichever device
 * happened to start first. A lane's tid is its index + 1 (some viewers
 * treat tid 0 specially). */
static int lane_of(const fl_device **lanes, int *nlanes, const fl_device *d)
{
    for (int i = 0; i < *nlanes; i++)
        if (lanes[i] == d)
            return i + 1;
    lanes[*nlanes] = d;
    return ++*nlanes;
}

static void sort_lanes(const fl_device **lanes, int nlanes)
{
    for (int i = 1; i < nlanes; i++)
        for (int j = i; j > 0 && strcmp(device_name(lanes[j - 1]), device_name(lanes[j])) > 0; j--) {
            const fl_device *d = lanes[j];
            lanes[j] = lanes[j - 1];
            lanes[j - 1] = d;
        }
}

static void put_lane_names(FILE *f, const fl_device **lanes, int nlanes)
{
    fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
          "\"args\":{\"name\":\"flowlab session\"}}", f);
    for (int i = 0; i < nlanes; i++) {
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                   "\"args\":{\"name\":\"", i + 1);
        put_json_string(f, device_name(lanes[i]));
        fputs("\"}}", f);
        fprintf(f, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                   "\"args\":{\"sort_index\":%d}}", i + 1, i);
    }
}

static void put_event(FILE *f, const fl_session *s, const fl_trace_event *e, int tid)
{
    const fl_node *n = fl_graph_node(s->graph, e->node);
    const char *op = e->op ? e->op : "?";
    fputs(",\n{\"name\":\"", f);
    if (e->copy_of >= 0) { /* a cross-device copy: named after the value it moves */
        const fl_node *from = fl_graph_node(s->graph, e->copy_of);
        op = "Copy";
        fputs("Copy ", f);
        put_json_string(f, from ? fl_node_name(from) : "?");
    } else {
        put_json_string(f, n ? fl_node_name(n) : "?");
    }
    fputs("\",\"cat\":\"", f);
    put_json_string(f, op);
    fprintf(f, "\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"op\":\"",
            tid, e->start_us, e->duration_us);
    put_json_string(f, op);
    fputs("\",\"device\":\"", f);
    put_json_string(f, device_name(e->device));
    if (e->copy_of >= 0) { /* what a copy moved and whence: chapter 7 counts bytes per step */
        fprintf(f, "\",\"bytes\":\"%zu\",\"from\":\"", e->bytes);
        put_json_string(f, device_name(e->from));
    }
    fputs("\"}}", f);
}

/* The lanes of fl_session_trace_event, after the devices' nlanes, in order
 * of first appearance; their events' times from the trace's origin. */
static void put_external_events(FILE *f, fl_session *s, int nlanes)
{
    fl_trace_state *t = &s->trace;
    pthread_mutex_lock(&t->external_lock);
    enum { MAX_LANES = 64 }; /* a cluster's trace: a lane per task and device, and one per task's request */
    const char *names[MAX_LANES];
    int nnames = 0;
    for (int i = 0; i < t->nexternal; i++) {
        const fl_external_event *e = &t->external[i];
        int lane = 0;
        while (lane < nnames && strcmp(names[lane], e->lane) != 0)
            lane++;
        if (lane == MAX_LANES)
            continue; /* more lanes than anyone reads: dropped */
        int tid = nlanes + lane + 1;
        if (lane == nnames) {
            names[nnames++] = e->lane;
            fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                       "\"args\":{\"name\":\"", tid);
            put_json_string(f, e->lane);
            fprintf(f, "\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,"
                       "\"tid\":%d,\"args\":{\"sort_index\":%d}}", tid, tid - 1);
        }
        fputs(",\n{\"name\":\"", f);
        put_json_string(f, e->name);
        fputs("\",\"cat\":\"", f);
        put_json_string(f, e->kind);
        fprintf(f, "\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,"
                   "\"dur\":%.3f,\"args\":{\"lane\":\"", tid, e->start_us - t->origin_us,
                e->end_us - e->start_us);
        put_json_string(f, e->lane);
        fputs("\"}}", f);
    }
    pthread_mutex_unlock(&t->external_lock);
}

static void put_trace(FILE *f, const fl_session *s)
{
    const fl_trace_event *events = s->trace.events;
    int count = s->trace.nevents;
    const fl_device **lanes = fl_xcalloc((size_t)(count ? count : 1), sizeof *lanes);
    int *tids = fl_xcalloc((size_t)(count ? count : 1), sizeof *tids);
    int nlanes = 0;
    for (int i = 0; i < count; i++)
        lane_of(lanes, &nlanes, events[i].device);
    sort_lanes(lanes, nlanes);
    for (int i = 0; i < count; i++)
        tids[i] = lane_of(lanes, &nlanes, events[i].device);
    fputs("{\"traceEvents\":[\n", f);
    put_lane_names(f, lanes, nlanes);
    for (int i = 0; i < count; i++)
        put_event(f, s, &events[i], tids[i]);
    put_external_events(f, (fl_session *)s, nlanes); /* its lock is not the trace's content */
    fputs("\n],\"displayTimeUnit\":\"ms\"}\n", f);
    free(tids);
    free(lanes);
}

/* Temporary file and rename, so a viewer never loads half a trace. */
int fl_session_write_trace(const fl_session *s, const char *path)
{
    if (!s || !path || !path[0]) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_session_write_trace: no session or no path given");
        return -1;
    }
    size_t len = strlen(path) + 32;
    char *temp = fl_xmalloc(len);
    snprintf(temp, len, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(temp, "w");
    int err = f ? 0 : errno;
    if (f) {
        put_trace(f, s);
        if (fflush(f) != 0 || ferror(f))
            err = EIO;
        if (fclose(f) != 0 && !err)
            err = EIO;
    }
    if (!err && rename(temp, path) != 0)
        err = errno;
    if (err) {
        unlink(temp);
        fl_set_error_code(fl_errno_code(err), "%s: cannot write the trace: %s", path, strerror(err));
    }
    free(temp);
    return err ? -1 : 0;
}
