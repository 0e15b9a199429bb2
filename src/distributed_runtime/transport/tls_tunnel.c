/* tls_tunnel.c: a TLS session on a thread of its own (see tls_tunnel.h).
 * The thread moves bytes both ways with non-blocking sockets: what the
 * worker writes into its end of the pair goes out through SSL_write, what
 * SSL_read decrypts goes into the pair. When either side closes, the other
 * is told, and the thread frees the session and ends. The process waits
 * for its tunnels when it exits (see wait_for_tunnels_at_exit). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "runtime.h"
#include "socket_writer.h"
#include "tls_tunnel.h"
#include "wire.h"

#define TUNNEL_CHUNK (64 << 10)
#define HANDSHAKE_SECONDS 30

typedef struct tunnel {
    struct tunnel *next;     /* in the list of running tunnels */
    SSL *ssl;
    int tcp, pair;
    char who[64];
    unsigned char in[TUNNEL_CHUNK], out[TUNNEL_CHUNK]; /* decrypted for the pair; plain for TLS */
    size_t in_len, in_off, out_len, out_off;
    bool delivered;          /* some decrypted bytes reached the pair */
    bool tls_ended, pair_ended, failed;
    short tcp_events;        /* what the last TLS call waits for */
} tunnel;

/* The tunnels whose threads still run. OpenSSL frees its tables in an exit
 * handler of its own; a tunnel thread still running then would free its
 * session into freed tables, and its per-thread error queue would be lost
 * (LeakSanitizer saw exactly that: 904 bytes, OpenSSL's ERR_STATE). So at
 * exit every tunnel is told its worker has gone, and the process waits a
 * little for them to end. */
static pthread_mutex_t running_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t one_ended = PTHREAD_COND_INITIALIZER;
static struct tunnel *running;
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

#define EXIT_WAIT_SECONDS 3

static void wait_for_tunnels_at_exit(void)
{
    struct timespec deadline = fl_wall_after(EXIT_WAIT_SECONDS);
    pthread_mutex_lock(&running_lock);
    for (struct tunnel *t = running; t; t = t->next)
        shutdown(t->pair, SHUT_RD); /* as if the worker had closed its end: the thread finishes what it was sending */
    while (running && pthread_cond_timedwait(&one_ended, &running_lock, &deadline) == 0)
        ;
    pthread_mutex_unlock(&running_lock);
}

/* A child made by fork has none of the tunnel threads: its list starts
 * empty, so its exit neither waits for them nor shuts down the parent's
 * sockets, which it shares. The forking thread holds the lock across the
 * fork, so the child never inherits it held by a thread it does not have. */
static void lock_before_fork(void) { pthread_mutex_lock(&running_lock); }
static void unlock_in_parent(void) { pthread_mutex_unlock(&running_lock); }
static void forget_in_child(void)
{
    running = NULL;
    pthread_mutex_unlock(&running_lock);
}

/* The exit handler is registered after OpenSSL has registered its own (a
 * TLS context exists before any tunnel), so it runs before OpenSSL's:
 * handlers run in the reverse order of registration. */
static void register_handlers(void)
{
    atexit(wait_for_tunnels_at_exit);
    pthread_atfork(lock_before_fork, unlock_in_parent, forget_in_child);
}

static void add_running(struct tunnel *t)
{
    pthread_once(&handlers_once, register_handlers);
    pthread_mutex_lock(&running_lock);
    t->next = running;
    running = t;
    pthread_mutex_unlock(&running_lock);
}

/* Unlists t and closes its end of the pair under the lock, so the exit
 * handler never shuts down a descriptor already closed (and maybe reused). */
static void remove_running(struct tunnel *t)
{
    pthread_mutex_lock(&running_lock);
    struct tunnel **p = &running;
    while (*p != t)
        p = &(*p)->next;
    *p = t->next;
    close(t->pair);
    pthread_cond_broadcast(&one_ended);
    pthread_mutex_unlock(&running_lock);
}

static void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/* A refusal of this task's certificate, said as the wire protocol says
 * refusals, when the worker has not been sent any bytes yet. */
static void say_refused(tunnel *t)
{
    char reason[200], message[320];
    ERR_error_string_n(ERR_peek_last_error(), reason, sizeof reason);
    snprintf(message, sizeof message, "the TLS session was refused: %s (is this task's certificate signed by the "
             "cluster's CA, --tls_ca?)", reason);
    fl_wire_buf buf = {0};
    if (!t->delivered && fl_wire_put_error(&buf, 0, FL_WIRE_E_UNAUTHENTICATED, message) == 0) {
        memcpy(t->in, buf.data, buf.len);
        t->in_len = buf.len;
        t->in_off = 0;
    }
    fl_wire_buf_free(&buf);
}

/* What a TLS call's failure means: wait for the socket, or the end. */
static void after_tls_failure(tunnel *t, int rc)
{
    int e = SSL_get_error(t->ssl, rc);
    if (e == SSL_ERROR_WANT_READ) {
        t->tcp_events |= POLLIN;
    } else if (e == SSL_ERROR_WANT_WRITE) {
        t->tcp_events |= POLLOUT;
    } else {
        if (e == SSL_ERROR_SSL)
            say_refused(t);
        t->tls_ended = true;
    }
}

