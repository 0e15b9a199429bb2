/* test_server.c: a live ps server (src/distributed_runtime/server*.c) against bad input
 * while a good worker keeps updating a variable: each bad connection gets an
 * ERROR frame where the stream allows one and is closed, the server goes on,
 * and the worker loses no update. Also: a port already in use, a client
 * that says nothing, a server stopped right after it starts, workers that
 * disagree on --sync_replicas. Loopback only;
 * every read has a deadline. */
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "distributed_runtime/transport/task_client.h"
#include "loopback.h"

enum { GOOD_UPDATES = 300, WIDTH = 1000 };

/* What the server answered: the ERROR frame's text ("" if none), and
 * whether it then closed the connection. */
typedef struct {
    char error[FL_WIRE_MAX_MESSAGE + 1];
    bool closed;
} answer;

/* Takes whole frames off the front of bytes, keeping the first ERROR's
 * text; true once a NOT_INITIALIZED answer came. */
static bool take_frames(unsigned char *bytes, size_t *len, answer *a)
{
    fl_wire_frame f;
    fl_wire_message m;
    fl_status why = {0};
    while (fl_wire_decode(bytes, *len, &f, &why) == FL_WIRE_FRAME) {
        bool not_initialized = false;
        if (f.type == FL_WIRE_ERROR && fl_wire_parse(&f, &m, &why) == 0 && !a->error[0]) {
            snprintf(a->error, sizeof a->error, "%s", m.u.error.message);
            not_initialized = m.u.error.code == FL_WIRE_E_NOT_INITIALIZED;
        }
        memmove(bytes, bytes + f.frame_len, *len - f.frame_len);
        *len -= f.frame_len;
        if (not_initialized)
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

/* Pushes GOOD_UPDATES gradients of ones with learning rate 1, then pulls. */
static void *work(void *p)
{
    good_worker *w = p;
    fl_connect_options where = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = w->port, .deadline_s = 10};
    fl_task_client *c = fl_task_client_open(&where, "worker", 0);
    if (!c) {
        w->failures = -1;
        return NULL;
    }
    fl_tensor *zeros = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, WIDTH));
    fl_tensor *ones = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, WIDTH));
    for (int i = 0; i < WIDTH; i++)
        fl_tensor_floats(ones)[i] = 1;
    fl_task_client_wait(c, fl_task_client_init(c, "w", zeros, NULL));
    fl_wire_optimizer_args sgd = {.kind = FL_WIRE_GRADIENT_DESCENT, .learning_rate = 1};
    for (int i = 0; i < GOOD_UPDATES; i++) {
        uint32_t id = fl_task_client_apply(c, "w", &sgd, ones);
        if (!id || (i % 50 == 49 && fl_task_client_wait(c, id) != 0))
            w->failures++;
    }
    float value[WIDTH];
    w->failures += fl_task_client_wait(c, fl_task_client_pull(c, "w", value, sizeof value)) != 0;
    w->final_value = value[WIDTH - 1];
    fl_task_client_close(c);
    fl_tensor_free(zeros);
    fl_tensor_free(ones);
    return NULL;
}

