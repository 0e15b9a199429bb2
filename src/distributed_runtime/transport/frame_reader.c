/* frame_reader.c: frames, one at a time, from a blocking socket. A big
 * VALUE is read a field at a time up to its data, so that the data can be
 * received where it belongs; anything else is read whole into the buffer. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "frame_reader.h"
#include "runtime.h"

#define DIRECT_BYTES ((size_t)64 << 10) /* a VALUE this big is received in place */

/* 1 when len bytes were read, 0 at a clean end of stream, -1 on error. */
static int read_all(int fd, unsigned char *p, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, p + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 && got == 0 ? 0 : -1;
        got += (size_t)n;
    }
    return 1;
}

/* Reads on until *got bytes of the payload are at p. 1: done; 0: the
 * payload is shorter than that; -1: the connection failed. */
static int read_up_to(int fd, unsigned char *p, size_t *got, size_t want, size_t payload_len)
{
    if (want > payload_len)
        return 0;
    if (want > *got && read_all(fd, p + *got, want - *got) != 1)
        return -1;
    *got = want;
    return 1;
}

/* Reads a VALUE's fields before its data (name, dtype, rank, dims, data
 * length), a piece at a time so as not to read into the data. 1 with their
 * length in *head; 0 when the payload is too short for them; -1. */
static int read_value_head(int fd, unsigned char *p, size_t payload_len, size_t *got, size_t *head)
{
    int rc = read_up_to(fd, p, got, 1, payload_len);
    size_t at = rc == 1 ? 1 + (size_t)p[0] + 2 : 0; /* the name, dtype and rank */
    if (rc == 1)
        rc = read_up_to(fd, p, got, at, payload_len);
    if (rc != 1)
        return rc;
    at += 4 * (size_t)p[at - 1] + 4; /* the dims and the data length */
    rc = read_up_to(fd, p, got, at, payload_len);
    *head = at;
    return rc;
}

/* The destination a big VALUE's data goes to, or NULL. */
static void *destination_of(const fl_wire_frame *announced, fl_value_destination destination, void *ctx,
                            size_t *bytes)
{
    *bytes = 0;
    if (!destination || announced->type != FL_WIRE_VALUE || announced->payload_len < DIRECT_BYTES ||
        !fl_wire_host_order_is_wire_order())
        return NULL;
    void *dst = destination(ctx, announced, bytes);
    return dst && *bytes < announced->payload_len ? dst : NULL;
}

/* Reads the payload after the header in buf: a big VALUE's data into its
 * destination (f->tail), the rest into buf. */
static int read_payload(int fd, fl_wire_buf *buf, fl_wire_frame *f, fl_value_destination destination, void *ctx)
{
    unsigned char *p = buf->data + FL_WIRE_HEADER_BYTES;
    size_t got = 0, head = 0, direct = 0;
    void *dst = destination_of(f, destination, ctx, &direct);
    int rc = dst ? read_value_head(fd, p, f->payload_len, &got, &head) : 0;
    if (rc < 0)
        return -1;
    if (rc == 1 && head + direct == f->payload_len) {
        if (read_all(fd, dst, direct) != 1)
            return -1;
        f->tail = dst;
        f->tail_len = direct;
        return 0;
    }
    return read_all(fd, p + got, f->payload_len - got) == 1 ? 0 : -1;
}

#define TASK_WITH_TLS "the task answered with TLS (a record 0x%02x 0x03...), not a frame: it has " \
    "--tls_cert/--tls_key/--tls_ca and this task not; give this task the same flags"

/* A header, as read_all, but a peer speaking TLS is told apart: it may send
 * a short alert (7 bytes) and close. 1, 0, -1, or -2: TLS (st says so). */
static int read_header(int fd, unsigned char *header, fl_status *st)
{
    size_t got = 0;
    ssize_t n = 1;
    while (got < FL_WIRE_HEADER_BYTES && n > 0) {
        n = recv(fd, header + got, FL_WIRE_HEADER_BYTES - got, 0);
        if (n < 0 && errno == EINTR)
            n = 1;
        else if (n > 0)
            got += (size_t)n;
    }
    if (fl_wire_looks_like_tls(header, got)) {
        fl_status_set(st, FL_UNAVAILABLE, TASK_WITH_TLS, header[0]);
        return -2;
    }
    if (got == FL_WIRE_HEADER_BYTES)
        return 1;
    if (n == 0) {
        fl_status_set(st, FL_UNAVAILABLE,
                      got == 0 ? "the task closed the connection" : "the connection ended inside a header");
        return got == 0 ? 0 : -1;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        fl_status_set(st, FL_DEADLINE_EXCEEDED,
                      "no answer before the deadline (FLOWLAB_TASK_DEADLINE): is it stopped, or busy?");
    else if (got == 0 && errno == ECONNRESET) /* a task with TLS resets a plain HELLO it cannot read */
        fl_status_set(st, FL_UNAVAILABLE, "%s (a task with --tls_cert/--tls_key/--tls_ca does that to one without)",
                      strerror(errno));
    else
        fl_status_set(st, fl_errno_code(errno), "%s", strerror(errno));
    return -1;
}

int fl_read_frame(int fd, fl_wire_buf *buf, fl_wire_frame *f, fl_value_destination destination, void *ctx,
                  fl_status *st)
{
    unsigned char header[FL_WIRE_HEADER_BYTES];
    int rc = read_header(fd, header, st);
    if (rc != 1)
        return rc;
    if (fl_wire_decode(header, sizeof header, f, st) == FL_WIRE_BAD)
        return -1;
    fl_wire_frame announced = fl_wire_frame_announced(header);
    if (announced.frame_len > buf->cap) {
        buf->data = fl_xrealloc(buf->data, announced.frame_len);
        buf->cap = announced.frame_len;
    }
    memcpy(buf->data, header, sizeof header);
    errno = 0;
    if (read_payload(fd, buf, &announced, destination, ctx) != 0) {
        bool late = errno == EAGAIN || errno == EWOULDBLOCK;
        return fl_status_set(st, late ? FL_DEADLINE_EXCEEDED : FL_UNAVAILABLE,
                             late ? "no more of a %s frame before the deadline (FLOWLAB_TASK_DEADLINE)"
                                  : "the connection ended inside a %s frame", fl_wire_type_name(announced.type));
    }
    if (announced.tail_len == 0)
        return fl_wire_decode(buf->data, announced.frame_len, f, st) == FL_WIRE_FRAME ? 1 : -1;
    *f = announced; /* its header was checked above, its payload is checked by the parse */
    f->payload = buf->data + sizeof header;
    return 1;
}
