/* master_step.c: one step of in-graph replication across tasks, as the
 * client's master runs it: every task's request is queued on its
 * connection at once (each connection has its own writer and reader
 * threads), then this thread waits for the replies, woken by each as it
 * comes, and gathers the fetches: no thread per step. When one task fails
 * the others are told to give the step up (ABORT_STEP), so they do not wait
 * for values that will never come, and keep serving. A step's bookkeeping
 * (fl_step_calls) is kept by the master for the next step. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master.h"
#include "partition_client.h"

typedef struct step_state step_state;

/* One task's request of this step, and how it ended. */
typedef struct {
    step_state *step;
    fl_task_client *client;
    fl_partition_call call;
    double sent_us;
    bool sent, done; /* done: its reply came (or its connection was lost) */
    int rc;
    int failed_order; /* 1 for the first task to fail, 2 for the next, ... */
    fl_error_code code;
    char error[FL_ERROR_LEN];
} task_call;

struct step_state {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int running, failed;
};

struct fl_step_calls {
    task_call *calls;
    fl_wire_step_trace *traces;
    int capacity;
};

/* Room for n tasks' calls and traces, grown only past the most so far. */
static fl_step_calls *room_for(fl_step_calls **kept, int n)
{
    fl_step_calls *k = *kept ? *kept : (*kept = fl_xcalloc(1, sizeof **kept));
    if (n + 1 > k->capacity) {
        free(k->calls);
        free(k->traces);
        k->capacity = n + 1;
        k->calls = fl_xcalloc((size_t)k->capacity, sizeof *k->calls);
        k->traces = fl_xcalloc((size_t)k->capacity, sizeof *k->traces);
    }
    return k;
}

void fl_step_calls_free(fl_step_calls *k)
{
    if (!k)
        return;
    free(k->calls);
    free(k->traces);
    free(k);
}

/* Counts t's request as answered, once (a connection lost while sending
 * tells replied() before the send fails); wakes the step's thread. */
static void count_answer(task_call *t, bool failed)
{
    step_state *s = t->step;
    pthread_mutex_lock(&s->lock);
    if (!t->done) {
        t->done = true;
        t->failed_order = failed ? ++s->failed : 0;
        s->running--;
        pthread_cond_signal(&s->changed);
    }
    pthread_mutex_unlock(&s->lock);
}

/* On the task's connection's reader thread, once its reply is taken. */
static void replied(void *user)
{
    task_call *t = user;
    count_answer(t, t->call.code != FL_OK);
}

static void keep_error(task_call *t)
{
    t->rc = -1;
    t->code = fl_last_error_code();
    snprintf(t->error, sizeof t->error, "%s", fl_last_error());
}

enum { SAY_WAITING_EVERY_S = 5 };

/* "client: run 3 of this session waiting for its reply from /job:worker/task:1
 * (5 s so far)": the tasks not yet answered, on stderr. Lock held. */
static void say_waiting(const task_call *calls, int n, const char *which, double waited_s)
{
    fprintf(stderr, "client: %s waiting for its reply from", which);
    const char *separator = " ";
    for (int i = 0; i < n; i++) {
        if (calls[i].done)
            continue;
        fprintf(stderr, "%s%s", separator, fl_task_client_peer(calls[i].client));
        separator = ", ";
    }
    fprintf(stderr, " (%.0f s so far)\n", waited_s);
    fflush(stderr);
}

/* Waits until every task has answered or one has failed, or the task
 * deadline passes (each connection's own wait then says for what), saying
 * every few seconds whom it waits for; then tells those still running to
 * give the step up. */
