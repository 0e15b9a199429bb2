/* server_partitions.c: a task server's side of in-graph replication across
 * tasks. A client registers partitions (kept per connection, so a client
 * that dies frees what it registered) and runs them, one step per request.
 * A run goes to one of the server's long-lived runners (runner_pool.c), never
 * the event loop, which meanwhile serves everyone else, SEND_TENSOR from
 * peers included; its connection
 * reads nothing more until the reply is out, so replies stay in order, but
 * an ABORT_STEP behind the run is acted on at once. A run's job (its
 * event, the arena its request was unpacked in, the outputs' array) is kept
 * by its connection for the next run. */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "distributed_runtime/partition/partition_def.h"
#include "distributed_runtime/partition/partition_exec.h"
#include "runner_pool.h"
#include "server_internal.h"
#include "distributed_runtime/partition/task_trace.h"

typedef struct {
    uint64_t handle;
    fl_partition_exec *exec;
} registered;

typedef struct fl_partition_registry {
    registered *items;
    int count, cap;
} fl_partition_registry;

typedef struct fl_partition_job {
    fl_server *server;
    fl_server_conn *conn;           /* NULL once the client is gone */
    fl_partition_registry *orphans; /* a gone client's partitions, freed after the run */
    fl_partition_exec *exec;
    fl_wire_run_partition run;      /* points into arena */
    fl_wire_arena *arena;           /* the request's message, swapped with the server's */
    uint32_t request_id;
    fl_tensor **outputs;
    int output_capacity;
    fl_wire_step_trace trace;       /* the step's timings, when its client asked (FL_WIRE_RUN_TRACE) */
    atomic_bool cancelled;          /* its client has gone: stop before the next op or wait */
    int rc, signatures;             /* new run signatures the step resolved */
    fl_error_code code;
    char error[FL_ERROR_LEN];
    struct event *done;
    struct fl_partition_job *next;
} fl_partition_job;

static void free_registry(fl_partition_registry *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->count; i++)
        fl_partition_exec_free(r->items[i].exec);
    free(r->items);
    free(r);
}

/* An ERROR the connection survives: the request failed, not the stream. */
static void answer_failure(fl_server_conn *c, uint32_t id, fl_error_code code, const char *why)
{
    fl_wire_put_error(&c->server->out, id, fl_wire_error_for(code), why);
    fl_server_send_out(c);
}

static void answer_ok(fl_server_conn *c, uint32_t id)
{
    fl_wire_put_ok(&c->server->out, id);
    fl_server_send_out(c);
}

static int find_registered(const fl_server_conn *c, uint64_t handle)
{
    for (int i = 0; c->partitions && i < c->partitions->count; i++)
        if (c->partitions->items[i].handle == handle)
            return i;
    return -1;
}

/* ---- REGISTER_PARTITION, DEREGISTER_PARTITION ---- */

static void serve_register(fl_server_conn *c, uint32_t id, const fl_wire_bytes *body)
{
    fl_server *s = c->server;
    fl_graph_partition p;
    if (fl_partition_def_decode(body->data, body->len, &p) != 0)
        return answer_failure(c, id, FL_INVALID_ARGUMENT, fl_last_error());
    if (strcmp(p.job, s->job) != 0 || p.task != s->task) {
        char why[FL_WIRE_ERROR_LEN];
        snprintf(why, sizeof why, "a partition for /job:%s/task:%d was sent to %s", p.job, p.task, s->name);
        fl_graph_partition_free(&p);
        return answer_failure(c, id, FL_INVALID_ARGUMENT, why);
    }
    fl_status refused = {0};
    if (fl_server_refuses_sync_mode(c, p.graph, &refused)) {
        fl_graph_partition_free(&p);
        return answer_failure(c, id, refused.code, refused.message);
    }
    if (c->partitions && c->partitions->count >= s->limits.max_partitions) {
        char why[FL_WIRE_ERROR_LEN];
        snprintf(why, sizeof why, "this connection to %s already has %d partitions registered, the most it may "
                 "(--max_partitions); deregister one first", s->name, c->partitions->count);
        fl_graph_partition_free(&p);
        return answer_failure(c, id, FL_RESOURCE_EXHAUSTED, why);
    }
    if (!c->partitions)
        c->partitions = fl_xcalloc(1, sizeof *c->partitions);
    fl_partition_registry *r = c->partitions;
    if (r->count == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 4;
        r->items = fl_xrealloc(r->items, (size_t)r->cap * sizeof *r->items);
    }
    int nodes = fl_graph_node_count(p.graph), variables = fl_variable_container_count(s->variables);
    fl_partition_exec *exec = fl_partition_exec_new(&p, s->rendezvous, s->variables);
    registered *item = &r->items[r->count++];
    *item = (registered){++s->next_handle, exec};
    fprintf(s->log, "%s: registered partition %llu from %s %s (%d nodes; %d variable%s live on this task)\n",
            s->log_prefix, (unsigned long long)item->handle, c->peer, c->who, nodes, variables,
            variables == 1 ? "" : "s");
    fflush(s->log);
    fl_wire_put_partition_registered(&s->out, id, item->handle);
    fl_server_send_out(c);
}

