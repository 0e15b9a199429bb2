/* master_step.c: one step of in-graph replication across tasks, as the
 * client's master runs it: one request per task, each on a thread of its
 * own so that all tasks work at once, then the fetches gathered. When one
 * task fails the others are told to give the step up (ABORT_STEP), so they
 * do not wait for values that will never come, and keep serving. */
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
    fl_ps_client *client;
    uint64_t handle;
    const fl_partition_run *run;
    fl_tensor **outputs;
    fl_wire_step_trace *trace; /* NULL: not traced */
    double sent_us, replied_us;
    pthread_t thread;
    bool threaded; /* false: no thread could be made, it ran on the caller's */
    bool done;
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

static void *run_on_task(void *arg)
{
    task_call *t = arg;
    t->sent_us = fl_now_us();
    int rc = fl_partition_run_remote(t->client, t->handle, t->run, t->outputs, t->trace);
    t->replied_us = fl_now_us();
    step_state *s = t->step;
    pthread_mutex_lock(&s->lock);
    t->rc = rc;
    if (rc != 0) {
        t->code = fl_last_error_code();
        snprintf(t->error, sizeof t->error, "%s", fl_last_error());
        t->failed_order = ++s->failed;
    }
    t->done = true;
    s->running--;
    pthread_cond_signal(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Waits until every task is done or one has failed; then tells those still
 * running to give the step up. */
static void wait_or_abort(step_state *s, task_call *calls, int n, uint64_t step_id)
{
    pthread_mutex_lock(&s->lock);
    while (s->running > 0 && s->failed == 0)
        pthread_cond_wait(&s->changed, &s->lock);
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
        if (ok && calls[p].trace)
            fl_master_trace_task(trace, task, calls[p].trace, calls[p].sent_us, calls[p].replied_us);
        if (calls[p].trace)
            fl_wire_step_trace_free(calls[p].trace);
    }
}

int fl_master_step(int nparts, fl_ps_client **clients, const uint64_t *handles, const fl_partition_run *runs,
                   fl_tensor ***outputs, const fl_graph_partition *parts, const char *which, fl_session *trace)
{
    step_state s = {.running = nparts};
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.changed, NULL);
    task_call *calls = fl_xcalloc((size_t)(nparts ? nparts : 1), sizeof *calls);
    fl_wire_step_trace *traces = trace ? fl_xcalloc((size_t)nparts + 1, sizeof *traces) : NULL;
    for (int p = 0; p < nparts; p++) {
        calls[p] = (task_call){.step = &s, .client = clients[p], .handle = handles[p], .run = &runs[p],
                               .outputs = outputs[p], .trace = traces ? &traces[p] : NULL};
        calls[p].threaded = pthread_create(&calls[p].thread, NULL, run_on_task, &calls[p]) == 0;
        if (!calls[p].threaded)
            run_on_task(&calls[p]);
    }
    wait_or_abort(&s, calls, nparts, nparts ? runs[0].step_id : 0);
    for (int p = 0; p < nparts; p++)
        if (calls[p].threaded)
            pthread_join(calls[p].thread, NULL);
    const task_call *cause = cause_of_failure(calls, nparts);
    if (trace)
        merge_traces(trace, calls, parts, nparts, !cause);
    free(traces);
    if (cause)
        fl_set_error_code(cause->code, "%s on /job:%s/task:%d: %s", which, parts[cause - calls].job,
                          parts[cause - calls].task, cause->error);
    free(calls);
    pthread_cond_destroy(&s.changed);
    pthread_mutex_destroy(&s.lock);
    return cause ? -1 : 0;
}