static void wait_or_abort(step_state *s, task_call *calls, int n, uint64_t step_id, const char *which)
{
    double start = fl_now_us() / 1e6, deadline = start + fl_task_deadline_s(), next_line = start + SAY_WAITING_EVERY_S;
    pthread_mutex_lock(&s->lock);
    for (double now = start; s->running > 0 && s->failed == 0 && now < deadline; now = fl_now_us() / 1e6) {
        if (now >= next_line) {
            say_waiting(calls, n, which, now - start);
            next_line = now + SAY_WAITING_EVERY_S;
        }
        double wait_s = (next_line < deadline ? next_line : deadline) - now;
        struct timespec at = fl_wall_after(wait_s);
        pthread_cond_timedwait(&s->changed, &s->lock, &at);
    }
    bool abort_others = s->failed > 0;
    bool running[n];
    for (int i = 0; i < n; i++)
        running[i] = !calls[i].done;
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; abort_others && i < n; i++)
        if (running[i])
            fl_partition_abort_step(calls[i].client, step_id);
}

/* The error a step reports: a lost task's, as that is the cause (the others
 * failed because they were aborted or missed its values), else the first. */
static const task_call *cause_of_failure(const task_call *calls, int n)
{
    const task_call *first = NULL;
    for (int i = 0; i < n; i++) {
        if (calls[i].rc == 0)
            continue;
        if (calls[i].code == FL_UNAVAILABLE)
            return &calls[i];
        if (!first || calls[i].failed_order < first->failed_order)
            first = &calls[i];
    }
    return first;
}

/* After a traced step that succeeded: each task's part of the timeline. */
static void merge_traces(fl_session *trace, task_call *calls, const fl_graph_partition *parts, int n, bool ok)
{
    for (int p = 0; p < n; p++) {
        char task[FL_WIRE_MAX_NAME + 32];
        snprintf(task, sizeof task, "/job:%s/task:%d", parts[p].job, parts[p].task);
        if (ok && calls[p].call.trace)
            fl_master_trace_task(trace, task, calls[p].call.trace, calls[p].sent_us, calls[p].call.replied_us);
        if (calls[p].call.trace)
            fl_wire_step_trace_free(calls[p].call.trace);
    }
}

int fl_master_step(fl_step_calls **kept, int nparts, fl_task_client **clients, const uint64_t *handles,
                   const fl_partition_run *runs, fl_tensor ***outputs, const fl_graph_partition *parts,
                   const char *which, fl_session *trace)
{
    step_state s = {.running = nparts};
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.changed, NULL);
    fl_step_calls *k = room_for(kept, nparts);
    task_call *calls = k->calls;
    fl_wire_step_trace *traces = trace ? k->traces : NULL;
    for (int p = 0; p < nparts; p++)
        calls[p] = (task_call){.step = &s, .client = clients[p],
                               .call = {.outputs = outputs[p], .trace = traces ? &traces[p] : NULL,
                                        .replied = replied, .user = &calls[p]}};
    for (int p = 0; p < nparts; p++) { /* all queued first: the tasks work at once */
        calls[p].sent_us = fl_now_us();
        calls[p].sent = fl_partition_run_start(clients[p], handles[p], &runs[p], &calls[p].call) == 0;
        if (!calls[p].sent) {
            keep_error(&calls[p]);
            count_answer(&calls[p], true);
        }
    }
    wait_or_abort(&s, calls, nparts, nparts ? runs[0].step_id : 0, which);
    for (int p = 0; p < nparts; p++) /* each reply is in: at once (past the deadline, up to its own) */
        if (calls[p].sent && fl_partition_run_finish(clients[p], &calls[p].call) != 0)
            keep_error(&calls[p]);
    const task_call *cause = cause_of_failure(calls, nparts);
    if (trace)
        merge_traces(trace, calls, parts, nparts, !cause);
    if (cause)
        fl_set_error_code(cause->code, "%s on /job:%s/task:%d: %s", which, parts[cause - calls].job,
                          parts[cause - calls].task, cause->error);
    pthread_cond_destroy(&s.changed);
    pthread_mutex_destroy(&s.lock);
    return cause ? -1 : 0;
}
