/* test_frame_reader.c: frames read one at a time from a blocking socket
 * (frame_reader.c, a task client's reader thread): a big SEND_TENSOR, more
 * than the socket holds, comes whole and parses; a frame cut short in its
 * data or its head fails naming its type; an end between frames is a
 * clean end. */
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distributed_runtime/transport/frame_reader.h"
#include "distributed_runtime/transport/wire.h"
#include "flowlab.h"
#include "runtime.h"
#include "tap.h"

static fl_tensor *counting(int n)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, n / 4, 4));
    for (int i = 0; i < n; i++)
        fl_tensor_floats(t)[i] = (float)i;
    return t;
}

/* Sends bytes on one end of a socket pair from a thread (they may be more
 * than the socket holds) and reads a frame on the other. */
typedef struct {
    int fd;
    const unsigned char *p;
    size_t len;
} sender;

static void *send_bytes(void *arg)
{
    sender *s = arg;
    size_t off = 0;
    while (off < s->len) {
        ssize_t n = send(s->fd, s->p + off, s->len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    shutdown(s->fd, SHUT_WR);
    return NULL;
}

static int read_sent(const unsigned char *p, size_t len, fl_wire_buf *buf, fl_wire_frame *f, fl_status *why)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
        return -2;
    sender s = {fds[0], p, len};
    pthread_t t;
    pthread_create(&t, NULL, send_bytes, &s);
    int rc = fl_read_frame(fds[1], buf, f, why);
    shutdown(fds[1], SHUT_RDWR);
    pthread_join(t, NULL);
    close(fds[0]);
    close(fds[1]);
    return rc;
}

static void test_reader(void)
{
    fl_tensor *t = counting(1 << 16); /* 256 KiB: more than a socket pair holds */
    size_t bytes = fl_tensor_bytes(t);
    fl_wire_buf frame = {0}, buf = {0}, small = {0};
    fl_wire_put_send_tensor(&frame, 9, 3, "dense_1/kernel:0->/job:ps/task:0", t);
    fl_wire_frame f;
    fl_wire_message m;
    fl_status why = {0};
    int rc = read_sent(frame.data, frame.len, &buf, &f, &why);
    ok(rc == 1 && f.type == FL_WIRE_SEND_TENSOR && f.frame_len == frame.len, "a big SEND_TENSOR comes whole (%s)",
       why.message);
    ok(rc == 1 && fl_wire_parse(&f, &m, &why) == 0 && m.request_id == 9 && m.u.send.value.bytes == bytes,
       "and parses (%s)", why.message);
    fl_tensor *back = fl_tensor_new(FL_FLOAT32, t->shape);
    if (rc == 1 && m.u.send.value.bytes == bytes)
        fl_wire_tensor_read(&m.u.send.value, back->data);
    ok(memcmp(back->data, t->data, bytes) == 0, "every byte of it");

    fl_wire_put_is_initialized(&small, 2, "w");
    rc = read_sent(small.data, small.len, &buf, &f, &why);
    ok(rc == 1 && f.type == FL_WIRE_IS_INITIALIZED, "a small frame too");

    rc = read_sent(frame.data, frame.len - 1000, &buf, &f, &why);
    ok(rc == -1 && strstr(why.message, "ended inside a SEND_TENSOR frame"), "a SEND_TENSOR cut short in its data: %s",
       why.message);
    rc = read_sent(frame.data, 10, &buf, &f, &why);
    ok(rc == -1 && strstr(why.message, "inside a header"), "a frame cut short in its header: %s", why.message);
    rc = read_sent(frame.data, 0, &buf, &f, &why);
    ok(rc == 0 && strstr(why.message, "closed"), "an end of stream between frames: %s", why.message);

    fl_wire_buf_free(&small);
    fl_wire_buf_free(&frame);
    fl_wire_buf_free(&buf);
    fl_tensor_free(back);
    fl_tensor_free(t);
}

int main(void)
{
    test_reader();
    return done_testing();
}
