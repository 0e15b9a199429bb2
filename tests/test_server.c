/* test_server.c: a live ps server (src/distributed_runtime/server*.c) against bad input
 * while a good worker keeps updating a variable through its partition: each
 * bad connection gets an ERROR frame where the stream allows one and is
 * closed, the server goes on, and the worker loses no update. Also: a port
 * already in use, a frame type that is no more, a client that says nothing,
 * a server stopped right after it starts. Loopback only; every read has a
 * deadline. */
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "counter_partition.h"
#include "loopback.h"

enum { GOOD_UPDATES = 300, WIDTH = 1000 };

/* What the server answered: the ERROR frame's text ("" if none), and
 * whether it then closed the connection. */
typedef struct {
    char error[FL_WIRE_MAX_MESSAGE + 1];
    bool closed;
} answer;

/* Takes whole frames off the front of bytes, keeping the first ERROR's
 * text; true once a refused run's answer came (the connection stays). */
static bool take_frames(unsigned char *bytes, size_t *len, answer *a)
{
    fl_wire_frame f;
    fl_wire_message m;
    fl_status why = {0};
    while (fl_wire_decode(bytes, *len, &f, &why) == FL_WIRE_FRAME) {
        bool refused_run = false;
        if (f.type == FL_WIRE_ERROR && fl_wire_parse(&f, &m, &why) == 0 && !a->error[0]) {
            snprintf(a->error, sizeof a->error, "%s", m.u.error.message);
            refused_run = m.u.error.code == FL_WIRE_E_INVALID_ARGUMENT;
        }
        memmove(bytes, bytes + f.frame_len, *len - f.frame_len);
        *len -= f.frame_len;
        if (refused_run)
            return true;
    }
    return false;
}

static answer read_answer(int fd)
{
    answer a = {"", false};
    unsigned char bytes[8192];
    size_t len = 0;
    for (;;) {
        ssize_t n = recv(fd, bytes + len, sizeof bytes - len, 0);
        if (n == 0) {
            a.closed = true;
            break;
        }
        if (n < 0)
            break; /* the deadline: still open */
        len += (size_t)n;
        if (take_frames(bytes, &len, &a))
            break; /* answered; this one keeps the connection */
    }
    return a;
}

/* Sends bytes on a new connection and reads what comes back. */
static answer throw_bytes(int port, const void *bytes, size_t len)
{
    int fd = loopback_connect(port, 5);
    answer a = {"(no connection)", false};
    if (fd < 0)
        return a;
    if (len && send(fd, bytes, len, MSG_NOSIGNAL) < 0)
        diag("send failed");
    if (len)
        shutdown(fd, SHUT_WR); /* nothing more to say: the server sees the end after the bytes */
    a = read_answer(fd);
    close(fd);
    return a;
}

static size_t hello_then(fl_wire_buf *buf, const char *job, uint32_t task)
{
    fl_wire_put_hello(buf, 1, job, task);
    return buf->len;
}

typedef struct {
    int port;
    int failures;
    float final_value;
} good_worker;

/* Adds -1 to w GOOD_UPDATES times, one step each, reading the sum. */
static void *work(void *p)
{
    good_worker *w = p;
    fl_connect_options where = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = w->port, .deadline_s = 10};
    fl_task_client *c = fl_task_client_open(&where, "worker", 0);
    uint64_t handle = c ? counter_register(c, WIDTH) : 0;
    if (!handle || counter_step(c, handle, 1, NULL, NULL) != 0) {
        w->failures = -1;
        fl_task_client_close(c);
        return NULL;
    }
    fl_tensor *minus_ones = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, WIDTH)), *sum = NULL;
    for (int i = 0; i < WIDTH; i++)
        fl_tensor_floats(minus_ones)[i] = -1;
    for (int i = 0; i < GOOD_UPDATES; i++)
        w->failures += counter_step(c, handle, 2 + (uint64_t)i, minus_ones, &sum) != 0;
    w->final_value = sum ? fl_tensor_floats(sum)[WIDTH - 1] : 0;
    fl_tensor_free(sum);
    fl_task_client_close(c);
    fl_tensor_free(minus_ones);
    return NULL;
}

