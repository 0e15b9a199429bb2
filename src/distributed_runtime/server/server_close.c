/* server_close.c: how a task server's connection ends: refused for bad
 * input (an ERROR frame if the stream allows one, a log line naming the
 * peer and the reason, then closed once the error is out), lost at its
 * peer's end, or closed at stop after its last replies are out. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "server_internal.h"

/* The peer's address and the name it gave are the peer's words: escaped. */
void fl_server_log_conn(const fl_server_conn *c, const char *what, const char *detail)
{
    fl_server *s = c->server;
    char peer[4 * sizeof c->peer], who[4 * sizeof c->who];
    fl_escape_untrusted(c->peer, strlen(c->peer), peer, sizeof peer);
    fl_escape_untrusted(c->who, strlen(c->who), who, sizeof who);
    fprintf(s->log, "%s: %s %s%s%s: %s\n", s->log_prefix, what, peer, who[0] ? " " : "", who, detail);
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

/* A connection that was challenged and never proved itself is counted as
 * refused, and logged unless its refusal was (a worker without the secret
 * hangs up after the CHALLENGE without a word). */
void fl_server_free_conn(fl_server_conn *c)
{
    fl_server_drop_partitions(c);
    if (c->challenged) {
        fl_server_count(c->server, &c->server->stats.refused, 1);
        if (!c->closing)
            fl_server_log_conn(c, "refused", "it closed without proving it knows the cluster secret");
    }
    if (c->who[0]) /* welcomed: join counts how long its task has been away */
        fl_server_note_disconnected(c->server, c->job, c->task);
    unlink_conn(c);
    if (c->deadline)
        event_free(c->deadline);
    bufferevent_free(c->bev);
    free(c);
}

/* A TLS connection's output is written by its bufferevent in the loop, so
 * the loop runs a few more rounds, up to a second, while any is queued. */
static void drain_tls(fl_server *s)
{
    for (int round = 0; round < 100; round++) {
        bool queued = false;
        for (fl_server_conn *c = s->conns; c; c = c->next)
            queued = queued || (c->tls && evbuffer_get_length(bufferevent_get_output(c->bev)) > 0);
        if (!queued)
            return;
        event_base_loop(s->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* At stop: replies still queued (the OK to the last worker's goodbye) go
 * out before the connections close, so no worker sees its goodbye lost. */
void fl_server_close_all(fl_server *s)
{
    drain_tls(s);
    while (s->conns) {
        if (s->conns->tls) { /* TLS has its own bytes to write: drain_tls did what it could */
            fl_server_free_conn(s->conns);
            continue;
        }
        struct evbuffer *out = bufferevent_get_output(s->conns->bev);
        evbuffer_unfreeze(out, 1); /* a socket bufferevent keeps its output's front for itself */
        for (int tries = 0; tries < 100 && evbuffer_get_length(out) > 0; tries++)
            if (evbuffer_write(out, bufferevent_getfd(s->conns->bev)) < 0)
                break;
        fl_server_free_conn(s->conns);
    }
}

static void close_when_sent(struct bufferevent *bev, void *conn)
{
    (void)bev;
    fl_server_free_conn(conn);
}

void fl_server_refuse(fl_server_conn *c, uint32_t id, fl_wire_error_code code, const char *why)
{
    fl_server *s = c->server;
    fl_server_log_conn(c, "closing", why);
    fl_server_count(s, &s->stats.bad_frames, 1);
    fl_wire_put_error(&s->out, id, code, why);
    fl_server_send_out(c);
    c->closing = true;
    bufferevent_disable(c->bev, EV_READ);
    bufferevent_setcb(c->bev, NULL, close_when_sent, NULL, c);
}
