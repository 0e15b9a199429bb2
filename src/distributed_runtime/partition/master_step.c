/* master_step.c: one step of in-graph replication across tasks, as the
 * client's master runs it: every task's request is queued on its
 * connection at once (each connection has its own writer and reader
 * threads), then this thread waits for the replies, woken by each as it
 * comes, and gathers the fetches: no thread per step. When one task fails,
 * or the task deadline passes, the others are told to give the step up
 * (ABORT_STEP), so they do not wait for values that will never come, and keep
 * serving; a task that answers neither is closed, as if lost, so the step ends
 * within about one deadline. A step's bookkeeping (fl_step_calls) is kept by
 * the master for the next step. */
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
    fl_partition_call call, abort; /* the run's request, and its ABORT_STEP's */
    double sent_us;
    bool sent, done; /* done: its reply came (or its connection was lost) */
    bool abort_pending; /* an ABORT_STEP is sent and its reply not in */
    bool silent; /* it answered neither by the deadline: its connection was closed */
    int rc;
    int failed_order; /* 1 for the first task to fail, 2 for the next, ... */
    fl_error_code code;
    char error[FL_ERROR_LEN];
} task_call;

struct step_state {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int running, failed;
    bool timed_out; /* the deadline passed before every task answered or one failed */
    char silent[256]; /* "/job:worker/task:1, ...": the tasks whose connection was closed */
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

/* On the reader thread, once the ABORT_STEP's reply (OK) is taken. */
static void abort_replied(void *user)
{
    task_call *t = user;
    pthread_mutex_lock(&t->step->lock);
    t->abort_pending = false;
    pthread_cond_signal(&t->step->changed);
    pthread_mutex_unlock(&t->step->lock);
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

/* Whether to wait on: before the abort, while tasks run and none failed;
 * after it, while a run or an ABORT_STEP awaits its reply. Lock held. */
static bool still_waiting(const step_state *s, const task_call *calls, int n, bool aborting)
{
    if (!aborting)
        return s->running > 0 && s->failed == 0;
    for (int i = 0; i < n; i++)
        if (!calls[i].done || calls[i].abort_pending)
            return true;
    return false;
}

/* Waits while still_waiting, up to until, saying every few seconds whom it
 * waits for (*next_line: when it next says so). Lock held. */
static void wait_until(step_state *s, task_call *calls, int n, bool aborting, const char *which, double start,
                       double until, double *next_line)
{
    for (double now = fl_now_s(); still_waiting(s, calls, n, aborting) && now < until; now = fl_now_s()) {
        if (now >= *next_line) {
            say_waiting(calls, n, which, now - start);
            *next_line = now + SAY_WAITING_EVERY_S;
        }
        struct timespec at = fl_wall_after((*next_line < until ? *next_line : until) - now);
        pthread_cond_timedwait(&s->changed, &s->lock, &at);
    }
}

/* Sends ABORT_STEP to each task still running (not waiting for its reply). */
static void abort_running(step_state *s, task_call *calls, int n, uint64_t step_id)
{
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < n; i++) {
        calls[i].abort_pending = !calls[i].done;
        calls[i].abort = (fl_partition_call){.replied = abort_replied, .user = &calls[i]};
    }
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < n; i++)
        if (calls[i].abort_pending && fl_partition_abort_start(calls[i].client, step_id, &calls[i].abort) != 0)
            abort_replied(&calls[i]); /* a lost connection: its run has learnt it too */
}

/* A live task answers ABORT_STEP at once (its run ends before its next op). */
static double abort_grace_s(double deadline_s) { return deadline_s / 2 < 5 ? deadline_s / 2 : 5; }

/* Waits until every task has answered or one has failed, or the task
 * deadline passes, saying every few seconds whom it waits for; then tells
 * those still running to give the step up, and waits for them until the
 * deadline or a short grace after the abort, whichever is later. A task
 * that answered neither is stopped or hung: its connection is closed, so
 * no late reply reaches this step's memory and the step ends now. */
/* The tasks' own waits end at the same task deadline, with errors that say
 * what each waited for (a Recv's peer, a take's accumulator and count): a
 * moment past it lets those arrive before the client gives the step up. */
static double tasks_own_errors_s(double deadline_s)
{
    return deadline_s / 10 > 0.5 ? deadline_s / 10 : 0.5;
}

