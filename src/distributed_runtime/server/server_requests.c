/* server_requests.c: what a task server does with each request a worker
 * sends (HELLO, INIT_VARIABLE, PULL, APPLY, ASSIGN, ASSIGN_ADD, GOODBYE,
 * IS_INITIALIZED): served from the ps store, IS_INITIALIZED from the
 * task's variable container too, and answered. The synchronous ones
 * (chapter 4) are server_sync.c's; the bytes, server_conn.c's. */
#include <string.h>

#include "distributed_runtime/partition/partition_client.h"
#include "server_internal.h"

static void update_store_stats(fl_server *s)
{
    pthread_mutex_lock(&s->lock);
    s->stats.variables = fl_ps_store_count(s->store);
    s->stats.variable_bytes = fl_ps_store_bytes(s->store);
    pthread_mutex_unlock(&s->lock);
}

static void serve_hello(fl_server_conn *c, uint32_t id, const fl_wire_hello *h)
{
    fl_server *s = c->server;
    char why[FL_WIRE_ERROR_LEN];
    if (h->version != FL_WIRE_VERSION) {
        snprintf(why, sizeof why, "HELLO: protocol version %u; this server speaks %u", h->version, FL_WIRE_VERSION);
        return fl_server_refuse(c, id, FL_WIRE_E_BAD_FRAME, why);
    }
    bool is_client = strcmp(h->job, FL_WIRE_CLIENT_JOB) == 0; /* a master in a client: no task */
    if (!is_client && (int)h->task_index >= fl_cluster_num_tasks(s->cluster, h->job)) {
        char job[4 * 64 + 1]; /* the peer's words, escaped and cut */
        fl_escape_untrusted(h->job, strlen(h->job), job, sizeof job);
        snprintf(why, sizeof why, "HELLO from /job:%s/task:%u, which is not in this cluster spec", job,
                 h->task_index);
        return fl_server_refuse(c, id, FL_WIRE_E_BAD_FRAME, why);
    }
    snprintf(c->job, sizeof c->job, "%s", h->job);
    c->task = (int)h->task_index;
    if (!fl_server_challenge(c, id)) /* with a secret, welcomed once it has proven it knows it */
        fl_server_welcome(c, id);
}

static void serve_init(fl_server_conn *c, uint32_t id, const fl_wire_named_tensor *m)
{
    fl_server *s = c->server;
    fl_tensor value = fl_server_received(s, &m->tensor);
    char why[FL_WIRE_ERROR_LEN];
    if (!fl_ps_store_get(s->store, m->name) && fl_ps_store_count(s->store) >= s->limits.max_variables) {
        snprintf(why, sizeof why, "INIT_VARIABLE %s: %s already holds %d variables, the most it may (--max_variables)",
                 m->name, s->name, fl_ps_store_count(s->store));
        return fl_server_refuse(c, id, fl_wire_error_for(FL_RESOURCE_EXHAUSTED), why);
    }
    fl_status st = {0};
    int rc = fl_ps_store_init(s->store, m->name, &value, &st);
    if (rc < 0)
        return fl_server_refuse(c, id, fl_wire_error_for(st.code), st.message);
    if (rc == 1)
        fl_ps_sync_reset(s->sync, m->name);
    update_store_stats(s);
    fl_wire_put_init_done(&s->out, id, rc == 0);
    fl_server_send_out(c);
}

static void serve_pull(fl_server_conn *c, uint32_t id, const char *name)
{
    if (fl_server_answer_if_missing(c, id, name))
        return;
    fl_server_send_value(c, id, name);
}

static void serve_apply(fl_server_conn *c, uint32_t id, const fl_wire_apply *a)
{
    fl_server *s = c->server;
    const char *vars[1 + FL_WIRE_MAX_SLOTS] = {a->name};
    for (int i = 0; i < a->opt.nslots; i++)
        vars[1 + i] = a->opt.slots[i];
    for (int i = 0; i <= a->opt.nslots; i++)
        if (fl_server_answer_if_missing(c, id, vars[i]))
            return;
    fl_attrs attrs;
    fl_op_kind op = fl_server_apply_op(a->opt.kind, &a->opt, &attrs);
    fl_tensor grad = fl_server_received(s, &a->grad);
    fl_status st = {0};
    if (fl_ps_store_run(s->store, op, &attrs, vars, 1 + a->opt.nslots, &grad, &st) != 0)
        return fl_server_refuse(c, id, fl_wire_error_for(st.code), st.message);
    fl_wire_put_applied(&s->out, id, ++s->applies);
    fl_server_send_out(c);
}