static void throw_everything(int port)
{
    answer a = throw_bytes(port, "GET / HTTP/1.0\r\n\r\n", 18);
    ok(a.closed && strstr(a.error, "bad magic"), "an HTTP request: an ERROR (%s) and the connection closed", a.error);

    unsigned char header[16] = {'F', 'L', 'W', 'P', 9, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    a = throw_bytes(port, header, sizeof header);
    ok(a.closed && strstr(a.error, "version 9"), "protocol version 9: refused (%s)", a.error);

    unsigned char huge[16] = {'F', 'L', 'W', 'P', 1, 6, 0, 0, 0, 0, 0, 1, 0x10, 0, 0, 0};
    a = throw_bytes(port, huge, sizeof huge);
    ok(a.closed && strstr(a.error, "over the"), "a 256 MiB payload length: refused from its header (%s)", a.error);

    unsigned char garbage[1000];
    for (int i = 0; i < 1000; i++)
        garbage[i] = (unsigned char)(i * 37 + 11);
    a = throw_bytes(port, garbage, sizeof garbage);
    ok(a.closed && a.error[0], "1000 bytes of garbage: refused (%s)", a.error);

    fl_wire_buf buf = {0};
    fl_wire_put_pull(&buf, 1, "w");
    a = throw_bytes(port, buf.data, buf.len);
    ok(a.closed && strstr(a.error, "PULL before HELLO"), "a request before HELLO: refused (%s)", a.error);
    fl_wire_buf_free(&buf);

    hello_then(&buf, "worker", 7);
    a = throw_bytes(port, buf.data, buf.len);
    ok(a.closed && strstr(a.error, "not in this cluster spec"), "HELLO from worker 7 of 2: refused (%s)", a.error);
    fl_wire_buf_free(&buf);

    hello_then(&buf, "worker", 1);
    fl_tensor *wrong = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 3));
    fl_wire_put_init_variable(&buf, 2, "w", wrong);
    a = throw_bytes(port, buf.data, buf.len);
    ok(a.closed && strstr(a.error, "variable w is float32 [1000]"), "an INIT of w with another shape: refused (%s)",
       a.error);
    fl_wire_buf_free(&buf);

    hello_then(&buf, "worker", 1);
    fl_wire_put_pull(&buf, 2, "nothing");
    a = throw_bytes(port, buf.data, buf.len);
    ok(!a.closed && strstr(a.error, "nothing has no value"), "a PULL of an unknown variable: answered, not closed (%s)",
       a.error);
    fl_wire_buf_free(&buf);

    hello_then(&buf, "worker", 1);
    size_t cut = buf.len;
    fl_wire_put_value(&buf, 2, "w", wrong);
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

    /* w exists before any bad client can race to give it another shape. */
    fl_connect_options where = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 10};
    fl_task_client *first = fl_task_client_open(&where, "worker", 1);
    fl_tensor *zeros = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, WIDTH));
    ok(first && fl_task_client_wait(first, fl_task_client_init(first, "w", zeros, NULL)) == 0, "w is initialised");
    fl_task_client_close(first);
    fl_tensor_free(zeros);

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
    contains(text, "(/job:worker/task:1): variable w is float32 [1000]", "naming the task once it said who it is");
    fclose(log);
    fl_server_stop(ps);
    fl_cluster_free(spec);
}

/* A ps with a log and two workers connected to it, worker 0 and worker 1. */
typedef struct {
    fl_cluster *spec;
    FILE *log;
    fl_server *ps;
    fl_task_client *worker[2];
} two_workers;

static bool start_two_workers(two_workers *t)
{
    int port;
    t->log = tmpfile();
    fl_server_options options = {.log = t->log};
    t->ps = start_ps(&t->spec, &port, &options);
    fl_connect_options where = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 10};
    for (int i = 0; i < 2; i++)
        t->worker[i] = t->ps ? fl_task_client_open(&where, "worker", i) : NULL;
    return ok(t->worker[0] && t->worker[1], "two workers connect");
}

/* Closes the workers and stops the ps; its log, complete, into text. */
static void stop_two_workers(two_workers *t, char *text, size_t len)
{
    fl_task_client_close(t->worker[1]);
    fl_task_client_close(t->worker[0]);
    fl_server_stop(t->ps);
    fl_cluster_free(t->spec);
    rewind(t->log);
    text[fread(text, 1, len - 1, t->log)] = '\0';
    fclose(t->log);
}

/* Synchronous replicas' end: worker 0's update counts toward a step that
 * needs 2 replicas, and its token parks; once worker 1 says goodbye nobody
 * can complete the step, so the token is answered, not left to the deadline. */
static void test_straggler_released_at_goodbye(void)
{
    two_workers t;
    char text[4096];
    if (!start_two_workers(&t)) {
        stop_two_workers(&t, text, sizeof text);
        return;
    }
    fl_task_client *straggler = t.worker[0], *other = t.worker[1];
    int32_t zero = 0, one = 1, seen = -1;
    fl_tensor *start = fl_tensor_from_ints(fl_shape_make(0), &zero), *delta = fl_tensor_from_ints(fl_shape_make(0), &one);
    fl_wire_sync sync = {.step = 0, .replicas = 2};
    fl_task_client_wait(straggler, fl_task_client_init(straggler, "global_step", start, NULL));
    fl_task_client_wait(straggler, fl_task_client_sync_assignment(straggler, FL_WIRE_SYNC_ASSIGN_ADD, &sync, "global_step", delta));
    uint32_t token = fl_task_client_wait_step(straggler, "global_step", FL_WIRE_STEP_UNKNOWN, &seen);
    usleep(300000);
    ok(fl_task_client_done(straggler, token) == 0, "a token for a step 1 of 2 replicas has counted is parked");
    ok(fl_task_client_goodbye(other) == 0, "the other worker says goodbye");
    int answered = fl_task_client_wait(straggler, token);
    ok(answered == 0 && seen == 0, "then the straggler's token is answered at once, with the step as it is (%d)", seen);
    fl_tensor_free(start);
    fl_tensor_free(delta);
    stop_two_workers(&t, text, sizeof text);
}

