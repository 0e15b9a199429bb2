/* master_trace.c: a traced step in the client of a cluster, as TensorFlow's
 * RunMetadata with FULL_TRACE: each task's request on a lane of the client
 * ("client to /job:worker/task:1", from send to reply), and the ops the task
 * reported, on a lane per task and device, moved onto the client's clock;
 * with each of its devices' peak bytes (fl_session_memory).
 *
 * How the clocks are aligned: a task times its ops from its own step's start
 * and says how long its step took (D). The client knows only when it sent
 * the request (sent) and when the reply came back (replied). Like NTP, it
 * assumes the request and the reply took equally long on the wire, so the
 * task's step began at sent + (replied - sent - D) / 2 on the client's clock.
 * Every task event then lies within its request's span; a path slower one
 * way than the other shifts them by at most half the difference. */
#include <stdio.h>
#include <string.h>

#include "master.h"

/* An event's lane: its device ("/job:worker/task:1/cpu:0") when the device
 * is of the task that answered, else the task's name before it, so that no
 * task can put its ops on another's lane. */
static void lane_of(const char *task, const char *device, char *lane, size_t len)
{
    size_t n = strlen(task);
    bool its_own = strncmp(device, task, n) == 0 && device[n] == '/';
    snprintf(lane, len, "%s%s%s", its_own ? "" : task, its_own || device[0] == '/' ? "" : "/", device);
}

void fl_master_trace_task(fl_session *trace, const char *task, const fl_wire_step_trace *t, double sent_us,
                          double replied_us)
{
    char lane[2 * FL_WIRE_MAX_NAME + 16];
    snprintf(lane, sizeof lane, "client to %s", task);
    fl_session_trace_span(trace, lane, "RUN_PARTITION", "request", sent_us, replied_us);
    double step_us = (double)t->step_ns / 1e3, slack = replied_us - sent_us - step_us;
    double origin = sent_us + (slack > 0 ? slack / 2 : 0);
    for (int i = 0; i < t->count; i++) {
        const fl_wire_trace_event *e = &t->events[i];
        double start = origin + (double)e->start_ns / 1e3;
        lane_of(task, e->device, lane, sizeof lane);
        fl_session_trace_span(trace, lane, e->name, e->op, start, start + (double)e->duration_ns / 1e3);
    }
    for (int i = 0; i < t->npeaks; i++) {
        lane_of(task, t->peaks[i].device, lane, sizeof lane);
        fl_session_note_task_memory(trace, lane, (size_t)t->peaks[i].peak_bytes);
    }
}
