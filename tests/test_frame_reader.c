/* test_frame_reader.c: a big VALUE without copies. The ps sends a VALUE's
 * head and then the variable's bytes from where they lie; a worker reads the
 * frame from a socket with the data landing straight in the buffer that
 * awaits it, and the parse checks the frame as if it were whole. */
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

/* The head plus the data is the frame fl_wire_put_value makes. */
static void test_value_head(void)
{
    fl_tensor *t = counting(40000);
    fl_wire_buf whole = {0}, head = {0};
    ok(fl_wire_put_value(&whole, 7, "dense_1/kernel", t) == 0 && fl_wire_put_value_head(&head, 7, "dense_1/kernel", t) == 0,
       "VALUE and its head encode");
    size_t bytes = fl_tensor_bytes(t);
    ok(head.len + bytes == whole.len && memcmp(head.data, whole.data, head.len) == 0 &&
           memcmp(whole.data + head.len, t->data, bytes) == 0,
       "the head is the VALUE frame up to its data, and its length counts the data");
    fl_wire_frame f = fl_wire_frame_announced(whole.data);
    ok(f.type == FL_WIRE_VALUE && f.request_id == 7 && f.frame_len == whole.len && f.payload == NULL,
       "the header announces the type, the request and the length");
    fl_wire_buf_free(&whole);
    fl_wire_buf_free(&head);
    fl_tensor_free(t);
}

/* A frame whose tensor data lies apart parses only when the apart bytes
 * are that tensor's data, exactly. */
static void test_parse_with_tail(void)
{
    fl_tensor *t = counting(64);
    fl_wire_buf head = {0};
    fl_wire_put_value_head(&head, 3, "w", t);
    size_t bytes = fl_tensor_bytes(t);
    fl_wire_frame f = fl_wire_frame_announced(head.data);
    f.payload = head.data + 16;
    f.tail = t->data;
    f.tail_len = bytes;
    fl_wire_message m;
    fl_status why = {0};
    ok(fl_wire_parse(&f, &m, &why) == 0 && m.u.named.tensor.data == t->data &&
           m.u.named.tensor.bytes == bytes && strcmp(m.u.named.name, "w") == 0,
       "the data received apart is the tensor's, in place (%s)", why.message);
    f.tail_len = bytes - 4;
    ok(fl_wire_parse(&f, &m, &why) != 0 && strstr(why.message, "VALUE: "), "a tail shorter than the data is refused: %s", why.message);
    f.tail_len = f.payload_len + 1;
    ok(fl_wire_parse(&f, &m, &why) != 0 && strstr(why.message, "apart"), "a tail longer than the payload is refused: %s", why.message);
    fl_wire_buf pull = {0};
    fl_wire_put_pull(&pull, 4, "w");
    fl_wire_frame p = fl_wire_frame_announced(pull.data);
    p.payload = pull.data + 16;
    p.tail = pull.data + 17;
    p.tail_len = 1;
    ok(fl_wire_parse(&p, &m, &why) != 0, "a tail that is not a tensor's data is refused: %s", why.message);
    fl_wire_buf_free(&pull);
    fl_wire_buf_free(&head);
    fl_tensor_free(t);
}

typedef struct {
    void *dst;
    size_t bytes;
    int asked;
} destination;

static void *give_destination(void *ctx, const fl_wire_frame *announced, size_t *bytes)
{
    destination *d = ctx;
    (void)announced;
    d->asked++;
    *bytes = d->bytes;
    return d->dst;
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

static int read_sent(const unsigned char *p, size_t len, destination *d, fl_wire_buf *buf, fl_wire_frame *f,
                     fl_status *why)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
        return -2;
    sender s = {fds[0], p, len};
    pthread_t t;
    pthread_create(&t, NULL, send_bytes, &s);
    int rc = fl_read_frame(fds[1], buf, f, d ? give_destination : NULL, d, why);
    shutdown(fds[1], SHUT_RDWR);
    pthread_join(t, NULL);
    close(fds[0]);
    close(fds[1]);
    return rc;
}

static void test_reader(void)
{
    fl_tensor *t = counting(1 << 16); /* 256 KiB: big enough to be received in place */
    size_t bytes = fl_tensor_bytes(t);
    fl_wire_buf frame = {0}, buf = {0};
    fl_wire_put_value(&frame, 9, "dense_1/kernel", t);
    float *landing = calloc(1, bytes);
    destination d = {landing, bytes, 0};
    fl_wire_frame f;
    fl_wire_message m;
    fl_status why = {0};
    int rc = read_sent(frame.data, frame.len, &d, &buf, &f, &why);
    ok(rc == 1 && d.asked == 1 && f.tail == (void *)landing && f.tail_len == bytes,
       "a big VALUE's data is received in the buffer that awaits it (%s)", why.message);
    ok(memcmp(landing, t->data, bytes) == 0, "every byte of it");
    ok(rc == 1 && fl_wire_parse(&f, &m, &why) == 0 && m.u.named.tensor.data == (void *)landing &&
           m.request_id == 9,
       "and the frame parses with its data in place");

    memset(landing, 0, bytes);
    d = (destination){landing, bytes / 2, 0};
    rc = read_sent(frame.data, frame.len, &d, &buf, &f, &why);
    ok(rc == 1 && f.tail_len == 0 && fl_wire_parse(&f, &m, &why) == 0 &&
           m.u.named.tensor.bytes == bytes && ((float *)landing)[0] == 0,
       "a buffer of another size is left alone: the value is read whole, for the caller to refuse");

    rc = read_sent(frame.data, frame.len, NULL, &buf, &f, &why);
    ok(rc == 1 && f.tail_len == 0 && fl_wire_parse(&f, &m, &why) == 0, "with no destination, as before");

    fl_wire_buf small = {0};
    fl_wire_put_pull(&small, 2, "w");
    d = (destination){landing, bytes, 0};
    rc = read_sent(small.data, small.len, &d, &buf, &f, &why);
    ok(rc == 1 && d.asked == 0 && f.type == FL_WIRE_PULL, "any other frame is read whole, without asking");

    d = (destination){landing, bytes, 0};
    rc = read_sent(frame.data, frame.len - 1000, &d, &buf, &f, &why);
    ok(rc == -1 && strstr(why.message, "ended inside a VALUE frame"), "a VALUE cut short in its data: %s", why.message);
    rc = read_sent(frame.data, 30, &d, &buf, &f, &why);
    ok(rc == -1 && strstr(why.message, "ended inside a VALUE frame"), "a VALUE cut short in its head: %s", why.message);
    rc = read_sent(frame.data, 0, &d, &buf, &f, &why);
    ok(rc == 0 && strstr(why.message, "closed"), "an end of stream between frames: %s", why.message);

    fl_wire_buf_free(&small);
    fl_wire_buf_free(&frame);
    fl_wire_buf_free(&buf);
    free(landing);
    fl_tensor_free(t);
}

int main(void)
{
    test_value_head();
    test_parse_with_tail();
    test_reader();
    return done_testing();
}
