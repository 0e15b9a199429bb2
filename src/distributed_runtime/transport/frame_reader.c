/* frame_reader.c: frames, one at a time, from a blocking socket: the
 * header first (a TLS peer told apart), then the body and tail it announces,
 * into a buffer grown to hold the frame. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "frame_reader.h"
#include "runtime.h"

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

#define TASK_WITH_TLS "the task answered with TLS (a record 0x%02x 0x03...), not a frame: it has " \
    "--tls_cert/--tls_key/--tls_ca and this task not; give this task the same flags"

/* A header, as read_all, but a peer speaking TLS is told apart: it may send
 * a short alert (7 bytes) and close; and garbage is refused as soon as its
 * bytes say so, not only once a whole header is in. 1, 0, -1, or -2: TLS
 * (st says so). */
static int read_header(int fd, unsigned char *header, fl_status *st)
{
    size_t got = 0;
    ssize_t n = 1;
    fl_wire_frame f;
    bool bad = false;
    while (got < FL_WIRE_HEADER_BYTES && n > 0 && !bad) {
        n = recv(fd, header + got, FL_WIRE_HEADER_BYTES - got, 0);
        if (n < 0 && errno == EINTR)
            n = 1;
        else if (n > 0)
            got += (size_t)n;
        bad = got > 0 && !fl_wire_looks_like_tls(header, got) && fl_wire_decode(header, got, &f, st) == FL_WIRE_BAD;
    }
    if (fl_wire_looks_like_tls(header, got)) {
        fl_status_set(st, FL_UNAVAILABLE, TASK_WITH_TLS, header[0]);
        return -2;
    }
    if (bad)
        return -1;
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

int fl_read_frame(int fd, fl_wire_buf *buf, fl_wire_frame *f, fl_status *st)
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
    if (read_all(fd, buf->data + sizeof header, announced.frame_len - sizeof header) != 1) {
        bool late = errno == EAGAIN || errno == EWOULDBLOCK;
        return fl_status_set(st, late ? FL_DEADLINE_EXCEEDED : FL_UNAVAILABLE,
                             late ? "no more of a %s frame before the deadline (FLOWLAB_TASK_DEADLINE)"
                                  : "the connection ended inside a %s frame", fl_wire_type_name(announced.type));
    }
    return fl_wire_decode(buf->data, announced.frame_len, f, st) == FL_WIRE_FRAME ? 1 : -1;
}
