/* task_client.c: requests to one task and their replies. A request is encoded on the caller's thread and handed to
 * the writer thread (socket_writer.c) under a lock that keeps the pending requests in wire order; a reader thread
 * takes the replies, which a task sends in the same order, fills the waiting buffers and wakes whoever waits. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame_reader.h"
#include "handshake.h"
#include "task_client.h"
#include "runtime.h"
#include "socket_writer.h"

typedef struct {
    uint32_t id;
    fl_wire_type type; /* the request's */
    bool *has_value;   /* an INIT_DONE reply's flag goes here */
    char name[48];     /* the variable, for "waiting for" lines */
    fl_ps_reply_fn take; void *take_user; /* a reply handed over whole (a partition's frames) */
} pending_request;

struct fl_task_client {
    int fd;
    char who[64];             /* "/job:ps/task:0", in every message */
    pthread_t reader;
    fl_socket_writer *writer;    /* puts the requests on the wire, in order */
    pthread_mutex_t send_lock; /* one request queued at a time */
    fl_wire_buf out;
    pthread_mutex_t lock;      /* everything below */
    pthread_cond_t replied;
    pending_request *queue;    /* a ring of requests awaiting replies */
    int head, count, capacity;
    uint32_t next_id, completed, error_id; /* error_id: the first request that failed, 0: none */
    char error[FL_WIRE_ERROR_LEN + 64];
    fl_error_code error_code;  /* error's, for fl_last_error_code */
    bool broken, closing; char broken_why[FL_WIRE_ERROR_LEN + 64];
    uint64_t sent, received;
    double deadline_s, log_every_s; /* for waits: the deadline and where "waiting for" lines go */
    FILE *log;
    char log_prefix[64];
};

/* Lock held. Every pending request's taker is told the connection is lost,
 * now, while its caller still waits, and never again: a caller that gave up
 * has returned, and its outcome (on its stack) is gone. */
static void fail_pending_locked(fl_task_client *c)
{
    for (int i = 0; i < c->count; i++) { /* replies taken whole learn it too: their waiter may wait for many */
        pending_request *p = &c->queue[(c->head + i) % c->capacity];
        if (p->take)
            p->take(NULL, NULL, p->take_user);
        p->take = NULL;
    }
    pthread_cond_broadcast(&c->replied);
}

static void mark_broken(fl_task_client *c, const char *why)
{
    pthread_mutex_lock(&c->lock);
    if (!c->broken)
        snprintf(c->broken_why, sizeof c->broken_why, "lost the connection to %s: %s", c->who, why);
    c->broken = true;
    fail_pending_locked(c);
    pthread_mutex_unlock(&c->lock);
}

/* Keeps the first failed request's message for whoever waits; detail, the peer's words, escaped. */
static void note_error(fl_task_client *c, uint32_t id, fl_error_code code, const char *fmt, const char *detail)
{
    if (c->error_id)
        return;
    c->error_id = id;
    c->error_code = code;
    char shown[FL_WIRE_ERROR_LEN];
    fl_escape_untrusted(detail, strlen(detail), shown, sizeof shown);
    snprintf(c->error, sizeof c->error, fmt, c->who, shown);
}

/* A reply to the oldest pending request: fill its buffer, note an error. */
static void complete(fl_task_client *c, const fl_wire_frame *f, const fl_wire_message *m)
{
    pending_request *p = &c->queue[c->head];
    if (p->take) {
        p->take(f, m, p->take_user); /* the request's outcome, ERROR included, is the caller's */
    } else if (m->type == FL_WIRE_ERROR) {
        note_error(c, p->id, fl_wire_error_meaning(m->u.error.code), "%s refused it: %s", m->u.error.message);
    } else if (m->type == FL_WIRE_INIT_DONE && p->has_value) {
        *p->has_value = m->u.has_value;
    }
    c->completed = p->id;
    c->head = (c->head + 1) % c->capacity;
    c->count--;
    pthread_cond_broadcast(&c->replied);
}

