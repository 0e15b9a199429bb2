/* trace_events.h: reads the op events of a trace that fl_session_write_trace
 * wrote (one JSON event per line), for the programs that draw or sum one:
 * labs/tools/trace_timeline.c and make bench's breakdown (tests/bench). */
#ifndef FLOWLAB_TRACE_EVENTS_H
#define FLOWLAB_TRACE_EVENTS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A cluster's trace has a lane per task and device, and one per task for
 * the client's requests: 64 lanes hold 20 tasks with two devices each. */
enum { TRACE_MAX_LANES = 64, TRACE_LANE_NAME = 64 };

typedef struct {
    char name[160], cat[32], device[32];
    char from[32];     /* the device a copy came from; "" for an op */
    int lane;          /* the trace's tid - 1 */
    double start, dur; /* microseconds */
    double bytes;      /* what a copy (cat "Copy") moved; 0 for an op */
} trace_event;

typedef struct {
    trace_event *events;
    int count, cap;
    char lanes[TRACE_MAX_LANES][TRACE_LANE_NAME]; /* the device of each lane */
    int nlanes;
    double first, last; /* earliest start, latest end */
} trace_events;

/* The text after "key" up to the closing quote (or , or }), into out. */
static inline int trace_field(const char *line, const char *key, char *out, size_t len)
{
    const char *at = strstr(line, key);
    if (!at)
        return -1;
    at += strlen(key);
    size_t n = strcspn(at, "\",}");
    n = n < len ? n : len - 1;
    memcpy(out, at, n);
    out[n] = '\0';
    return 0;
}

static inline void trace_add_lane(trace_events *t, const char *line)
{
    char tid[16], name[TRACE_LANE_NAME];
    if (trace_field(line, "\"tid\":", tid, sizeof tid) ||
        trace_field(line, "\"args\":{\"name\":\"", name, sizeof name))
        return;
    int lane = atoi(tid) - 1;
    if (lane < 0 || lane >= TRACE_MAX_LANES)
        return;
    snprintf(t->lanes[lane], sizeof t->lanes[lane], "%s", name);
    t->nlanes = lane + 1 > t->nlanes ? lane + 1 : t->nlanes;
}

static inline void trace_add_event(trace_events *t, const char *line)
{
    trace_event e = {0};
    char tid[16], ts[32], dur[32];
    if (trace_field(line, "\"name\":\"", e.name, sizeof e.name) ||
        trace_field(line, "\"cat\":\"", e.cat, sizeof e.cat) ||
        trace_field(line, "\"tid\":", tid, sizeof tid) || trace_field(line, "\"ts\":", ts, sizeof ts) ||
        trace_field(line, "\"dur\":", dur, sizeof dur))
        return;
    /* fl_session_trace_event's events have a lane but no device: "" */
    trace_field(line, "\"device\":\"", e.device, sizeof e.device);
    char bytes[32];
    if (trace_field(line, "\"bytes\":\"", bytes, sizeof bytes) == 0)
        e.bytes = atof(bytes);
    trace_field(line, "\"from\":\"", e.from, sizeof e.from);
    e.lane = atoi(tid) - 1;
    e.start = atof(ts);
    e.dur = atof(dur);
    if (e.lane < 0 || e.lane >= TRACE_MAX_LANES)
        return;
    if (t->count == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 512;
        t->events = realloc(t->events, (size_t)t->cap * sizeof *t->events);
    }
    t->events[t->count++] = e;
    t->first = fmin(t->first, e.start);
    t->last = fmax(t->last, e.start + e.dur);
}

/* 0 with every op event of the file (perhaps none); -1 when it cannot be
 * opened. Free with trace_events_free. */
static inline int trace_events_read(const char *path, trace_events *t)
{
    *t = (trace_events){.first = INFINITY};
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "\"ph\":\"M\"") && strstr(line, "\"thread_name\""))
            trace_add_lane(t, line);
        else if (strstr(line, "\"ph\":\"X\""))
            trace_add_event(t, line);
    }
    fclose(f);
    return 0;
}

static inline void trace_events_free(trace_events *t)
{
    free(t->events);
    t->events = NULL;
    t->count = t->cap = 0;
}

#endif