static void serve_deregister(fl_server_conn *c, uint32_t id, uint64_t handle)
{
    int i = find_registered(c, handle);
    if (i < 0) {
        char why[FL_WIRE_ERROR_LEN];
        snprintf(why, sizeof why, "DEREGISTER_PARTITION: no partition %llu was registered on this connection to %s",
                 (unsigned long long)handle, c->server->name);
        return answer_failure(c, id, FL_INVALID_ARGUMENT, why);
    }
    fl_partition_registry *r = c->partitions;
    fl_partition_exec_free(r->items[i].exec);
    r->items[i] = r->items[--r->count];
    answer_ok(c, id);
}

/* ---- RUN_PARTITION: on a runner ---- */

static void run_job(void *arg)
{
    fl_partition_job *job = arg;
    fl_server *s = job->server;
    int dropped = 0;
    fl_partition_env env = {s->rendezvous, s->cluster, s->name, s->log, s->log_prefix, &job->cancelled, &dropped};
    /* A partition's first step makes its session: that step has no timings. */
    fl_session *traced = job->run.flags & FL_WIRE_RUN_TRACE ? fl_partition_exec_session(job->exec) : NULL;
    double began = 0;
    if (traced)
        fl_task_trace_begin(traced, &began);
    int before = fl_partition_exec_signatures_made(job->exec);
    job->rc = fl_partition_exec_run(job->exec, &env, &job->run, job->outputs);
    job->signatures = fl_partition_exec_signatures_made(job->exec) - before;
    if (dropped > 0) { /* a worker's step whose gradients came stale: one step, and each gradient dropped */
        fl_server_count(s, &s->stats.stale_steps, 1);
        fl_server_count(s, &s->stats.stale_variable_updates, (uint64_t)dropped);
    }
    if (traced)
        fl_task_trace_end(traced, s->name, began, &job->trace);
    if (job->rc != 0) {
        job->code = fl_last_error_code();
        snprintf(job->error, sizeof job->error, "%s", fl_last_error());
    }
}

/* Said by the runner once it is idle, so that the client's next step,
 * which the reply lets it send, needs no new runner. */
static void run_finished(void *arg)
{
    fl_partition_job *job = arg;
    event_active(job->done, EV_TIMEOUT, 1); /* job_done, on the loop thread; the runner touches job no more */
}

static void unlink_job(fl_partition_job *job)
{
    for (fl_partition_job **p = &job->server->jobs; *p; p = &(*p)->next)
        if (*p == job) {
            *p = job->next;
            return;
        }
}

/* What a run left: its outputs (its partition's, kept for the next run)
 * and its trace. */
static void clear_job(fl_partition_job *job)
{
    for (int i = 0; i < job->run.lists[0].count; i++)
        job->outputs[i] = NULL;
    fl_wire_step_trace_free(&job->trace);
}

/* After its run: nothing else touches the job. */
static void free_job(fl_partition_job *job)
{
    if (!job)
        return;
    clear_job(job);
    free(job->outputs);
    fl_wire_arena_free(job->arena);
    free_registry(job->orphans);
    if (job->done)
        event_free(job->done);
    free(job);
}

