/* server_sync.c: chapter 4 on a task server: synchronous updates counted
 * toward a step, and the WAIT_STEP barrier. A worker's WAIT_STEP (its
 * step's token) is parked until the step moves: its connection reads
 * nothing more until then, so replies stay in order, and a connection has
 * at most one parked at a time, kept in the connection itself. Workers
 * that disagree on --sync_replicas are told so, naming both. */
#include <string.h>

#include <event2/buffer.h>

#include "server_internal.h"

/* A synchronous worker counts its steps toward a global step that an
 * asynchronous one also moves (65 local steps for global step 100, and no
 * warning). The first worker to send an update is kept with its kind; an
 * update of the other kind from another worker is refused, naming both, and
 * the ps logs the first such refusal. */
bool fl_server_refuses_other_sync_mode(fl_server_conn *c, uint32_t id, fl_wire_type type)
{
    bool sync = type == FL_WIRE_SYNC_APPLY || type == FL_WIRE_SYNC_ASSIGN || type == FL_WIRE_SYNC_ASSIGN_ADD;
    if (!sync && type != FL_WIRE_APPLY && type != FL_WIRE_ASSIGN_ADD)
        return false; /* no update, or a restore (ASSIGN), which either kind sends */
    fl_server *s = c->server;
    char *mine = sync ? s->sync_worker : s->async_worker, task[sizeof s->sync_worker];
    const char *other = sync ? s->async_worker : s->sync_worker;
    snprintf(task, sizeof task, "/job:%s/task:%d", c->job, c->task);
    if (!other[0] || strcmp(other, task) == 0) {
        if (!mine[0]) /* a refused worker is not kept: the first kind goes on */
            snprintf(mine, sizeof s->sync_worker, "%s", task);
        return false;
    }
    char why[FL_WIRE_ERROR_LEN];
    snprintf(why, sizeof why, "%s trains with --sync_replicas %s, and %s with --sync_replicas %s: start every "
             "worker of this ps with the same --sync_replicas", other, sync ? "false" : "true", task,
             sync ? "true" : "false");
    if (!s->sync_modes_logged)
        fl_server_log_conn(c, "refused an update from", why);
    s->sync_modes_logged = true;
    fl_wire_put_error(&s->out, id, FL_WIRE_E_MISMATCH, why);
    fl_server_send_out(c);
    return true;
}

/* A dropped update counts once as a variable update, and once per step of
 * the worker that sent it: its connection's steps follow one another. */
static void count_stale(fl_server_conn *c)
{
    fl_server *s = c->server;
    uint64_t step = fl_ps_sync_last_step(s->sync); /* the step the update was counted toward */
    fl_server_count(s, &s->stats.stale_variable_updates, 1);
    if (!c->dropped_any || c->dropped_step != step)
        fl_server_count(s, &s->stats.stale_steps, 1);
    c->dropped_any = true;
    c->dropped_step = step;
}

void fl_server_serve_sync_update(fl_server_conn *c, const fl_wire_message *m)
{
    fl_server *s = c->server;
    bool is_apply = m->type == FL_WIRE_SYNC_APPLY;
    const char *vars[1 + FL_WIRE_MAX_SLOTS] = {is_apply ? m->u.apply.name : m->u.named.name};
    int nvars = 1 + (is_apply ? m->u.apply.opt.nslots : 0);
    for (int i = 1; i < nvars; i++)
        vars[i] = m->u.apply.opt.slots[i - 1];
    for (int i = 0; i < nvars; i++)
        if (fl_server_answer_if_missing(c, m->request_id, vars[i]))
            return;
    fl_attrs attrs;
    fl_op_kind op = fl_server_update_op(m, &attrs);
    fl_tensor arg = fl_server_received(s, is_apply ? &m->u.apply.grad : &m->u.named.tensor);
    fl_wire_sync_outcome outcome;
    fl_status st = {0};
    if (fl_ps_sync_update(s->sync, op, &attrs, vars, nvars, &arg, &m->sync, &outcome, &st) != 0)
        return fl_server_refuse(c, m->request_id, fl_wire_error_for(st.code), st.message);
    if (outcome == FL_WIRE_SYNC_DROPPED)
        count_stale(c);
    s->sync_replicas = m->sync.replicas;
    if (m->type == FL_WIRE_SYNC_ASSIGN_ADD) {
        c->counted = true;
        c->counted_step = fl_ps_sync_last_step(s->sync);
    }
    fl_wire_put_sync_done(&s->out, m->request_id, outcome);
    fl_server_send_out(c);
    if (outcome == FL_WIRE_SYNC_APPLIED)
        fl_server_wake_waits(s, vars[0]);
}