/* Reads one frame into buf: as fl_read_frame, counting what it received
 * (under the lock: fl_task_client_traffic reads the count on another thread). */
static int read_frame(fl_task_client *c, fl_wire_buf *buf, fl_wire_frame *f, fl_status *st)
{
    int rc = fl_read_frame(c->fd, buf, f, st);
    pthread_mutex_lock(&c->lock);
    c->received += rc == 1 ? f->frame_len : 0;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static void *read_replies(void *client)
{
    fl_task_client *c = client;
    fl_wire_buf buf = {0};
    fl_wire_conn order;
    fl_wire_conn_init(&order, FL_WIRE_CLIENT_SIDE);
    fl_status why = {0};
    fl_wire_check_order(&order, FL_WIRE_HELLO_OK, &why); /* open() read it already */
    fl_socket_receive_within(c->fd, 0); /* the handshake's deadline is over: replies may take long */
    fl_wire_message *m = fl_xmalloc(sizeof *m);
    fl_wire_arena *arena = fl_wire_arena_new(); /* a reply's message, until the next reply's */
    for (;;) {
        fl_wire_frame f;
        int rc = read_frame(c, &buf, &f, &why);
        if (rc == 1 && (fl_wire_check_order(&order, f.type, &why) != 0 || fl_wire_parse_in(&f, arena, m, &why) != 0))
            rc = -1;
        pthread_mutex_lock(&c->lock);
        bool expected = rc == 1 && c->count > 0 && c->queue[c->head].id == f.request_id;
        if (expected)
            complete(c, &f, m);
        bool closing = c->closing;
        pthread_mutex_unlock(&c->lock);
        if (!expected) {
            if (rc == 1)
                fl_status_set(&why, FL_DATA_LOSS, "a reply to request %u, which is not the one awaited", f.request_id);
            mark_broken(c, closing ? "closed" : why.message);
            break;
        }
    }
    free(m);
    fl_wire_arena_free(arena);
    fl_wire_buf_free(&buf);
    return NULL;
}

/* Queues the request the encoder put in c->out, then sends it: queued first,
 * so the reply cannot come before its entry. Call with send_lock held. */
static uint32_t send_request(fl_task_client *c, uint32_t id, fl_wire_type type, bool *has_value, const char *name,
                             fl_ps_reply_fn take, void *take_user)
{
    pthread_mutex_lock(&c->lock);
    if (c->broken) {
        fl_set_error_code(FL_UNAVAILABLE, "%s", c->broken_why);
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    if (c->count == c->capacity) { /* grow the ring, oldest first */
        int capacity = c->capacity ? 2 * c->capacity : 64;
        pending_request *q = fl_xmalloc((size_t)capacity * sizeof *q);
        for (int i = 0; i < c->count; i++)
            q[i] = c->queue[(c->head + i) % c->capacity];
        free(c->queue);
        c->queue = q;
        c->head = 0;
        c->capacity = capacity;
    }
    pending_request *p = &c->queue[(c->head + c->count++) % c->capacity];
    *p = (pending_request){id, type, has_value, "", take, take_user};
    snprintf(p->name, sizeof p->name, "%s", name ? name : "");
    c->sent += c->out.len + c->out.lent_len;
    pthread_mutex_unlock(&c->lock);
    if (fl_socket_writer_send(c->writer, &c->out) != 0) {
        mark_broken(c, "sending failed");
        fl_set_error_code(FL_UNAVAILABLE, "%s", c->broken_why);
        return 0;
    }
    return id;
}

fl_wire_buf *fl_task_client_begin(fl_task_client *c, uint32_t *id)
{
    pthread_mutex_lock(&c->send_lock);
    pthread_mutex_lock(&c->lock);
    *id = ++c->next_id;
    pthread_mutex_unlock(&c->lock);
    return &c->out;
}

static uint32_t finish_request(fl_task_client *c, int encoded, uint32_t id, fl_wire_type type, bool *has_value,
                               const char *name, fl_ps_reply_fn take, void *take_user)
{
    uint32_t sent = 0;
    if (encoded != 0)
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: %s", c->who, c->out.error);
    else
        sent = send_request(c, id, type, has_value, name, take, take_user);
    pthread_mutex_unlock(&c->send_lock);
    return sent;
}

uint32_t fl_task_client_finish(fl_task_client *c, int encoded, uint32_t id, fl_wire_type type, bool *has_value,
                               const char *name)
{
    return finish_request(c, encoded, id, type, has_value, name, NULL, NULL);
}

uint32_t fl_task_client_finish_taking(fl_task_client *c, int encoded, uint32_t id, fl_wire_type type,
                                    fl_ps_reply_fn take, void *user, const char *name)
{
    return finish_request(c, encoded, id, type, NULL, name, take, user);
}

const char *fl_task_client_peer(const fl_task_client *c) { return c->who; }
void fl_task_client_wait_written(fl_task_client *c) { fl_socket_writer_wait_written(c->writer, c->deadline_s); }

void fl_task_client_give_up(fl_task_client *c, const char *why)
{
    mark_broken(c, why);
    shutdown(c->fd, SHUT_RDWR); /* the task drops what this connection registered; the reader stops */
}

bool fl_task_client_broken(fl_task_client *c)
{
    pthread_mutex_lock(&c->lock);
    bool broken = c->broken;
    pthread_mutex_unlock(&c->lock);
    return broken;
}

uint32_t fl_task_client_last_id(fl_task_client *c)
{
    pthread_mutex_lock(&c->lock);
    uint32_t id = c->next_id;
    pthread_mutex_unlock(&c->lock);
    return id;
}

/* "the answer to IS_INITIALIZED w": what the oldest unanswered request is. Lock held. */
static void describe_awaited(const fl_task_client *c, char *out, size_t len)
{
    const pending_request *p = &c->queue[c->head];
    if (c->count == 0)
        snprintf(out, len, "a reply");
    else
        snprintf(out, len, "the answer to %s %s", fl_wire_type_name(p->type), p->name);
}

/* Waits for the replies up to id, saying so every few seconds; false at the deadline. Lock held. */
static bool wait_with_deadline(fl_task_client *c, uint32_t id)
{
    double start = fl_now_s(), next_line = start + c->log_every_s;
    while (c->completed < id && !c->broken) {
        double now = fl_now_s();
        char what[128];
        if (now - start >= c->deadline_s) {
            describe_awaited(c, what, sizeof what);
            snprintf(c->broken_why, sizeof c->broken_why, "gave up after %.0f s waiting for %s from %s "
                     "(FLOWLAB_TASK_DEADLINE)", now - start, what, c->who);
            return false;
        }
        if (now >= next_line) {
            describe_awaited(c, what, sizeof what);
            fprintf(c->log, "%s: waiting for %s from %s (%.0f s so far)\n", c->log_prefix, what, c->who,
                    now - start);
            fflush(c->log);
            next_line = now + c->log_every_s;
        }
        double until = next_line < start + c->deadline_s ? next_line : start + c->deadline_s;
        struct timespec ts = fl_wall_after(until - now);
        pthread_cond_timedwait(&c->replied, &c->lock, &ts);
    }
    return true;
}

/* Why the replies stopped. Lock held. */
static void set_lost_error(const fl_task_client *c, fl_error_code code)
{
    fl_set_error_code(code, "%s", c->broken_why);
}

int fl_task_client_wait(fl_task_client *c, uint32_t id)
{
    pthread_mutex_lock(&c->lock);
    if (!wait_with_deadline(c, id)) { /* the task is hung: its replies, if any came, would find no caller */
        set_lost_error(c, FL_DEADLINE_EXCEEDED);
        c->broken = true; /* broken_why says why: the deadline */
        fail_pending_locked(c);
        pthread_mutex_unlock(&c->lock);
        shutdown(c->fd, SHUT_RDWR); /* the reader stops; the task drops what this connection registered */
        return -1;
    }
    int rc = 0;
    if (c->error_id && c->error_id <= id) { /* reported once, to the first who waits past it */
        fl_set_error_code(c->error_code, "%s", c->error);
        c->error_id = 0;
        rc = -1;
    } else if (c->completed < id) {
        set_lost_error(c, FL_UNAVAILABLE);
        rc = -1;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void fl_task_client_traffic(fl_task_client *c, uint64_t *sent, uint64_t *received)
{
    pthread_mutex_lock(&c->lock);
    *sent = c->sent;
    *received = c->received;
    pthread_mutex_unlock(&c->lock);
}

/* The first frame of the answer to HELLO into *m: 0, -1 (lost), -2 (not parseable: a refusal).
 * With a secret the server asks for a proof first (CHALLENGE: handshake.c), and a server that
 * does not ask is refused, so a task without the secret cannot pose as a ps. */
static int read_welcome(fl_task_client *c, const fl_connect_options *where, const char *my_job, int my_task,
                        fl_wire_buf *buf, fl_wire_message *m, fl_status *st)
{
    fl_wire_frame f;
    int got = read_frame(c, buf, &f, st); /* -2: a task with TLS, final */
    if (got != 1 || fl_wire_parse(&f, m, st) != 0)
        return got == -2 ? -2 : -1;
    if (m->type == FL_WIRE_CHALLENGE) {
        unsigned char challenge[FL_WIRE_PROOF_BYTES];
        memcpy(challenge, m->u.handshake.nonce, sizeof challenge);
        int rc = fl_handshake_client(c->fd, where, my_job, my_task, challenge, buf, st);
        if (rc != 0)
            return rc;
        return read_frame(c, buf, &f, st) == 1 && fl_wire_parse(&f, m, st) == 0 ? 0 : -1;
    }
    if (where->secret_len > 0 && m->type == FL_WIRE_HELLO_OK) {
        fl_status_set(st, FL_UNAUTHENTICATED, "it did not ask for the cluster's secret, so it cannot prove it knows "
                      "it: a task without --cluster_secret_file, or not a task of this cluster");
        return -2;
    }
    return 0;
}

/* HELLO, answered by HELLO_OK, before the reader thread starts. -1 when the connection failed first,
 * -2 when the task answered with a refusal (or either side refused the other's proof of the secret). */
static int say_hello(fl_task_client *c, const fl_connect_options *where, const char *my_job, int my_task)
{
    fl_status why = {0};
    fl_wire_put_hello(&c->out, 0, my_job, (uint32_t)my_task);
    int rc = fl_socket_write_all(c->fd, c->out.data, c->out.len);
    fl_wire_buf_consume(&c->out, c->out.len);
    fl_wire_buf reply = {0};
    fl_wire_message *m = fl_xmalloc(sizeof *m);
    if (rc == 0)
        rc = read_welcome(c, where, my_job, my_task, &reply, m, &why);
    else
        fl_status_set(&why, FL_UNAVAILABLE, "%s", strerror(errno));
    bool unauthenticated = rc == -2 || (rc == 0 && m->type == FL_WIRE_ERROR &&
                                        m->u.error.code == FL_WIRE_E_UNAUTHENTICATED);
    if (rc == 0 && m->type != FL_WIRE_HELLO_OK) {
        const char *said = m->type == FL_WIRE_ERROR ? m->u.error.message : "no HELLO_OK";
        fl_escape_untrusted(said, strlen(said), why.message, sizeof why.message); /* the peer's words */
        rc = -2;
    }
    if (rc != 0)
        fl_set_error_code(unauthenticated ? FL_UNAUTHENTICATED : rc == -2 ? FL_FAILED_PRECONDITION : FL_UNAVAILABLE,
                          "%s did not accept /job:%s/task:%d: %s%s", c->who, my_job, my_task, why.message,
                          unauthenticated ? " (refused: not retried)" : "");
    free(m);
    fl_wire_buf_free(&reply);
    return rc;
}

static void keep_wait_options(fl_task_client *c, const fl_connect_options *where)
{
    c->deadline_s = where->deadline_s > 0 ? where->deadline_s : 120;
    c->log_every_s = where->log_every_s > 0 ? where->log_every_s : 5;
    c->log = where->log ? where->log : stderr;
    snprintf(c->log_prefix, sizeof c->log_prefix, "%s", where->log_prefix ? where->log_prefix : "worker");
}

/* Connects and says HELLO, returning the socket (also in c->fd) or -1. A connection dropped
 * before the answer (a task still dying on its port, or one just starting) is made again, with
 * backoff, until the deadline; a refusal by the task is final. */
static int connect_and_greet(fl_task_client *c, const fl_connect_options *where, const char *my_job, int my_task)
{
    double start = fl_now_us();
    for (int attempt = 0;; attempt++) {
        c->fd = fl_connect_with_retry(where);
        if (c->fd < 0)
            return -1;
        int rc = say_hello(c, where, my_job, my_task); /* its receives end at the deadline (connect.h) */
        if (rc == 0)
            return c->fd;
        close(c->fd);
        double pause = fl_connect_backoff_s(attempt);
        if (rc == -2 || (fl_now_us() - start) / 1e6 + pause > c->deadline_s)
            return c->fd = -1;
        fl_sleep_s(pause);
    }
}

fl_task_client *fl_task_client_reopen(const fl_connect_options *where, const char *my_job, int my_task,
                                  uint32_t first_id)
{
    fl_task_client *c = fl_xcalloc(1, sizeof *c);
    c->next_id = c->completed = first_id;
    keep_wait_options(c, where);
    snprintf(c->who, sizeof c->who, "%s", where->who);
    pthread_mutex_init(&c->send_lock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->replied, NULL);
    int fd = connect_and_greet(c, where, my_job, my_task);
    c->writer = fd >= 0 ? fl_socket_writer_start(fd) : NULL;
    if (!c->writer || pthread_create(&c->reader, NULL, read_replies, c) != 0) {
        if (c->writer) {
            shutdown(fd, SHUT_RDWR);
            fl_socket_writer_stop(c->writer);
        }
        if (fd >= 0)
            close(fd);
        pthread_mutex_destroy(&c->send_lock);
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->replied);
        fl_wire_buf_free(&c->out);
        free(c);
        return NULL;
    }
    return c;
}

void fl_task_client_close(fl_task_client *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->closing = true;
    pthread_mutex_unlock(&c->lock);
    shutdown(c->fd, SHUT_RDWR); /* the writer and the reader see the end of the stream and stop */
    fl_socket_writer_stop(c->writer);
    pthread_join(c->reader, NULL);
    close(c->fd);
    pthread_mutex_destroy(&c->send_lock);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->replied);
    fl_wire_buf_free(&c->out);
    free(c->queue);
    free(c);
}

/* ---- the requests that are not a partition's (partition_client.c sends those) ---- */

uint32_t fl_task_client_is_initialized(fl_task_client *c, const char *name, bool *has_value)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_is_initialized(out, id, name);
    return fl_task_client_finish(c, rc, id, FL_WIRE_IS_INITIALIZED, has_value, name);
}

int fl_task_client_goodbye(fl_task_client *c)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_goodbye(out, id);
    id = fl_task_client_finish(c, rc, id, FL_WIRE_GOODBYE, NULL, NULL);
    return id ? fl_task_client_wait(c, id) : -1;
}
