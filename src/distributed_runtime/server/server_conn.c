/* server_conn.c: one client connection to a task's server, as bytes.
 * Bytes arrive in the connection's input buffer; whole frames are cut off
 * its front (the read watermark makes libevent call back only once a frame
 * is complete, and a big frame gets room of its own before it arrives) and
 * handed to server_requests.c. A frame that does not decode closes that
 * connection alone (server_close.c); the server serves everyone else. */
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "distributed_runtime/partition/cluster_security.h"
#include "distributed_runtime/partition/partition_client.h"
#include "server_internal.h"

/* A big frame (a gradient of 13 MB) gets one piece of memory before its
 * bytes arrive: libevent then reads them in behind its start, and the
 * pullup that hands the frame to the decoder has nothing to copy. A tensor
 * ends such a frame, so placing the frame's end on a 4-byte boundary puts
 * the tensor's data on one too (a SEND_TENSOR's value, read as words). */
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

/* libevent 2.1 reads a socket at most 4096 bytes at a time
 * (EVBUFFER_MAX_READ; 2.2 lets a program raise it): a wakeup, an ioctl and a
 * read for every 4 kB, 3,200 of each for a 13 MB gradient, which made a
 * value cross loopback at a fifth of the speed of a plain socket. A big
 * frame's room is one piece of memory, so each wakeup reads what the kernel
 * holds straight into it. Returns the bytes of the frame now in. */
static size_t read_rest_of_frame(struct bufferevent *bev, struct evbuffer *in, size_t have, size_t need)
{
    evutil_socket_t fd = bufferevent_getfd(bev);
    struct evbuffer_iovec room;
    evbuffer_unfreeze(in, 0); /* as in make_room_for_frame */
    while (have < need && evbuffer_reserve_space(in, (ev_ssize_t)(need - have), &room, 1) == 1) {
        ssize_t n = recv(fd, room.iov_base, need - have, MSG_DONTWAIT);
        if (n <= 0) /* nothing more yet, or the end: libevent's own read sees it next */
            break;
        room.iov_len = (size_t)n;
        evbuffer_commit_space(in, &room, 1);
        have += (size_t)n;
    }
    evbuffer_freeze(in, 0);
    return have;
}

/* Replies the client has not read: past --max_unread_reply_bytes, reading
 * from it pauses until they have drained to half that (on_write). */
static bool too_many_unread_replies(fl_server_conn *c)
{
    size_t limit = (size_t)c->server->limits.max_unread_reply_bytes;
    size_t unread = evbuffer_get_length(bufferevent_get_output(c->bev));
    if (unread <= limit)
        return false;
    if (!c->reading_paused) {
        char why[160];
        snprintf(why, sizeof why, "%zu bytes of replies unread (--max_unread_reply_bytes %zu)", unread, limit);
        fl_server_log_conn(c, "pausing reads from", why);
    }
    c->reading_paused = true;
    bufferevent_disable(c->bev, EV_READ);
    bufferevent_setwatermark(c->bev, EV_WRITE, limit / 2, 0);
    return true;
}

/* Behind a partition's run in flight, a connection's frames wait in its
 * input. A client waits for PARTITION_DONE, so past --max_bytes_behind_run
 * it is refused, and its run cancelled (pausing would not see it hang up). */
static void refuse_if_too_much_behind_run(fl_server_conn *c, size_t buffered)
{
    uint64_t limit = c->server->limits.max_bytes_behind_run;
    if (buffered <= limit || c->closing)
        return;
    char why[200];
    snprintf(why, sizeof why, "%zu bytes sent behind its partition run in flight, over --max_bytes_behind_run "
             "(%llu): a client waits for PARTITION_DONE", buffered, (unsigned long long)limit);
    fl_server_refuse(c, 0, fl_wire_error_for(FL_RESOURCE_EXHAUSTED), why);
}

