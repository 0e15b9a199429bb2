/* server_sync.c: the requests synchronous replicas add (chapter 4). An
 * update counted toward a step (SYNC_APPLY, SYNC_ASSIGN, SYNC_ASSIGN_ADD),
 * a worker's wait for the global step to move on (WAIT_STEP, answered only
 * when it has: the connection reads nothing more until then, so replies
 * stay in order), and the chief's question "has this variable a value?". */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "server_internal.h"

typedef struct fl_parked_wait {
    fl_server_conn *conn;
    uint32_t id;
    char name[FL_WIRE_MAX_NAME + 1];
    uint64_t step;
    struct fl_parked_wait *next;
} fl_parked_wait;

static fl_op_kind update_op(const fl_wire_message *m, fl_attrs *attrs)
{
    memset(attrs, 0, sizeof *attrs);
    if (m->type == FL_WIRE_SYNC_ASSIGN)
        return FL_OP_ASSIGN;
    if (m->type == FL_WIRE_SYNC_ASSIGN_ADD)
        return FL_OP_ASSIGN_ADD;
    return fl_server_apply_op(m->u.apply.opt.kind, &m->u.apply.opt, attrs);
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
    fl_op_kind op = update_op(m, &attrs);
    fl_tensor arg = fl_server_received(s, is_apply ? &m->u.apply.grad : &m->u.named.tensor);
    fl_wire_sync_outcome outcome;
    char why[FL_WIRE_ERROR_LEN];
    if (fl_ps_sync_update(s->sync, op, &attrs, vars, nvars, &arg, &m->sync, &outcome, why, sizeof why) != 0)
        return fl_server_refuse(c, m->request_id, FL_WIRE_E_MISMATCH, why);
    if (outcome == FL_WIRE_SYNC_DROPPED)
        fl_server_count(s, &s->stats.stale_updates, 1);
    if (m->type == FL_WIRE_SYNC_ASSIGN_ADD) {
        c->counted = true;
        c->counted_step = fl_ps_sync_last_step(s->sync);
    }
    fl_wire_put_sync_done(&s->out, m->request_id, outcome);
    fl_server_send_out(c);
    if (outcome == FL_WIRE_SYNC_APPLIED)
        fl_server_wake_waits(s, vars[0]);
}

/* The variable's value as a step: the global step is an int32 scalar. */
static bool read_step(const fl_tensor *t, uint64_t *step)
{
    if (t->dtype != FL_INT32 || fl_shape_size(t->shape) != 1)
        return false;
    int32_t v = *(const int32_t *)t->data;
    *step = v < 0 ? 0 : (uint64_t)v;
    return true;
}

/* The step has moved, in either direction: a restore may set it back. */
static bool answer_wait(fl_server_conn *c, uint32_t id, const char *name, uint64_t step)
{
    fl_server *s = c->server;
    const fl_tensor *value = fl_ps_store_get(s->store, name);
    uint64_t now;
    if (!value || !read_step(value, &now) || now == step)
        return false;
    fl_wire_put_value(&s->out, id, name, value);
    fl_server_send_out(c);
    return true;
}

void fl_server_serve_wait_step(fl_server_conn *c, uint32_t id, const fl_wire_wait_step *w)
{
    fl_server *s = c->server;
    if (fl_server_answer_if_missing(c, id, w->name))
        return;
    uint64_t now;
    if (!read_step(fl_ps_store_get(s->store, w->name), &now))
        return fl_server_refuse(c, id, FL_WIRE_E_MISMATCH, "WAIT_STEP: the variable is not an int32 scalar");
    uint64_t step = w->step != FL_WIRE_STEP_UNKNOWN ? w->step : c->counted ? c->counted_step : now;
    if (answer_wait(c, id, w->name, step))
        return;
    fl_parked_wait *p = fl_xcalloc(1, sizeof *p);
    *p = (fl_parked_wait){.conn = c, .id = id, .step = step, .next = s->waits};
    snprintf(p->name, sizeof p->name, "%s", w->name);
    s->waits = p;
    c->parked = true;
    bufferevent_disable(c->bev, EV_READ);
}

/* Reading resumes; frames that arrived meanwhile are served now. */
static void resume(fl_server_conn *c)
{
    c->parked = false;
    bufferevent_enable(c->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        fl_server_on_read(c->bev, c);
}

void fl_server_wake_waits(fl_server *s, const char *name)
{
    fl_parked_wait **link = &s->waits;
    while (*link) {
        fl_parked_wait *p = *link;
        if (strcmp(p->name, name) != 0 || !answer_wait(p->conn, p->id, p->name, p->step)) {
            link = &p->next;
            continue;
        }
        *link = p->next;
        fl_server_conn *c = p->conn;
        free(p);
        resume(c);
        link = &s->waits; /* resume may have parked or closed others: start over */
    }
}

void fl_server_forget_waits(fl_server_conn *c)
{
    fl_parked_wait **link = &c->server->waits;
    while (*link) {
        fl_parked_wait *p = *link;
        if (p->conn == c) {
            *link = p->next;
            free(p);
        } else {
            link = &p->next;
        }
    }
}

void fl_server_serve_is_initialized(fl_server_conn *c, uint32_t id, const char *name)
{
    fl_wire_put_init_done(&c->server->out, id, fl_ps_store_get(c->server->store, name) != NULL);
    fl_server_send_out(c);
}
