/* socket_writer.c: a connection's writer thread (see socket_writer.h): a queue
 * of encoded frames, the thread that writes them in order, and a few spare
 * buffers handed back to the encoder so that a big frame's memory is reused
 * rather than allocated and page-faulted again every step; the queue's
 * entries are kept too, so a warm step allocates nothing here. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "runtime.h"
#include "socket_writer.h"

#define MAX_QUEUED_BYTES ((size_t)256 << 20) /* beyond this, send() waits */
#define SPARE_BUFFERS 4
#define SPARE_START_BYTES 1024 /* room for a small frame: most of a step's frames */

typedef struct frame {
    fl_wire_buf buf;
    struct frame *next;
} frame;

struct fl_socket_writer {
    int fd;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;   /* a frame queued, one written, or stop */
    frame *head, *tail;       /* the queue, oldest first */
    size_t queued_bytes;
    fl_wire_buf spare[SPARE_BUFFERS];
    int nspare;
    frame *unused;            /* written frames' entries, for the next frames */
    bool stopping, failed;
};

int fl_socket_write_all(int fd, const unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void fl_socket_writes_fail_quietly(void)
{
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, NULL); /* one left pending goes with the thread */
}

/* A written frame's memory back to the spares (or freed, when enough are kept). */
static void recycle(fl_socket_writer *w, frame *f)
{
    f->buf.len = f->buf.lent_len = 0;
    f->buf.lent = NULL;
    if (w->nspare < SPARE_BUFFERS)
        w->spare[w->nspare++] = f->buf;
    else
        fl_wire_buf_free(&f->buf);
    f->buf = (fl_wire_buf){0};
    f->next = w->unused;
    w->unused = f;
}

static void *write_frames(void *writer)
{
    fl_socket_writer *w = writer;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->head && !w->stopping)
            pthread_cond_wait(&w->changed, &w->lock);
        if (!w->head)
            break; /* stopping, and everything is out */
        frame *f = w->head;
        pthread_mutex_unlock(&w->lock);
        int rc = w->failed ? -1 : fl_socket_write_all(w->fd, f->buf.data, f->buf.len);
        if (rc == 0 && f->buf.lent_len > 0)
            rc = fl_socket_write_all(w->fd, f->buf.lent, f->buf.lent_len);
        pthread_mutex_lock(&w->lock);
        if (rc != 0 && !w->failed) {
            w->failed = true;
            shutdown(w->fd, SHUT_RDWR); /* the reader of this socket sees the end as well */
        }
        w->head = f->next;
        if (!w->head)
            w->tail = NULL;
        w->queued_bytes -= f->buf.len + f->buf.lent_len;
        recycle(w, f);
        pthread_cond_broadcast(&w->changed);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* The spares and queue entries are made with the writer, not on the first
 * step deep enough to need them: how many frames wait at once depends on how
 * fast this thread gets a core, and a warm step should not allocate because
 * the machine was busy (test_partition_server counts its blocks). */
static void make_spares(fl_socket_writer *w)
{
    for (; w->nspare < SPARE_BUFFERS; w->nspare++)
        w->spare[w->nspare] = (fl_wire_buf){.data = fl_xmalloc(SPARE_START_BYTES), .cap = SPARE_START_BYTES};
    for (int i = 0; i <= SPARE_BUFFERS; i++) {
        frame *f = fl_xcalloc(1, sizeof *f);
        f->next = w->unused;
        w->unused = f;
    }
}

static void free_writer(fl_socket_writer *w)
{
    for (int i = 0; i < w->nspare; i++)
        fl_wire_buf_free(&w->spare[i]);
    while (w->unused) {
        frame *next = w->unused->next;
        free(w->unused);
        w->unused = next;
    }
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->changed);
    free(w);
}

fl_socket_writer *fl_socket_writer_start(int fd)
{
    fl_socket_writer *w = fl_xcalloc(1, sizeof *w);
    w->fd = fd;
    make_spares(w);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    if (pthread_create(&w->thread, NULL, write_frames, w) != 0) {
        free_writer(w);
        return NULL;
    }
    return w;
}

int fl_socket_writer_send(fl_socket_writer *w, fl_wire_buf *buf)
{
    pthread_mutex_lock(&w->lock);
    while (w->queued_bytes > MAX_QUEUED_BYTES && !w->failed)
        pthread_cond_wait(&w->changed, &w->lock);
    if (w->failed) {
        pthread_mutex_unlock(&w->lock);
        buf->len = buf->lent_len = 0;
        buf->lent = NULL;
        return -1;
    }
    frame *f = w->unused ? w->unused : fl_xcalloc(1, sizeof *f);
    w->unused = f->next;
    f->next = NULL;
    f->buf = *buf;
    f->buf.scratch = NULL; /* the encoder's, not the frame's: it stays with the caller */
    fl_wire_arena *scratch = buf->scratch;
    *buf = w->nspare ? w->spare[--w->nspare] : (fl_wire_buf){0};
    buf->scratch = scratch;
    if (w->tail)
        w->tail->next = f;
    else
        w->head = f;
    w->tail = f;
    w->queued_bytes += f->buf.len + f->buf.lent_len;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    return 0;
}

void fl_socket_writer_wait_written(fl_socket_writer *w, double deadline_s)
{
    struct timespec until = fl_wall_after(deadline_s);
    pthread_mutex_lock(&w->lock);
    int rc = 0;
    while (w->head && rc == 0)
        rc = pthread_cond_timedwait(&w->changed, &w->lock, &until);
    if (w->head) /* a peer that reads nothing: the write under way fails, and the writer drops the rest */
        shutdown(w->fd, SHUT_RDWR);
    while (w->head)
        pthread_cond_wait(&w->changed, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

void fl_socket_writer_stop(fl_socket_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    free_writer(w);
}