/* An ABORT_STEP must reach the run in flight even when it is not the first
 * frame behind it: it may have come in one read with the RUN_PARTITION
 * itself, or after a SEND_TENSOR that waits for the run's end. So every
 * whole frame buffered behind the run is looked at, without draining, and
 * each ABORT_STEP acted on (again: an abort is idempotent); they are
 * served in order after the run. */
static void peek_aborts_behind_run(fl_server_conn *c, struct evbuffer *in)
{
    size_t len = evbuffer_get_length(in), at = 0;
    while (c->running && !c->closing && at + FL_WIRE_HEADER_BYTES <= len) {
        unsigned char frame[256];
        struct evbuffer_ptr pos;
        fl_wire_frame f;
        fl_status why = {0};
        if (evbuffer_ptr_set(in, &pos, at, EVBUFFER_PTR_SET) != 0 ||
            evbuffer_copyout_from(in, &pos, frame, FL_WIRE_HEADER_BYTES) != (ev_ssize_t)FL_WIRE_HEADER_BYTES ||
            fl_wire_decode(frame, FL_WIRE_HEADER_BYTES, &f, &why) == FL_WIRE_BAD)
            return; /* a bad header: refused when its turn comes */
        fl_wire_frame announced = fl_wire_frame_announced(frame);
        if (announced.type == FL_WIRE_ABORT_STEP && announced.frame_len <= sizeof frame &&
            at + announced.frame_len <= len &&
            evbuffer_copyout_from(in, &pos, frame, announced.frame_len) == (ev_ssize_t)announced.frame_len &&
            fl_wire_decode(frame, announced.frame_len, &f, &why) == FL_WIRE_FRAME)
            fl_server_peek_while_running(c, &f);
        at += announced.frame_len;
    }
}

static void on_write(struct bufferevent *bev, void *conn)
{
    fl_server_conn *c = conn;
    if (!c->reading_paused)
        return;
    c->reading_paused = false;
    bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
    fl_server_resume_reading(c);
}

/* What a task without TLS says to a client that opens with a TLS ClientHello
 * (the client cannot read it: its TLS layer sees no record), and logs once. */
#define TLS_CLIENT_AT_PLAIN_TASK                                                                            \
    "a TLS ClientHello (0x16 0x03...), not a frame: the client has --tls_cert/--tls_key/--tls_ca and this " \
    "task not; give this task's server the same flags, or drop them from the client"

/* What a task with TLS says, in a plain ERROR frame, to a client that sent a
 * plain HELLO: the client reads it as a refusal and does not try again. */
#define PLAIN_CLIENT_AT_TLS_TASK                                                                          \
    "this task uses TLS (--tls_cert/--tls_key/--tls_ca) and the client does not: start the client with " \
    "the same flags, or this task without them"

