/* server_guard.c: what bounds a connection before it has proven who it is.
 * It has a fixed deadline from accept to HELLO_OK (a TLS handshake included),
 * however often it sends a byte; at most so many such strangers are held, in
 * all and per address, the oldest of the least promising making room for a
 * newcomer (eviction_rank); and when the
 * process runs out of descriptors, accepting pauses a while, logged once. */
#include <errno.h>
#include <string.h>

#include "server_internal.h"

#define STRANGER_READ_BYTES 4096 /* a stranger may send HELLO and PROOF: a few hundred bytes */
#define ACCEPT_PAUSE_S 0.25

static struct timeval seconds_to_timeval(double s)
{
    return (struct timeval){(time_t)s, (suseconds_t)((s - (time_t)s) * 1e6)};
}

/* A line per power of two of some repeated event: an attack does not fill the log. */
static bool worth_logging(uint64_t count) { return (count & (count - 1)) == 0; }

static void drop_stranger(fl_server_conn *c, const char *why)
{
    fl_server *s = c->server;
    if (worth_logging(++s->strangers_dropped)) {
        char line[256];
        snprintf(line, sizeof line, "%s (%llu dropped so far)", why, (unsigned long long)s->strangers_dropped);
        fl_server_log_conn(c, "dropping", line);
    }
    fl_server_free_conn(c);
}

static void on_deadline(evutil_socket_t fd, short events, void *conn)
{
    (void)fd;
    (void)events;
    fl_server_conn *c = conn;
    char why[160];
    snprintf(why, sizeof why, "no HELLO_OK within %g s of connecting (--hello_timeout_s)",
             c->server->limits.hello_timeout_s);
    drop_stranger(c, why);
}

/* Which stranger goes first when one must make room: one that has been
 * heard and still has not sent a whole HELLO (a slowloris: a client sends
 * its HELLO in one write), then one not yet heard (accepted in the same
 * burst as the newcomer: it has had no chance), then one that is proving
 * it knows the secret. Lower goes first. */
static int eviction_rank(const fl_server_conn *c)
{
    if (c->challenged)
        return 2;
    return c->heard ? 0 : 1;
}

/* The stranger to drop first (the list is newest first: the oldest of the
 * lowest rank), from host alone when host is given; *count: how many. */
static fl_server_conn *stranger_to_drop(fl_server *s, const char *host, int *count)
{
    fl_server_conn *first = NULL;
    *count = 0;
    for (fl_server_conn *c = s->conns; c; c = c->next) {
        if (!c->deadline || (host && strcmp(c->host, host) != 0))
            continue;
        if (!first || eviction_rank(c) <= eviction_rank(first))
            first = c;
        ++*count;
    }
    return first;
}

/* Room for one more stranger from host: one goes when a cap is reached. */
static void make_room_for_stranger(fl_server *s, const char *host)
{
    int count;
    fl_server_conn *first = stranger_to_drop(s, host, &count);
    if (first && count >= s->limits.max_unauthenticated_per_address)
        drop_stranger(first, "an unauthenticated connection from its address (the oldest of the least advanced "
                             "in the handshake) makes room for a new one (--max_unauthenticated_per_address)");
    first = stranger_to_drop(s, NULL, &count);
    if (first && count >= s->limits.max_unauthenticated)
        drop_stranger(first, "an unauthenticated connection (the oldest of the least advanced in the handshake) "
                             "makes room for a new one (--max_unauthenticated)");
}

int fl_server_guard_stranger(fl_server_conn *c)
{
    fl_server *s = c->server;
    make_room_for_stranger(s, c->host);
    c->deadline = evtimer_new(s->base, on_deadline, c);
    if (!c->deadline)
        return -1;
    struct timeval limit = seconds_to_timeval(s->limits.hello_timeout_s);
    evtimer_add(c->deadline, &limit);
    bufferevent_set_max_single_read(c->bev, STRANGER_READ_BYTES);
    return 0;
}

void fl_server_guard_welcomed(fl_server_conn *c)
{
    if (c->deadline)
        event_free(c->deadline);
    c->deadline = NULL;
    bufferevent_set_max_single_read(c->bev, FL_SERVER_MAX_SINGLE_IO);
}

bool fl_server_guard_allows(fl_server_conn *c, fl_wire_type announced, fl_status *st)
{
    if (!c->deadline)
        return true;
    fl_wire_conn order = c->order; /* only looked at: the frame is checked again once whole */
    if (fl_wire_check_order(&order, announced, st) != 0)
        return false;
    if (announced == FL_WIRE_HELLO || announced == FL_WIRE_PROOF)
        return true;
    fl_status_set(st, FL_FAILED_PRECONDITION, "%s before HELLO_OK: only HELLO and PROOF come before the handshake ends",
                  fl_wire_type_name(announced));
    return false;
}

static void resume_accepting(evutil_socket_t fd, short events, void *server)
{
    (void)fd;
    (void)events;
    fl_server *s = server;
    evconnlistener_enable(s->listener);
}

/* accept() failed (EMFILE: out of descriptors): the listening socket stays
 * readable, so libevent would call back at once, for ever. Accepting
 * pauses instead, a stranger (stranger_to_drop) gives its descriptor back, and a
 * line says so at the 1st, 2nd, 4th, 8th ... pause. */
static void on_accept_error(struct evconnlistener *listener, void *server)
{
    fl_server *s = server;
    int why = EVUTIL_SOCKET_ERROR();
    evconnlistener_disable(listener);
    int count;
    fl_server_conn *first = stranger_to_drop(s, NULL, &count);
    if (first)
        drop_stranger(first, "out of descriptors: an unauthenticated connection goes (the oldest of the least "
                             "advanced in the handshake)");
    if (worth_logging(++s->accept_pauses)) {
        fprintf(s->log, "%s: cannot accept connections: %s; pausing accepts for %g s (%llu pauses so far; raise "
                "the limit with ulimit -n)\n", s->log_prefix, evutil_socket_error_to_string(why), ACCEPT_PAUSE_S,
                (unsigned long long)s->accept_pauses);
        fflush(s->log);
    }
    struct timeval pause = seconds_to_timeval(ACCEPT_PAUSE_S);
    evtimer_add(s->resume_accepting, &pause);
}

int fl_server_guard_listener(fl_server *s)
{
    s->resume_accepting = evtimer_new(s->base, resume_accepting, s);
    if (!s->resume_accepting)
        return -1;
    evconnlistener_set_error_cb(s->listener, on_accept_error);
    return 0;
}