static void wait_or_abort(step_state *s, task_call *calls, int n, uint64_t step_id, const char *which)
{
    double deadline_s = fl_task_deadline_s(), start = fl_now_s(), next_line = start + SAY_WAITING_EVERY_S;
    pthread_mutex_lock(&s->lock);
    wait_until(s, calls, n, false, which, start, start + deadline_s + tasks_own_errors_s(deadline_s), &next_line);
    s->timed_out = s->running > 0 && s->failed == 0;
    bool abort_others = s->running > 0;
    pthread_mutex_unlock(&s->lock);
    if (!abort_others)
        return;
    abort_running(s, calls, n, step_id);
    double now = fl_now_s(), until = now + abort_grace_s(deadline_s);
    pthread_mutex_lock(&s->lock);
    wait_until(s, calls, n, true, which, start, until > start + deadline_s ? until : start + deadline_s, &next_line);
    for (int i = 0; i < n; i++)
        calls[i].silent = !calls[i].done || calls[i].abort_pending;
    pthread_mutex_unlock(&s->lock);
    char why[256];
    snprintf(why, sizeof why, "no reply to %s within %.0f s (FLOWLAB_TASK_DEADLINE), so the client closed it",
             which, fl_now_s() - start);
    for (int i = 0; i < n; i++) {
        if (!calls[i].silent)
            continue;
        fl_task_client_give_up(calls[i].client, why);
        size_t used = strlen(s->silent);
        snprintf(s->silent + used, sizeof s->silent - used, "%s%s", used ? ", " : "",
                 fl_task_client_peer(calls[i].client));
    }
}

/* The error a step reports: a lost task's, as that is the cause (the others
 * failed because they were aborted or missed its values), else the first. */
static const task_call *cause_of_failure(const task_call *calls, int n)
{
    const task_call *first = NULL;
    for (int i = 0; i < n; i++) {
        if (calls[i].rc == 0 || calls[i].silent)
            continue;
        if (calls[i].code == FL_UNAVAILABLE)
            return &calls[i];
        if (!first || calls[i].failed_order < first->failed_order)
            first = &calls[i];
    }
    return first;
}

/* A task's error without its leading "/job:J/task:T: ", where the caller
 * names the task itself. */
static const char *without_task_name(const char *error, const fl_graph_partition *part)
{
    char name[FL_WIRE_MAX_NAME + 32];
    int n = snprintf(name, sizeof name, "/job:%s/task:%d: ", part->job, part->task);
    return n > 0 && strncmp(error, name, (size_t)n) == 0 ? error + n : error;
}

/* The cause's error, and where another task failed too, what that one
 * said: a task that gave up waiting for a value names the task it waited
 * for, and that one says what it was itself waiting for (the chief's take
 * of gradients that never came names its accumulator); then who did not
 * answer the abort, if any. */
static void say_cause(const task_call *calls, int n, const task_call *cause, const fl_graph_partition *parts,
                      const char *which, const char *silent)
{
    const task_call *other = NULL;
    for (int i = 0; i < n && !other; i++)
        if (calls[i].rc != 0 && &calls[i] != cause)
            other = &calls[i];
    int c = (int)(cause - calls), o = other ? (int)(other - calls) : 0;
    char meanwhile[FL_ERROR_LEN + 64] = "";
    if (other)
        snprintf(meanwhile, sizeof meanwhile, "; meanwhile /job:%s/task:%d: %s", parts[o].job, parts[o].task,
                 without_task_name(other->error, &parts[o]));
    fl_set_error_code(cause->code, "%s on /job:%s/task:%d: %s%s%s%s", which, parts[c].job, parts[c].task,
                      without_task_name(cause->error, &parts[c]), meanwhile,
                      silent[0] ? "; no reply either from " : "", silent);
}

/* The step's error: the tasks that did not answer by the deadline, or the
 * cause of the failure (and who did not answer the abort). -1, or 0. */
static int report_failure(const step_state *s, const task_call *calls, const fl_graph_partition *parts, int n,
                          const char *which)
{
    const task_call *cause = cause_of_failure(calls, n);
    if (s->timed_out && s->silent[0])
        fl_set_error_code(FL_DEADLINE_EXCEEDED, "%s on %s: no reply within %.0f s (FLOWLAB_TASK_DEADLINE), nor to "
                          "the abort (stopped or hung?), so its connection was closed: fl_cluster_reconnect makes it "
                          "anew", which, s->silent, fl_task_deadline_s());
    else if (s->timed_out && !cause)
        fl_set_error_code(FL_DEADLINE_EXCEEDED, "%s: not done within %.0f s (FLOWLAB_TASK_DEADLINE), so the tasks "
                          "gave it up", which, fl_task_deadline_s());
    else if (s->timed_out) /* what the tasks were waiting for when they gave it up */
        fl_set_error_code(FL_DEADLINE_EXCEEDED, "%s: not done within %.0f s (FLOWLAB_TASK_DEADLINE), so the tasks "
                          "gave it up; /job:%s/task:%d: %s", which, fl_task_deadline_s(), parts[cause - calls].job,
                          parts[cause - calls].task, without_task_name(cause->error, &parts[cause - calls]));
    else if (cause)
        say_cause(calls, n, cause, parts, which, s->silent);
    return s->timed_out || cause ? -1 : 0;
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
    for (int p = 0; p < nparts; p++) /* each reply is in, or its connection closed: at once */
        if (calls[p].sent && fl_partition_run_finish(clients[p], &calls[p].call) != 0)
            keep_error(&calls[p]);
    int rc = report_failure(&s, calls, parts, nparts, which);
    if (trace)
        merge_traces(trace, calls, parts, nparts, rc == 0);
    pthread_cond_destroy(&s.changed);
    pthread_mutex_destroy(&s.lock);
    return rc;
}