static void throw_everything(int port)
{
    answer a = throw_bytes(port, "GET / HTTP/1.0\r\n\r\n", 18);
    ok(a.closed && strstr(a.error, "bad magic"), "an HTTP request: an ERROR (%s) and the connection closed", a.error);

    unsigned char header[16] = {'F', 'L', 'W', 'P', 9, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    a = throw_bytes(port, header, sizeof header);
    ok(a.closed && strstr(a.error, "version 9"), "protocol version 9: refused (%s)", a.error);

    unsigned char huge[20] = {'F', 'L', 'W', 'P', 2, 24, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x10, 0, 0, 0};
    a = throw_bytes(port, huge, sizeof huge);
    ok(a.closed && strstr(a.error, "over the"), "a 256 MiB tail length: refused from its header (%s)", a.error);

    unsigned char garbage[1000];
    for (int i = 0; i < 1000; i++)
        garbage[i] = (unsigned char)(i * 37 + 11);
    a = throw_bytes(port, garbage, sizeof garbage);
    ok(a.closed && a.error[0], "1000 bytes of garbage: refused (%s)", a.error);

    fl_wire_buf buf = {0};
    fl_wire_put_is_initialized(&buf, 1, "w");
    a = throw_bytes(port, buf.data, buf.len);
    ok(a.closed && strstr(a.error, "IS_INITIALIZED before HELLO"), "a request before HELLO: refused (%s)", a.error);
    fl_wire_buf_free(&buf);

    hello_then(&buf, "worker", 7);
    a = throw_bytes(port, buf.data, buf.len);
    ok(a.closed && strstr(a.error, "not in this cluster spec"), "HELLO from worker 7 of 2: refused (%s)", a.error);
    fl_wire_buf_free(&buf);

    /* A PULL (5), a type of the ps store that is gone: no type at all now. */
    unsigned char pull[512] = {0};
    size_t hello_len = hello_then(&buf, "worker", 1);
    memcpy(pull, buf.data, hello_len);
    memcpy(pull + hello_len, (unsigned char[20]){'F', 'L', 'W', 'P', 2, 5, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0},
           20);
    a = throw_bytes(port, pull, hello_len + 20);
    ok(a.closed && strstr(a.error, "unknown frame type 5"), "a PULL, a type no more: refused (%s)", a.error);
    fl_wire_buf_free(&buf);

    hello_then(&buf, "worker", 1);
    fl_wire_name_list none[2] = {{0, NULL}, {0, NULL}};
    fl_wire_put_run_partition(&buf, 2, 7, 1, 0, 0, NULL, NULL, none);
    a = throw_bytes(port, buf.data, buf.len);
    ok(!a.closed && strstr(a.error, "no partition 7 was registered"),
       "a RUN_PARTITION of a partition never registered: answered, not closed (%s)", a.error);
    fl_wire_buf_free(&buf);

    hello_then(&buf, "worker", 1);
    size_t cut = buf.len;
    fl_tensor *wrong = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 3));
    fl_wire_put_send_tensor(&buf, 2, 1, "w", wrong);
    a = throw_bytes(port, buf.data, cut + 20); /* then the client closes inside the frame */
    ok(a.error[0] == '\0', "a frame cut short by the client: no answer owed (the server logs it)");
    fl_wire_buf_free(&buf);
    fl_tensor_free(wrong);

    a = throw_bytes(port, NULL, 0);
    ok(a.closed, "a client that says nothing is dropped after the hello timeout");
}

/* A ps for a cluster of it and two workers, on a free loopback port. */
static fl_server *start_ps(fl_cluster **spec, int *port, const fl_server_options *options)
{
    char ps_hosts[64], worker_hosts[64];
    /* Three ports at once: picked one by one, two could be the same port. */
    *port = loopback_free_ports(3);
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", *port);
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d,127.0.0.1:%d", *port + 1, *port + 2);
    *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    return fl_server_start(*spec, options);
}

static void test_bad_input_beside_a_good_worker(void)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server_options options = {.log = log, .hello_timeout_s = 0.5};
    fl_server *ps = start_ps(&spec, &port, &options);
    ok(ps != NULL, "the ps listens on 127.0.0.1:%d", port);
    if (!ps)
        return;

    fl_server *twin = fl_server_start(spec, NULL);
    char want[128];
    snprintf(want, sizeof want, "port %d of /job:ps/task:0 is already in use", port);
    ok(!twin, "a second server on the same address does not start");
    contains(fl_last_error(), want, "the error names the port and the task");

    good_worker w = {.port = port};
    pthread_t thread;
    pthread_create(&thread, NULL, work, &w);
    throw_everything(port);
    pthread_join(thread, NULL);
    ok(w.failures == 0, "the good worker's requests all succeeded meanwhile");
    is_near(w.final_value, -GOOD_UPDATES, 0, "and none of its updates was lost");

    fl_server_stats st;
    fl_server_get_stats(ps, &st);
    ok(st.bad_frames >= 7, "the server counted the bad connections (%llu)", (unsigned long long)st.bad_frames);
    char text[8192] = "";
    rewind(log);
    text[fread(text, 1, sizeof text - 1, log)] = '\0';
    contains(text, "ps 0: closing 127.0.0.1:", "each refusal is logged with the peer");
    contains(text, "(/job:worker/task:1): unknown frame type 5", "naming the task once it said who it is");
    fclose(log);
    fl_server_stop(ps);
    fl_cluster_free(spec);
}

/* Stopped right after it starts, before its event loop may have run: the
 * stop must still end the loop. 100 rounds in a child that must be done in
 * 20 s, so a hang fails the test instead of holding it. */
static void test_stop_right_after_start(void)
{
    pid_t child = fork();
    if (child == 0) {
        alarm(20);
        for (int i = 0; i < 100; i++) {
            fl_cluster *spec;
            int port;
            /* Another test may take the free port between the pick and the
             * bind; that is a busy port, not a stop that hangs: pick again. */
            fl_server *s = start_ps(&spec, &port, NULL);
            for (int retry = 0; !s && retry < 5; retry++) {
                fl_cluster_free(spec);
                s = start_ps(&spec, &port, NULL);
            }
            if (!s) {
                fprintf(stderr, "# round %d: the server did not start: %s\n", i, fl_last_error());
                _exit(2);
            }
            fl_server_stop(s);
            fl_cluster_free(spec);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "100 servers stopped right after starting all stop"))
        diag("the child %s %d (exit 2: a server did not start; SIGALRM: a stop waited for a loop that never ended)",
             WIFEXITED(status) ? "exited" : "was killed by signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int main(void)
{
    test_stop_right_after_start();
    test_bad_input_beside_a_good_worker();
    return done_testing();
}
