/* connect.h: a worker's way to reach another task: a TCP connection tried
 * again with growing pauses while the peer is not up yet, one log line every
 * few seconds naming whom it waits for, and a clear error at a deadline. */
#ifndef FLOWLAB_DIST_CONNECT_H
#define FLOWLAB_DIST_CONNECT_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *who;        /* the peer, for messages: "/job:ps/task:0" */
    const char *host;       /* "127.0.0.1", "node7" */
    int port;
    double deadline_s;      /* give up after this many seconds */
    double log_every_s;     /* one "waiting for" line this often (0: 5 s) */
    FILE *log;              /* where those lines go (NULL: stderr) */
    const char *log_prefix; /* e.g. "worker 1" */
    /* The peer's job and task ("ps", 0), which its proof of the secret names. */
    const char *job;
    int task;
    /* The cluster's shared secret (secret_len 0: none) and TLS context (NULL:
     * plain TCP), from cluster_security.c. */
    const unsigned char *secret;
    size_t secret_len;
    struct ssl_ctx_st *tls;
} fl_connect_options;

/* A connected socket (TCP_NODELAY set), or -1 after fl_set_error with a
 * message naming the peer, its address, how long it was tried and the last
 * reason ("connection refused"). A name that does not resolve fails at once.
 * With o->tls, the socket is a TLS tunnel's (tls_tunnel.h), and a failed
 * TLS handshake fails at once (FL_UNAUTHENTICATED for a refused certificate).
 * Its receives end at the deadline, so that the handshake after it cannot
 * hang on a stopped or silent peer: clear that with fl_socket_receive_within(fd, 0). */
int fl_connect_with_retry(const fl_connect_options *o);

/* Bounds each recv on fd to `seconds` (0: no bound again), so that a
 * handshake with a peer that is stopped or silent ends: recv then fails
 * with EAGAIN, which fl_read_frame reports as a timeout. */
void fl_socket_receive_within(int fd, double seconds);

/* The pause before try number `attempt` (from 0): 50 ms doubling to 1 s. */
double fl_connect_backoff_s(int attempt);
/* Sleeps that long, also through signals. */
void fl_sleep_s(double seconds);

#endif