static void answer_run(fl_server_conn *c, fl_partition_job *job)
{
    fl_server *s = c->server;
    int n = job->run.lists[0].count;
    if (job->rc != 0)
        return answer_failure(c, job->request_id, job->code, job->error);
    const fl_wire_step_trace *trace = job->run.flags & FL_WIRE_RUN_TRACE ? &job->trace : NULL;
    if (fl_wire_put_partition_done(&s->out, job->request_id, trace, n, (const fl_tensor *const *)job->outputs) != 0)
        return answer_failure(c, job->request_id, FL_INTERNAL, s->out.error);
    fl_server_send_out(c);
}

/* The run has ended: its reply goes out and its connection reads again. */
static void job_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fl_partition_job *job = arg;
    fl_rendezvous_finish(job->server->rendezvous, job->run.step_id);
    fl_server_count(job->server, &job->server->stats.partition_steps, 1);
    fl_server_count(job->server, &job->server->stats.partition_signatures, (uint64_t)job->signatures);
    unlink_job(job);
    fl_server_conn *c = job->conn;
    if (!c)
        return free_job(job);
    answer_run(c, job);
    c->running = NULL;
    clear_job(job);
    c->spare_job = job; /* for its next run */
    fl_server_resume_reading(c); /* also after --max_bytes_behind_run paused it */
}

/* The connection's job, kept from its last run (or a new one), for run. */
static fl_partition_job *job_for(fl_server_conn *c, const fl_wire_run_partition *run, int registered_at,
                                 uint32_t request_id)
{
    fl_server *s = c->server;
    fl_partition_job *job = c->spare_job ? c->spare_job : fl_xcalloc(1, sizeof *job);
    c->spare_job = NULL;
    if (!job->done)
        job->done = event_new(s->base, -1, 0, job_done, job);
    int n = run->lists[0].count;
    if (n + 1 > job->output_capacity) {
        free(job->outputs);
        job->outputs = fl_xcalloc((size_t)n + 1, sizeof *job->outputs);
        job->output_capacity = n + 1;
    }
    job->server = s;
    job->conn = c;
    job->exec = c->partitions->items[registered_at].exec;
    job->run = *run;
    job->request_id = request_id;
    atomic_store(&job->cancelled, false);
    job->rc = job->signatures = 0;
    job->code = FL_OK;
    job->error[0] = '\0';
    job->next = s->jobs;
    /* The request (feeds included) lies in the server's arena, which the
     * next frame reuses: the job takes it, the server takes the job's. */
    fl_wire_arena *spare = job->arena;
    job->arena = s->arena;
    s->arena = spare ? spare : fl_wire_arena_new();
    return job;
}

static void serve_run(fl_server_conn *c, uint32_t id, const fl_wire_run_partition *run)
{
    fl_server *s = c->server;
    int i = find_registered(c, run->handle);
    if (i < 0) {
        char why[FL_WIRE_ERROR_LEN];
        snprintf(why, sizeof why, "RUN_PARTITION: no partition %llu was registered on this connection to %s",
                 (unsigned long long)run->handle, s->name);
        return answer_failure(c, id, FL_INVALID_ARGUMENT, why);
    }
    fl_partition_job *job = job_for(c, run, i, id);
    if (!s->runners)
        s->runners = fl_runner_pool_new();
    if (fl_runner_pool_run(s->runners, run_job, run_finished, job) != 0) {
        free_job(job);
        return answer_failure(c, id, FL_RESOURCE_EXHAUSTED, "cannot start a thread for the run");
    }
    s->jobs = job;
    c->running = job;
}

/* ---- the other frames ---- */

/* The words of a SEND_TENSOR refused for want of room, naming the flag. */
static void say_full(const fl_server *s, const fl_wire_send_tensor *m, fl_rendezvous_put_result full,
                     const fl_rendezvous_held *h, fl_status *st)
{
    bool mine = full == FL_RENDEZVOUS_SENDER_FULL;
    uint64_t limit = mine ? s->limits.max_waiting_value_bytes : s->limits.max_waiting_value_bytes_total;
    fl_status_set(st, FL_RESOURCE_EXHAUSTED, "SEND_TENSOR %s for step %llu: %s holds %zu bytes of values %s sent "
                  "that no run has taken; %zu more would pass %s (%llu); they go when their step runs or their "
                  "connection closes", m->key, (unsigned long long)m->step_id, s->name,
                  mine ? h->sender_bytes : h->all_bytes, mine ? "this connection" : "all connections", h->charge,
                  mine ? "--max_waiting_value_bytes" : "--max_waiting_value_bytes_total", (unsigned long long)limit);
}