/* Workers that disagree on --sync_replicas (issue 38): worker 0's
 * synchronous update is served; worker 1's asynchronous ones are refused,
 * naming both workers and the flag, and logged once; worker 0 goes on. */
static void test_mixed_sync_modes(void)
{
    two_workers t;
    char text[4096], error[512];
    if (!start_two_workers(&t)) {
        stop_two_workers(&t, text, sizeof text);
        return;
    }
    fl_task_client *sync_worker = t.worker[0], *async_worker = t.worker[1];
    float zero = 0, one = 1;
    fl_tensor *w = fl_tensor_from_floats(fl_shape_make(0), &zero), *grad = fl_tensor_from_floats(fl_shape_make(0), &one);
    fl_wire_optimizer_args sgd = {.kind = FL_WIRE_GRADIENT_DESCENT, .learning_rate = 0.5f};
    fl_wire_sync sync = {.step = 0, .replicas = 2};
    fl_task_client_wait(sync_worker, fl_task_client_init(sync_worker, "w", w, NULL));
    ok(fl_task_client_wait(sync_worker, fl_task_client_sync_apply(sync_worker, &sync, "w", &sgd, grad)) == 0,
       "worker 0's synchronous update is served");
    int refused = fl_task_client_wait(async_worker, fl_task_client_apply(async_worker, "w", &sgd, grad));
    snprintf(error, sizeof error, "%s", fl_last_error());
    ok(refused == -1 && fl_last_error_code() == FL_INVALID_ARGUMENT, "worker 1's asynchronous APPLY is refused: %s", error);
    contains(error, "/job:worker/task:0 trains with --sync_replicas true, and /job:worker/task:1 with --sync_replicas false",
             "naming both workers and the flag");
    ok(fl_task_client_wait(async_worker, fl_task_client_apply(async_worker, "w", &sgd, grad)) == -1,
       "and so is its next one");
    ok(fl_task_client_wait(sync_worker, fl_task_client_sync_apply(sync_worker, &sync, "w", &sgd, grad)) == 0,
       "worker 0 goes on");
    stop_two_workers(&t, text, sizeof text);
    const char *line = strstr(text, "refused an update from");
    ok(line && !strstr(line + 1, "refused an update from") && strstr(line, "--sync_replicas"),
       "the ps logged one line:\n%s", text);
    fl_tensor_free(w);
    fl_tensor_free(grad);
}

/* Big tensors cross without copies: a gradient lands where the ps can
 * apply it as it lies, a value goes out from the variable itself, and a
 * worker receives it straight into the buffer that awaits it. */
static void test_big_tensors_in_place(void)
{
    fl_cluster *spec;
    int port;
    fl_server *ps = start_ps(&spec, &port, NULL);
    if (!ok(ps != NULL, "a ps for big tensors"))
        return;
    fl_connect_options where = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 10};
    fl_task_client *c = fl_task_client_open(&where, "worker", 0);
    enum { N = 300001 }; /* 1.2 MB, and an odd count of floats */
    fl_tensor *w = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, N)), *grad = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, N));
    for (int i = 0; i < N; i++) {
        fl_tensor_floats(w)[i] = (float)i;
        fl_tensor_floats(grad)[i] = 1.0f;
    }
    fl_wire_optimizer_args sgd = {.kind = FL_WIRE_GRADIENT_DESCENT, .learning_rate = 0.5f};
    bool ran = c && fl_task_client_wait(c, fl_task_client_init(c, "dense_1/kernel", w, NULL)) == 0;
    for (int k = 0; ran && k < 3; k++)
        ran = fl_task_client_wait(c, fl_task_client_apply(c, "dense_1/kernel", &sgd, grad)) == 0;
    float *back = calloc(N, sizeof *back);
    ran = ran && fl_task_client_wait(c, fl_task_client_pull(c, "dense_1/kernel", back, N * sizeof *back)) == 0;
    ok(ran && back[0] == -1.5f && back[N - 1] == (float)(N - 1) - 1.5f,
       "three big updates and a pull round trip (first %g, last %g)", back[0], back[N - 1]);
    fl_server_stats st;
    fl_server_get_stats(ps, &st);
    ok(st.copied_in_bytes == 0, "the ps copied none of the 4.8 MB it received before using it (%llu bytes)",
       (unsigned long long)st.copied_in_bytes);
    free(back);
    fl_tensor_free(w);
    fl_tensor_free(grad);
    fl_task_client_close(c);
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
    test_big_tensors_in_place();
    test_bad_input_beside_a_good_worker();
    test_straggler_released_at_goodbye();
    test_mixed_sync_modes();
    return done_testing();
}
