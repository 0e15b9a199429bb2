/* server_requests.c: what a task server does with each request a peer
 * sends: HELLO, GOODBYE and IS_INITIALIZED here (a variable lives in the
 * task's container, where its partitions keep it), the handshake's PROOF
 * and the partitions' frames handed on; the bytes are server_conn.c's. */
#include <string.h>

#include "distributed_runtime/partition/partition_client.h"
#include "server_internal.h"

static void serve_hello(fl_server_conn *c, uint32_t id, const fl_wire_hello *h)
{
    fl_server *s = c->server;
    char why[FL_WIRE_ERROR_LEN];
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
}

static void serve_is_initialized(fl_server_conn *c, uint32_t id, const char *name)
{
    fl_server *s = c->server; /* a variable of a partition on this task (the task's container) */
    bool has = fl_variable_container_has_value(s->variables, name);
    fl_wire_put_init_done(&s->out, id, has);
    fl_server_send_out(c);
}

/* One whole frame: checked for its place in the conversation, parsed, served. */
void fl_server_serve_frame(fl_server_conn *c, const fl_wire_frame *f)
{
    fl_status st = {0};
    fl_wire_message *m = c->server->message;
    if (fl_wire_check_order(&c->order, f->type, &st) != 0) {
        fl_server_refuse(c, f->request_id, FL_WIRE_E_OUT_OF_ORDER, st.message);
    } else if (fl_wire_parse_in(f, c->server->arena, m, &st) != 0) {
        fl_server_refuse(c, f->request_id, FL_WIRE_E_BAD_FRAME, st.message);
    } else {
        fl_server_count(c->server, &c->server->stats.frames, 1);
        fl_server_note_request(c->server, c, m->type);
        c->requested = c->requested || (m->type != FL_WIRE_HELLO && m->type != FL_WIRE_PROOF);
        switch (m->type) {
        case FL_WIRE_HELLO: serve_hello(c, f->request_id, &m->u.hello); break;
        case FL_WIRE_GOODBYE: serve_goodbye(c, f->request_id); break;
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