static void serve_send(fl_server_conn *c, uint32_t id, const fl_wire_send_tensor *m)
{
    fl_server *s = c->server;
    if (!c->values_sent)
        c->values_sent = fl_rendezvous_sender_new();
    fl_rendezvous_held held;
    fl_rendezvous_put_result put = fl_rendezvous_put_wire(s->rendezvous, c->values_sent, m->step_id, m->key,
                                                          &m->value, &held); /* one copy, from the frame */
    if (put != FL_RENDEZVOUS_KEPT) {
        fl_status why = {0};
        say_full(s, m, put, &held, &why);
        return answer_failure(c, id, why.code, why.message);
    }
    fl_server_count(s, &s->stats.values_received, 1);
    fl_server_count(s, &s->stats.value_bytes_received, m->value.bytes);
    answer_ok(c, id);
}

void fl_server_serve_partition_frame(fl_server_conn *c, const fl_wire_frame *f, const fl_wire_message *m)
{
    switch (m->type) {
    case FL_WIRE_REGISTER_PARTITION: serve_register(c, f->request_id, &m->u.body); break;
    case FL_WIRE_RUN_PARTITION: serve_run(c, f->request_id, &m->u.run); break;
    case FL_WIRE_SEND_TENSOR:
        c->sent_values = true;
        serve_send(c, f->request_id, &m->u.send);
        break;
    case FL_WIRE_ABORT_STEP:
        fl_rendezvous_abort(c->server->rendezvous, m->u.number);
        answer_ok(c, f->request_id);
        break;
    case FL_WIRE_DEREGISTER_PARTITION: serve_deregister(c, f->request_id, m->u.number); break;
    default: answer_failure(c, f->request_id, FL_INTERNAL, "not a partition's request"); break;
    }
}

void fl_server_peek_while_running(fl_server_conn *c, const fl_wire_frame *f)
{
    uint64_t step;
    fl_status why = {0};
    if (f->type == FL_WIRE_ABORT_STEP && fl_wire_parse_number(f, &step, &why) == 0)
        fl_rendezvous_abort(c->server->rendezvous, step); /* answered, in order, after the run */
}

/* The values c sent that no run has taken go with it, but for those of a
 * step running here now, which its run may still take. */
static void drop_values_sent(fl_server_conn *c)
{
    fl_server *s = c->server;
    int n = 0;
    for (const fl_partition_job *job = s->jobs; job; job = job->next)
        n++;
    uint64_t *running = fl_xcalloc((size_t)n + 1, sizeof *running);
    n = 0;
    for (const fl_partition_job *job = s->jobs; job; job = job->next)
        running[n++] = job->run.step_id;
    fl_rendezvous_sender_gone(s->rendezvous, c->values_sent, running, n);
    c->values_sent = NULL;
    free(running);
}

void fl_server_drop_partitions(fl_server_conn *c)
{
    fl_server *s = c->server;
    int count = c->partitions ? c->partitions->count : 0;
    if (count > 0) {
        fprintf(s->log, "%s: dropping the %d partition%s that %s %s registered: its connection closed\n",
                s->log_prefix, count, count == 1 ? "" : "s", c->peer, c->who);
        fflush(s->log);
    }
    if (c->running) { /* the run is let go: cancelled, it ends (aborted) before its next op */
        c->running->conn = NULL;
        c->running->orphans = c->partitions;
        atomic_store(&c->running->cancelled, true);
        fl_rendezvous_abort(s->rendezvous, c->running->run.step_id);
    } else {
        free_registry(c->partitions);
    }
    c->partitions = NULL;
    c->running = NULL;
    free_job(c->spare_job);
    c->spare_job = NULL;
    drop_values_sent(c);
}

void fl_server_stop_partitions(fl_server *s)
{
    if (!s->rendezvous)
        return;
    fl_rendezvous_abort_all(s->rendezvous);
    fl_runner_pool_free(s->runners); /* after the runs, aborted, have ended */
    s->runners = NULL;
    while (s->jobs) {
        fl_partition_job *job = s->jobs;
        s->jobs = job->next;
        free_job(job);
    }
}
