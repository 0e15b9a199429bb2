/* server_conn.c: one client connection to a task's server. Bytes arrive in
 * the connection's input buffer; whole frames are cut off its front (the
 * read watermark makes libevent call back only once a frame is complete),
 * checked, served from the ps store and answered. Anything wrong with what a
 * client sent closes that connection alone, after an ERROR frame and a log
 * line naming the peer and the reason; the server serves everyone else. */
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>

#include "server_internal.h"

static void log_line(const fl_server_conn *c, const char *what, const char *detail)
{
    fl_server *s = c->server;
    fprintf(s->log, "%s: %s %s%s%s: %s\n", s->log_prefix, what, c->peer, c->who[0] ? " " : "", c->who, detail);
    fflush(s->log);
}

static void unlink_conn(fl_server_conn *c)
{
    for (fl_server_conn **p = &c->server->conns; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            return;
        }
    }
}

static void free_conn(fl_server_conn *c)
{
    unlink_conn(c);
    fl_server_forget_waits(c);
    bufferevent_free(c->bev);
    free(c);
}

/* At stop: replies still queued (the OK to the last worker's goodbye) go
 * out before the connections close, so no worker sees its goodbye lost. */
void fl_server_close_all(fl_server *s)
{
    while (s->conns) {
        struct evbuffer *out = bufferevent_get_output(s->conns->bev);
        evbuffer_unfreeze(out, 1); /* a socket bufferevent keeps its output's front for itself */
        for (int tries = 0; tries < 100 && evbuffer_get_length(out) > 0; tries++)
            if (evbuffer_write(out, bufferevent_getfd(s->conns->bev)) < 0)
                break;
        free_conn(s->conns);
    }
}

static void close_when_sent(struct bufferevent *bev, void *conn)
{
    (void)bev;
    free_conn(conn);
}

/* Bad input: an ERROR frame if the stream allows one, a log line, then the
 * connection closes once the error is sent. */
void fl_server_refuse(fl_server_conn *c, uint32_t id, fl_wire_error_code code, const char *why)
{
    fl_server *s = c->server;
    log_line(c, "closing", why);
    fl_server_count(s, &s->stats.bad_frames, 1);
    fl_wire_put_error(&s->out, id, code, why);
    fl_server_send_out(c);
    c->closing = true;
    bufferevent_disable(c->bev, EV_READ);
    bufferevent_setcb(c->bev, NULL, close_when_sent, NULL, c);
}

/* A request that cannot be served now, though nothing was wrong with it
 * (a variable not initialised yet): an ERROR reply, and the connection stays. */
static void answer_error(fl_server_conn *c, uint32_t id, fl_wire_error_code code, const char *why)
{
    fl_wire_put_error(&c->server->out, id, code, why);
    fl_server_send_out(c);
}

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
    if ((int)h->task_index >= fl_cluster_num_tasks(s->cluster, h->job)) {
        snprintf(why, sizeof why, "HELLO from /job:%s/task:%u, which is not in this cluster spec", h->job,
                 h->task_index);
        return fl_server_refuse(c, id, FL_WIRE_E_BAD_FRAME, why);
    }
    snprintf(c->job, sizeof c->job, "%s", h->job);
    c->task = (int)h->task_index;
    snprintf(c->who, sizeof c->who, "(/job:%s/task:%d)", c->job, c->task);
    bufferevent_set_timeouts(c->bev, NULL, NULL); /* a worker may compute for long between requests */
    fl_wire_put_hello_ok(&s->out, id, s->job, (uint32_t)s->task);
    fl_server_send_out(c);
}

static void serve_init(fl_server_conn *c, uint32_t id, const fl_wire_named_tensor *m)
{
    fl_server *s = c->server;
    fl_tensor value = fl_server_received(s, &m->tensor);
    char why[FL_WIRE_ERROR_LEN];
    int rc = fl_ps_store_init(s->store, m->name, &value, why, sizeof why);
    if (rc < 0)
        return fl_server_refuse(c, id, FL_WIRE_E_MISMATCH, why);
    if (rc == 1)
        fl_ps_sync_reset(s->sync, m->name);
    update_store_stats(s);
    fl_wire_put_init_done(&s->out, id, rc == 0);
    fl_server_send_out(c);
}