/* ASSIGN_ADD (answered with the sum: the new global step) and ASSIGN. */
static void serve_assignment(fl_server_conn *c, uint32_t id, fl_op_kind op, const fl_wire_named_tensor *m)
{
    fl_server *s = c->server;
    if (fl_server_answer_if_missing(c, id, m->name))
        return;
    fl_tensor value = fl_server_received(s, &m->tensor);
    const char *vars[1] = {m->name};
    fl_attrs none = {0};
    fl_status st = {0};
    if (fl_ps_store_run(s->store, op, &none, vars, 1, &value, &st) != 0)
        return fl_server_refuse(c, id, fl_wire_error_for(st.code), st.message);
    if (op == FL_OP_ASSIGN_ADD) {
        fl_server_send_value(c, id, m->name);
    } else {
        fl_wire_put_ok(&s->out, id);
        fl_server_send_out(c);
    }
    if (op == FL_OP_ASSIGN) /* a restore: what synchronous replicas held is void */
        fl_ps_sync_reset(s->sync, m->name);
    fl_server_wake_waits(s, m->name);
}

static void serve_goodbye(fl_server_conn *c, uint32_t id)
{
    fl_server *s = c->server;
    c->said_goodbye = true;
    fl_wire_put_ok(&s->out, id);
    fl_server_send_out(c);
    if (fl_server_note_goodbye(s, c->job, c->task)) {
        fprintf(s->log, "%s: %s\n", s->log_prefix,
                strcmp(c->job, FL_WIRE_CLIENT_JOB) == 0 ? "its client has said goodbye" : "every worker has finished");
        fflush(s->log);
    }
    fl_server_release_stuck_waits(s);
}

static void serve_is_initialized(fl_server_conn *c, uint32_t id, const char *name)
{
    fl_server *s = c->server; /* a variable of the ps store, or of a partition (the task's container) */
    bool has = fl_ps_store_get(s->store, name) != NULL || fl_variable_container_has_value(s->variables, name);
    fl_wire_put_init_done(&s->out, id, has);
    fl_server_send_out(c);
}

/* One whole frame: checked for its place in the conversation, parsed, served. */
void fl_server_serve_frame(fl_server_conn *c, const fl_wire_frame *f)
{
    fl_status st = {0};
    fl_wire_message *m = c->server->message;
    if (c->running) /* served after the run's reply; only an ABORT_STEP is acted on now */
        fl_server_peek_while_running(c, f);
    else if (fl_wire_check_order(&c->order, f->type, &st) != 0) {
        fl_server_refuse(c, f->request_id, FL_WIRE_E_OUT_OF_ORDER, st.message);
    } else if (fl_wire_parse(f, m, &st) != 0) {
        fl_server_refuse(c, f->request_id, FL_WIRE_E_BAD_FRAME, st.message);
    } else {
        fl_server_count(c->server, &c->server->stats.frames, 1);
        fl_server_note_request(c->server, c, m->type);
        c->requested = c->requested || (m->type != FL_WIRE_HELLO && m->type != FL_WIRE_PROOF);
        if (fl_server_refuses_other_sync_mode(c, f->request_id, m->type))
            return;
        switch (m->type) {
        case FL_WIRE_HELLO: serve_hello(c, f->request_id, &m->u.hello); break;
        case FL_WIRE_INIT_VARIABLE: serve_init(c, f->request_id, &m->u.named); break;
        case FL_WIRE_PULL: serve_pull(c, f->request_id, m->u.name); break;
        case FL_WIRE_APPLY: serve_apply(c, f->request_id, &m->u.apply); break;
        case FL_WIRE_ASSIGN_ADD: serve_assignment(c, f->request_id, FL_OP_ASSIGN_ADD, &m->u.named); break;
        case FL_WIRE_ASSIGN: serve_assignment(c, f->request_id, FL_OP_ASSIGN, &m->u.named); break;
        case FL_WIRE_GOODBYE: serve_goodbye(c, f->request_id); break;
        case FL_WIRE_SYNC_APPLY:
        case FL_WIRE_SYNC_ASSIGN:
        case FL_WIRE_SYNC_ASSIGN_ADD: fl_server_serve_sync_update(c, m); break;
        case FL_WIRE_WAIT_STEP: fl_server_serve_wait_step(c, f->request_id, &m->u.wait); break;
        case FL_WIRE_IS_INITIALIZED: serve_is_initialized(c, f->request_id, m->u.name); break;
        case FL_WIRE_REGISTER_PARTITION:
        case FL_WIRE_RUN_PARTITION:
        case FL_WIRE_SEND_TENSOR:
        case FL_WIRE_ABORT_STEP:
        case FL_WIRE_DEREGISTER_PARTITION: fl_server_serve_partition_frame(c, f, m); break;
        case FL_WIRE_PROOF: fl_server_serve_proof(c, f->request_id, &m->u.handshake); break;
        default: fl_server_refuse(c, f->request_id, FL_WIRE_E_OUT_OF_ORDER, "a reply sent to a server"); break;
        }
    }
}