/* libevent calls this when at least the read watermark's bytes are in. */
void fl_server_on_read(struct bufferevent *bev, void *conn)
{
    fl_server_conn *c = conn;
    struct evbuffer *in = bufferevent_get_input(bev);
    c->heard = true;
    for (;;) {
        size_t len = evbuffer_get_length(in);
        size_t look = len < FL_WIRE_HEADER_BYTES ? len : FL_WIRE_HEADER_BYTES;
        fl_wire_frame f;
        fl_status why = {0};
        if (look == 0 || too_many_unread_replies(c))
            return;
        fl_wire_status st = fl_wire_decode(evbuffer_pullup(in, (ev_ssize_t)look), look, &f, &why);
        if (st == FL_WIRE_BAD && fl_wire_looks_like_tls(evbuffer_pullup(in, (ev_ssize_t)look), look))
            return fl_server_refuse(c, 0, FL_WIRE_E_UNAUTHENTICATED, TLS_CLIENT_AT_PLAIN_TASK);
        if (st == FL_WIRE_BAD)
            return fl_server_refuse(c, 0, FL_WIRE_E_BAD_FRAME, why.message);
        size_t need = FL_WIRE_HEADER_BYTES;
        if (look == FL_WIRE_HEADER_BYTES) {
            fl_wire_frame announced = fl_wire_frame_announced(evbuffer_pullup(in, FL_WIRE_HEADER_BYTES));
            if (!fl_server_guard_allows(c, announced.type, &why))
                return fl_server_refuse(c, announced.request_id, FL_WIRE_E_OUT_OF_ORDER, why.message);
            need = announced.frame_len;
        }
        if (c->running) /* a frame announced behind a run counts whole, before it arrives */
            refuse_if_too_much_behind_run(c, need);
        if (c->closing)
            return;
        bool reads_itself = !c->tls && need >= FL_SERVER_BIG_FRAME; /* a big frame on a plain socket */
        if (len < need) { /* wake me when the whole frame is here, or any of a big one */
            if (c->room_made != need && !c->tls) /* once per frame: a connection held by a run comes back here */
                make_room_for_frame(in, len, need);
            c->room_made = need;
            if (reads_itself && read_rest_of_frame(bev, in, len, need) >= need)
                continue;
            bufferevent_setwatermark(bev, EV_READ, reads_itself ? 0 : need, 0);
            return;
        }
        bufferevent_setwatermark(bev, EV_READ, 0, 0);
        c->room_made = 0;
        if (fl_wire_decode(evbuffer_pullup(in, (ev_ssize_t)need), need, &f, &why) != FL_WIRE_FRAME)
            return fl_server_refuse(c, 0, FL_WIRE_E_BAD_FRAME, why.message);
        if (c->running) { /* a partition's run in flight: this frame waits, but an abort is acted on now */
            refuse_if_too_much_behind_run(c, len);
            peek_aborts_behind_run(c, in);
            return;
        }
        fl_server_count_in(c, need);
        fl_server_serve_frame(c, &f);
        if (c->closing)
            return; /* refused: the connection closes once the error is out */
        evbuffer_drain(in, need);
        if (c->running) { /* a run is in flight: the next frame waits for its answer */
            peek_aborts_behind_run(c, in);
            return;
        }
    }
}

/* A client that sent a plain HELLO where TLS was due ("wrong version
 * number": its first bytes are no TLS record) is told so in a plain ERROR
 * frame, written past OpenSSL onto the socket, which is small enough to go
 * at once. What it sent after is read off first, so that closing does not
 * reset the connection before the client has read the frame. */
static void tell_plain_client(struct bufferevent *bev)
{
    evutil_socket_t fd = bufferevent_getfd(bev);
    fl_wire_buf frame = {0};
    char rest[512];
    for (int i = 0; i < 8 && recv(fd, rest, sizeof rest, MSG_DONTWAIT) > 0; i++)
        ;
    if (fl_wire_put_error(&frame, 0, FL_WIRE_E_UNAUTHENTICATED, PLAIN_CLIENT_AT_TLS_TASK) == 0)
        send(fd, frame.data, frame.len, MSG_DONTWAIT | MSG_NOSIGNAL); /* failing: the client has gone */
    fl_wire_buf_free(&frame);
}

/* Why OpenSSL ended a TLS connection (a certificate from another CA, a
 * client that does not speak TLS); false when it was no TLS error. */
static bool tls_refusal(struct bufferevent *bev, fl_status *st)
{
    unsigned long e = bufferevent_get_openssl_error(bev);
    if (!e)
        return false;
    char reason[200];
    ERR_error_string_n(e, reason, sizeof reason);
    bool plain = ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER;
    fl_status_set(st, FL_UNAUTHENTICATED, "the TLS handshake failed: %s%s", reason,
                  plain ? " (a client without --tls_cert/--tls_key/--tls_ca? it was told so in a plain ERROR frame)"
                        : "");
    if (plain)
        tell_plain_client(bev);
    return true;
}

/* A peer welcomed that hangs up before its first request has most likely
 * refused this task's side of the handshake (else it gave up waiting for
 * the answer, or stopped): what this task can tell of why. */