/* One pass each way; true when some bytes moved. */
static bool pump_once(tunnel *t)
{
    bool moved = false;
    t->tcp_events = 0;
    if (t->in_len == 0 && !t->tls_ended) {
        int n = SSL_read(t->ssl, t->in, sizeof t->in);
        if (n > 0) {
            t->in_len = (size_t)n;
            t->in_off = 0;
            moved = true;
        } else {
            after_tls_failure(t, n);
        }
    }
    if (t->in_len > 0) {
        ssize_t n = send(t->pair, t->in + t->in_off, t->in_len, MSG_NOSIGNAL);
        if (n > 0) {
            t->in_off += (size_t)n;
            t->in_len -= (size_t)n;
            t->delivered = moved = true;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
            t->failed = true;
        }
    }
    if (t->out_len == 0 && !t->pair_ended) {
        ssize_t n = recv(t->pair, t->out, sizeof t->out, 0);
        if (n > 0) {
            t->out_len = (size_t)n;
            t->out_off = 0;
            moved = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            t->pair_ended = true;
        }
    }
    if (t->out_len > 0 && !t->tls_ended) {
        int n = SSL_write(t->ssl, t->out + t->out_off, (int)t->out_len);
        if (n > 0) {
            t->out_off += (size_t)n;
            t->out_len -= (size_t)n;
            moved = true;
        } else {
            after_tls_failure(t, n);
        }
    }
    return moved;
}

static void *run_tunnel(void *arg)
{
    tunnel *t = arg;
    bool told_end = false;
    fl_socket_writes_fail_quietly(); /* SSL_write to a peer that has gone */
    for (;;) {
        bool moved = pump_once(t);
        if (t->tls_ended)
            t->out_len = 0; /* nothing more can go out */
        if (t->tls_ended && t->in_len == 0 && !told_end) {
            shutdown(t->pair, SHUT_WR); /* the worker's reader sees the end */
            told_end = true;
        }
        if (t->failed || (t->pair_ended && t->out_len == 0))
            break;
        if (moved)
            continue;
        short pair_events = (short)((t->in_len ? POLLOUT : 0) | (t->out_len ? 0 : POLLIN));
        struct pollfd fds[2] = {{t->tcp, t->tcp_events, 0}, {t->pair, pair_events, 0}};
        poll(fds, 2, 1000);
    }
    if (!t->tls_ended)
        SSL_shutdown(t->ssl); /* close_notify: this side has finished */
    SSL_free(t->ssl);
    close(t->tcp);
    OPENSSL_thread_stop(); /* this thread's OpenSSL state, freed now while OpenSSL's tables surely exist */
    remove_running(t);
    free(t);
    return NULL;
}

#define SERVER_WITHOUT_TLS " (the server may not use TLS: did it start with --tls_cert/--tls_key/--tls_ca?)"

/* Whether a failed handshake looks like a server without TLS: it answered
 * with a plain frame ("wrong version number": no TLS record), or closed. */
static bool server_without_tls(unsigned long e)
{
    int reason = ERR_GET_REASON(e);
    return e == 0 || reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_UNEXPECTED_EOF_WHILE_READING ||
           reason == SSL_R_PACKET_LENGTH_TOO_LONG;
}

/* The handshake, blocking, for at most HANDSHAKE_SECONDS of silence from a
 * peer that accepted the connection but says nothing; 0, or -1 after
 * fl_set_error_code. */
static int handshake(tunnel *t)
{
    struct timeval patience = {HANDSHAKE_SECONDS, 0};
    setsockopt(t->tcp, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    if (SSL_connect(t->ssl) == 1)
        return 0;
    char reason[200];
    unsigned long e = ERR_get_error();
    ERR_error_string_n(e, reason, sizeof reason);
    long verify = SSL_get_verify_result(t->ssl);
    if (verify != X509_V_OK)
        fl_set_error_code(FL_UNAUTHENTICATED, "%s: its TLS certificate is refused: %s (is it signed by the "
                          "cluster's CA, --tls_ca?; refused: not retried)", t->who,
                          X509_verify_cert_error_string(verify));
    else
        fl_set_error_code(e ? FL_UNAUTHENTICATED : FL_UNAVAILABLE, "%s: the TLS handshake failed: %s%s", t->who,
                          e ? reason : "the connection closed", server_without_tls(e) ? SERVER_WITHOUT_TLS : "");
    ERR_clear_error();
    return -1;
}

int fl_tls_tunnel_open(int tcp, struct ssl_ctx_st *ctx, const char *who)
{
    int ends[2];
    tunnel *t = fl_xcalloc(1, sizeof *t);
    snprintf(t->who, sizeof t->who, "%s", who);
    t->tcp = tcp;
    t->ssl = SSL_new(ctx);
    bool ok = t->ssl && SSL_set_fd(t->ssl, tcp) == 1 && handshake(t) == 0;
    if (ok && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "%s: cannot make a socket pair for TLS: %s", who, strerror(errno));
        ok = false;
    }
    pthread_t thread;
    if (ok) {
        t->pair = ends[1];
        set_nonblocking(tcp);
        set_nonblocking(t->pair);
        SSL_set_mode(t->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        add_running(t);
        if (pthread_create(&thread, NULL, run_tunnel, t) == 0) {
            pthread_detach(thread);
            return ends[0];
        }
        remove_running(t); /* closes ends[1] */
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "%s: cannot start the TLS thread", who);
        close(ends[0]);
    }
    SSL_free(t->ssl);
    close(tcp);
    free(t);
    return -1;
}