/* The step has moved, in either direction: a restore may set it back. */
static bool answer_wait(fl_server_conn *c, uint32_t id, const char *name, uint64_t step)
{
    fl_server *s = c->server;
    const fl_tensor *value = fl_ps_store_get(s->store, name);
    uint64_t now;
    if (!value || !fl_server_read_step(value, &now) || now == step)
        return false;
    fl_server_send_value(c, id, name);
    return true;
}

/* Whether a synchronous step can still complete: enough tasks have not said
 * goodbye to bring replicas_to_aggregate updates. Once the others have
 * finished, a straggler's token is answered at once with the step as it is,
 * rather than parked for a step nobody will complete. */
static bool step_can_complete(const fl_server *s)
{
    int left = s->num_workers + s->num_chiefs - (int)s->stats.goodbyes;
    return s->sync_replicas == 0 || left >= (int)s->sync_replicas;
}

static void answer_now(fl_server_conn *c, uint32_t id, const char *name)
{
    fl_server_send_value(c, id, name);
}

void fl_server_serve_wait_step(fl_server_conn *c, uint32_t id, const fl_wire_wait_step *w)
{
    fl_server *s = c->server;
    if (fl_server_answer_if_missing(c, id, w->name))
        return;
    uint64_t now;
    if (!fl_server_read_step(fl_ps_store_get(s->store, w->name), &now))
        return fl_server_refuse(c, id, FL_WIRE_E_MISMATCH, "WAIT_STEP: the variable is not an int32 scalar");
    uint64_t step = w->step != FL_WIRE_STEP_UNKNOWN ? w->step : c->counted ? c->counted_step : now;
    if (answer_wait(c, id, w->name, step))
        return;
    if (!step_can_complete(s))
        return answer_now(c, id, w->name);
    c->parked = true;
    c->parked_id = id;
    c->parked_step = step;
    snprintf(c->parked_name, sizeof c->parked_name, "%s", w->name);
    bufferevent_disable(c->bev, EV_READ);
}

/* Reading resumes; frames that arrived meanwhile are served now. */
static void resume(fl_server_conn *c)
{
    c->parked = false;
    bufferevent_enable(c->bev, EV_READ);
    fl_server_serve_buffered(c);
}

/* The first parked connection answered: among those waiting on variable
 * `name`, one whose step has moved; with name NULL, any, answered at once
 * with the step as it is. NULL when none. */
static fl_server_conn *answer_one(fl_server *s, const char *name)
{
    for (fl_server_conn *c = s->conns; c; c = c->next) {
        if (!c->parked || (name && strcmp(c->parked_name, name) != 0))
            continue;
        if (!name)
            answer_now(c, c->parked_id, c->parked_name);
        else if (!answer_wait(c, c->parked_id, c->parked_name, c->parked_step))
            continue;
        return c;
    }
    return NULL;
}

/* Each answer resumes its connection, which may park, wake or close others:
 * the search starts over after each. */
void fl_server_wake_waits(fl_server *s, const char *name)
{
    fl_server_conn *c;
    while ((c = answer_one(s, name)))
        resume(c);
}

void fl_server_release_stuck_waits(fl_server *s)
{
    fl_server_conn *c;
    while (!step_can_complete(s) && (c = answer_one(s, NULL)))
        resume(c);
}
