/* test_socket_writer.c: a connection's writer thread
 * (src/distributed_runtime/transport/socket_writer.c) with lent bytes: a frame's
 * head and the data it lends arrive in order, whole; once
 * fl_socket_writer_wait_written returns the owner may write the lent
 * memory (ThreadSanitizer sees the order); and a peer that reads nothing
 * holds the wait only up to its deadline, after which the socket is shut
 * down and further sends fail. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed_runtime/transport/socket_writer.h"
#include "runtime.h"
#include "tap.h"

#define LENT (4 << 20) /* far more than a socket buffer holds */

typedef struct {
    int fd;
    size_t got;
    unsigned char *bytes;
} reader;

static void *read_all(void *arg)
{
    reader *r = arg;
    for (;;) {
        ssize_t n = read(r->fd, r->bytes + r->got, LENT + 64 - r->got);
        if (n <= 0 || (r->got += (size_t)n) == LENT + 64)
            break;
    }
    return NULL;
}

/* A frame of "head" and lent bytes, as fl_wire_put_send_tensor_head leaves one. */
static void lend(fl_wire_buf *buf, const unsigned char *data)
{
    memset(buf, 0, sizeof *buf);
    buf->data = malloc(4);
    memcpy(buf->data, "head", 4);
    buf->len = buf->cap = 4;
    buf->lent = data;
    buf->lent_len = LENT;
}

static void stop(fl_socket_writer *w, fl_wire_buf *buf, const int *fds)
{
    fl_socket_writer_stop(w);
    fl_wire_buf_free(buf);
    if (fds) {
        close(fds[0]);
        close(fds[1]);
    }
}

static void lent_bytes_arrive(void)
{
    int fds[2];
    unsigned char *data = malloc(LENT);
    for (size_t i = 0; i < LENT; i++)
        data[i] = (unsigned char)(i * 7);
    reader r = {.bytes = calloc(LENT + 64, 1)};
    bool paired = socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0;
    r.fd = paired ? fds[1] : -1;
    fl_socket_writer *w = paired ? fl_socket_writer_start(fds[0]) : NULL;
    pthread_t t;
    bool reading = w && pthread_create(&t, NULL, read_all, &r) == 0;
    fl_wire_buf buf;
    lend(&buf, data);
    ok(reading && fl_socket_writer_send(w, &buf) == 0 && buf.lent == NULL, "a frame with lent bytes is queued");
    if (w)
        fl_socket_writer_wait_written(w, 30);
    memset(data, 0, LENT); /* the owner's again */
    if (paired)
        shutdown(fds[0], SHUT_WR); /* the reader sees the end */
    if (reading)
        pthread_join(t, NULL);
    bool same = r.got == LENT + 4 && memcmp(r.bytes, "head", 4) == 0;
    for (size_t i = 0; same && i < LENT; i++)
        same = r.bytes[4 + i] == (unsigned char)(i * 7);
    ok(same, "the peer got the head, then the lent bytes as they were when sent (%zu of %d bytes)", r.got, LENT + 4);
    stop(w, &buf, paired ? fds : NULL);
    free(data);
    free(r.bytes);
}

static void peer_reads_nothing(void)
{
    int fds[2];
    unsigned char *data = calloc(LENT, 1);
    bool paired = socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0;
    fl_socket_writer *w = paired ? fl_socket_writer_start(fds[0]) : NULL;
    fl_wire_buf buf;
    lend(&buf, data);
    bool queued = w && fl_socket_writer_send(w, &buf) == 0;
    double start = fl_now_s();
    if (w)
        fl_socket_writer_wait_written(w, 1);
    double waited = fl_now_s() - start;
    ok(queued && waited >= 0.9 && waited < 20, "a peer that reads nothing holds the wait until its deadline (%.1f s)",
       waited);
    fl_wire_buf_free(&buf); /* the spare the writer handed back is the caller's */
    lend(&buf, data);
    ok(w && fl_socket_writer_send(w, &buf) != 0, "then the socket is shut down: a send fails");
    stop(w, &buf, paired ? fds : NULL);
    free(data);
}

/* In a child: a thread writes (plain write(), as libevent's writev and
 * OpenSSL do, no MSG_NOSIGNAL) to a socket whose peer has closed. Exit 0
 * when a write failed EPIPE, 1 otherwise; killed by SIGPIPE when quiet is
 * false. */
static void *write_to_gone_peer(void *quiet)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0)
        _exit(1);
    if (quiet)
        fl_socket_writes_fail_quietly();
    close(pair[1]);
    char byte = 'x';
    for (int i = 0; i < 4; i++)
        if (write(pair[0], &byte, 1) < 0 && errno == EPIPE)
            _exit(0);
    _exit(1);
}

static int child_writing_to_gone_peer(bool quiet)
{
    pid_t child = fork();
    if (child == 0) {
        pthread_t thread;
        pthread_create(&thread, NULL, write_to_gone_peer, quiet ? &child : NULL);
        pthread_join(thread, NULL);
        _exit(1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return status;
}

/* A server's loop and a TLS tunnel write where MSG_NOSIGNAL cannot be
 * passed: a peer killed mid-reply must not kill this process (test_faults'
 * worker died of SIGPIPE when its ps was killed). */
static void peer_gone_mid_write(void)
{
    int status = child_writing_to_gone_peer(false);
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE, "without it, a write to a gone peer kills the process "
       "with SIGPIPE (the hazard is real)");
    status = child_writing_to_gone_peer(true);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a thread that called fl_socket_writes_fail_quietly gets "
       "EPIPE instead, and the process lives (%s %d)", WIFEXITED(status) ? "exit" : "signal",
       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int main(void)
{
    lent_bytes_arrive();
    peer_reads_nothing();
    peer_gone_mid_write();
    return done_testing();
}
