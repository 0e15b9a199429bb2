/* test_socket_writer.c: a connection's writer thread
 * (src/distributed_runtime/transport/socket_writer.c) with lent bytes: a frame's
 * head and the data it lends arrive in order, whole; once
 * fl_socket_writer_wait_written returns the owner may write the lent
 * memory (ThreadSanitizer sees the order); and a peer that reads nothing
 * holds the wait only up to its deadline, after which the socket is shut
 * down and further sends fail. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
    lend(&buf, data);
    ok(w && fl_socket_writer_send(w, &buf) != 0, "then the socket is shut down: a send fails");
    stop(w, &buf, paired ? fds : NULL);
    free(data);
}

int main(void)
{
    lent_bytes_arrive();
    peer_reads_nothing();
    return done_testing();
}