static const char *handshake_refusal(const fl_server *s)
{
    size_t len;
    if (!fl_cluster_secret(s->cluster, &len))
        return "it closed after its HELLO, before any request: a task given a cluster secret refuses one without, "
               "and this task has none (--cluster_secret_file); unless it gave up waiting for the answer, or stopped";
    return "it closed after proving it knows the secret, before any request: it refused this task's proof, so it "
           "expected another task at this address (is its cluster spec the same as this task's?); unless it gave "
           "up waiting for the answer, or stopped";
}

static void on_event(struct bufferevent *bev, short events, void *conn)
{
    fl_server_conn *c = conn;
    fl_status why = {0};
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t left = evbuffer_get_length(in);
    if (c->tls && !c->who[0] && (events & BEV_EVENT_ERROR) && tls_refusal(bev, &why)) {
        fl_server_log_conn(c, "refused", why.message);
        fl_server_count(c->server, &c->server->stats.refused, 1);
    }
    else if (left && fl_wire_check_eof(evbuffer_pullup(in, -1), left, &why) != 0)
        fl_server_log_conn(c, "lost", why.message);
    else if (c->sent_values && (events & BEV_EVENT_EOF)) /* a task server that sent values: exited, or killed */
        fl_server_log_conn(c, "closed", "the task that sent values here disconnected: it exited, or was lost "
                                        "(killed, or its host is gone)");
    else if (c->who[0] && !c->requested && (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        fl_server_log_conn(c, "refused at the handshake by", handshake_refusal(c->server));
    else if (c->partitions && strcmp(c->job, FL_WIRE_CLIENT_JOB) != 0 && (events & BEV_EVENT_EOF))
        fl_server_log_conn(c, "closed", "a between-graph worker's session ended; the pieces it registered go with it "
                                        "(the worker says goodbye on its own connection)");
    else if (c->who[0] && !c->said_goodbye && (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        fl_server_log_conn(c, "lost", "disconnected without saying goodbye (fl_monitored_session_close says it; "
                                        "without a monitored session, call fl_cluster_say_goodbye)");
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        fl_server_free_conn(c);
}

static void describe_peer(const struct sockaddr *address, int length, fl_server_conn *c)
{
    char port[16] = "?";
    snprintf(c->host, sizeof c->host, "?");
    getnameinfo(address, (socklen_t)length, c->host, sizeof c->host, port, sizeof port,
                NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(c->peer, sizeof c->peer, "%s:%s", c->host, port);
}

/* A plain socket's bufferevent, or with the cluster's TLS a TLS server's
 * (libevent_openssl), which verifies the client's certificate. */
static struct bufferevent *new_bufferevent(fl_server *s, evutil_socket_t fd, bool *tls)
{
    SSL_CTX *ctx = fl_cluster_tls(s->cluster, true);
    SSL *ssl = ctx ? SSL_new(ctx) : NULL;
    *tls = ssl != NULL;
    if (!ssl)
        return bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    struct bufferevent *bev =
        bufferevent_openssl_socket_new(s->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev) /* a worker that closes without TLS's close_notify has still just closed */
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
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
    describe_peer(address, length, c);
    int one = 1; /* replies are small and awaited: no Nagle delay */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->bev = new_bufferevent(s, fd, &c->tls);
    bufferevent_setcb(c->bev, fl_server_on_read, on_write, on_event, c);
    /* libevent moves 16 KiB per read or write by default: a 13 MB gradient
     * would take 800 trips through the event loop each way. */
    bufferevent_set_max_single_read(c->bev, FL_SERVER_MAX_SINGLE_IO);
    bufferevent_set_max_single_write(c->bev, FL_SERVER_MAX_SINGLE_IO);
    if (fl_server_guard_stranger(c) != 0) { /* libevent could not make its timer: no room for it */
        bufferevent_free(c->bev);
        free(c);
        return;
    }
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->next = s->conns;
    s->conns = c;
    fl_server_count(s, &s->stats.connections, 1);
}