bool fl_server_answer_if_missing(fl_server_conn *c, uint32_t id, const char *name)
{
    if (fl_ps_store_get(c->server->store, name))
        return false;
    char why[FL_WIRE_ERROR_LEN];
    snprintf(why, sizeof why, "variable %s has no value on %s yet (the chief initialises variables)", name,
             c->server->name);
    answer_error(c, id, FL_WIRE_E_NOT_INITIALIZED, why);
    return true;
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
    char why[FL_WIRE_ERROR_LEN];
    if (fl_ps_store_run(s->store, op, &attrs, vars, 1 + a->opt.nslots, &grad, why, sizeof why) != 0)
        return fl_server_refuse(c, id, FL_WIRE_E_MISMATCH, why);
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
    char why[FL_WIRE_ERROR_LEN];
    if (fl_ps_store_run(s->store, op, &none, vars, 1, &value, why, sizeof why) != 0)
        return fl_server_refuse(c, id, FL_WIRE_E_MISMATCH, why);
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

static void release_stuck_waits(fl_server *s);

static void serve_goodbye(fl_server_conn *c, uint32_t id)
{
    fl_server *s = c->server;
    c->said_goodbye = true;
    fl_wire_put_ok(&s->out, id);
    fl_server_send_out(c);
    if (fl_server_note_goodbye(s, c->job, c->task)) {
        fprintf(s->log, "%s: every worker has finished\n", s->log_prefix);
        fflush(s->log);
    }
    release_stuck_waits(s);
}

/* ---- synchronous replicas (chapter 4): updates counted toward a step, the
 * step's token (WAIT_STEP, parked until the step moves: the connection reads
 * nothing more until then, so replies stay in order), the ready check ---- */

typedef struct fl_parked_wait {
    fl_server_conn *conn;
    uint32_t id;
    char name[FL_WIRE_MAX_NAME + 1];
    uint64_t step;
    struct fl_parked_wait *next;
} fl_parked_wait;

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
    char why[FL_WIRE_ERROR_LEN];
    if (fl_ps_sync_update(s->sync, op, &attrs, vars, nvars, &arg, &m->sync, &outcome, why, sizeof why) != 0)
        return fl_server_refuse(c, m->request_id, FL_WIRE_E_MISMATCH, why);
    if (outcome == FL_WIRE_SYNC_DROPPED)
        fl_server_count(s, &s->stats.stale_updates, 1);
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

static void release_stuck_waits(fl_server *s)
{
    while (s->waits && !step_can_complete(s)) {
        fl_parked_wait *p = s->waits;
        s->waits = p->next;
        fl_server_conn *c = p->conn;
        answer_now(c, p->id, p->name);
        free(p);
        resume(c);
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

/* One whole frame: checked for its place in the conversation, parsed, served. */
static void serve_frame(fl_server_conn *c, const fl_wire_frame *f)
{
    char why[FL_WIRE_ERROR_LEN];
    fl_wire_message *m = c->server->message;
    if (fl_wire_check_order(&c->order, f->type, why, sizeof why) != 0) {
        fl_server_refuse(c, f->request_id, FL_WIRE_E_OUT_OF_ORDER, why);
    } else if (fl_wire_parse(f, m, why, sizeof why) != 0) {
        fl_server_refuse(c, f->request_id, FL_WIRE_E_BAD_FRAME, why);
    } else {
        fl_server_count(c->server, &c->server->stats.frames, 1);
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
        case FL_WIRE_IS_INITIALIZED: fl_server_serve_is_initialized(c, f->request_id, m->u.name); break;
        default: fl_server_refuse(c, f->request_id, FL_WIRE_E_OUT_OF_ORDER, "a reply sent to a server"); break;
        }
    }
}

/* A big frame (a gradient of 13 MB) gets one piece of memory before its
 * bytes arrive: libevent then reads them in behind its start, and the
 * pullup that hands the frame to the decoder has nothing to copy. A tensor
 * ends such a frame, so placing the frame's end on a 4-byte boundary puts
 * the tensor's data on one too, and the ps applies a gradient where it
 * lies (fl_server_received). */
static void make_room_for_frame(struct evbuffer *in, size_t have, size_t need)
{
    if (need < FL_SERVER_BIG_FRAME)
        return;
    struct evbuffer_iovec room;
    /* The input's end is the bufferevent's, frozen to others; it reads
     * again only after this callback, on this thread, so thaw it here. */
    evbuffer_unfreeze(in, 0);
    if (evbuffer_reserve_space(in, (ev_ssize_t)(need + 3), &room, 1) == 1) {
        size_t skip = (4 - ((uintptr_t)room.iov_base + need) % 4) % 4;
        evbuffer_copyout(in, (unsigned char *)room.iov_base + skip, have); /* the little that is in */
        room.iov_len = skip + have;
        evbuffer_commit_space(in, &room, 1);
        evbuffer_drain(in, have + skip); /* the first copy, and the bytes skipped */
    } else {
        evbuffer_pullup(in, -1);
        evbuffer_expand(in, need - have);
    }
    evbuffer_freeze(in, 0);
}

/* libevent calls this when at least the read watermark's bytes are in. */
void fl_server_on_read(struct bufferevent *bev, void *conn)
{
    fl_server_conn *c = conn;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        size_t len = evbuffer_get_length(in);
        size_t look = len < FL_WIRE_HEADER_BYTES ? len : FL_WIRE_HEADER_BYTES;
        fl_wire_frame f;
        char why[FL_WIRE_ERROR_LEN];
        if (look == 0)
            return;
        fl_wire_status st = fl_wire_decode(evbuffer_pullup(in, (ev_ssize_t)look), look, &f, why, sizeof why);
        if (st == FL_WIRE_BAD)
            return fl_server_refuse(c, 0, FL_WIRE_E_BAD_FRAME, why);
        size_t need = look < FL_WIRE_HEADER_BYTES
                          ? FL_WIRE_HEADER_BYTES
                          : fl_wire_frame_length(evbuffer_pullup(in, FL_WIRE_HEADER_BYTES));
        if (len < need) { /* wake me when the whole frame is here */
            if (c->room_made != need) /* once per frame: a parked connection comes back here */
                make_room_for_frame(in, len, need);
            c->room_made = need;
            bufferevent_setwatermark(bev, EV_READ, need, 0);
            return;
        }
        bufferevent_setwatermark(bev, EV_READ, 0, 0);
        c->room_made = 0;
        fl_server_count(c->server, &c->server->stats.bytes_in, need);
        if (fl_wire_decode(evbuffer_pullup(in, (ev_ssize_t)need), need, &f, why, sizeof why) != FL_WIRE_FRAME)
            return fl_server_refuse(c, 0, FL_WIRE_E_BAD_FRAME, why);
        serve_frame(c, &f);
        if (c->closing)
            return; /* refused: the connection closes once the error is out */
        evbuffer_drain(in, need);
        if (c->parked)
            return; /* a WAIT_STEP is parked: the next frame waits for its answer */
    }
}

static void on_event(struct bufferevent *bev, short events, void *conn)
{
    fl_server_conn *c = conn;
    char why[FL_WIRE_ERROR_LEN];
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t left = evbuffer_get_length(in);
    if (events & BEV_EVENT_TIMEOUT)
        log_line(c, "dropping", "said nothing before the hello timeout");
    else if (left && fl_wire_check_eof(evbuffer_pullup(in, -1), left, why, sizeof why) != 0)
        log_line(c, "lost", why);
    else if (c->who[0] && !c->said_goodbye && (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        log_line(c, "lost", "disconnected without saying goodbye (fl_monitored_session_close says it; "
                            "without a monitored session, call fl_cluster_say_goodbye)");
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        free_conn(c);
}

static void describe_peer(const struct sockaddr *address, int length, char *out, size_t len)
{
    char host[64] = "?", port[16] = "?";
    getnameinfo(address, (socklen_t)length, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(out, len, "%s:%s", host, port);
}

void fl_server_accept(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *address,
                      int length, void *server)
{
    (void)listener;
    fl_server *s = server;
    fl_server_conn *c = fl_xcalloc(1, sizeof *c);
    c->server = s;
    c->task = -1;
    fl_wire_conn_init(&c->order, FL_WIRE_SERVER_SIDE);
    describe_peer(address, length, c->peer, sizeof c->peer);
    int one = 1; /* replies are small and awaited: no Nagle delay */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(c->bev, fl_server_on_read, NULL, on_event, c);
    /* libevent moves 16 KiB per read or write by default: a 13 MB gradient
     * would take 800 trips through the event loop each way. */
    bufferevent_set_max_single_read(c->bev, FL_SERVER_MAX_SINGLE_IO);
    bufferevent_set_max_single_write(c->bev, FL_SERVER_MAX_SINGLE_IO);
    struct timeval hello = {(time_t)s->hello_timeout_s,
                            (suseconds_t)((s->hello_timeout_s - (time_t)s->hello_timeout_s) * 1e6)};
    bufferevent_set_timeouts(c->bev, &hello, NULL);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->next = s->conns;
    s->conns = c;
    fl_server_count(s, &s->stats.connections, 1);
}
