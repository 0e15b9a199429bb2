/* test_connect.c: a worker reaching a task that is not up yet
 * (src/distributed_runtime/transport/connect.c): it waits with growing pauses, says whom it waits
 * for, connects once the peer listens, and gives up at its deadline with an
 * error naming the task, also when the peer's full listen queue drops its
 * SYNs. Loopback only, on ports the kernel picks. */
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "distributed_runtime/transport/connect.h"
#include "loopback.h"
#include "runtime.h"

typedef struct {
    int port;
    int delay_ms;
    int accepted; /* 1 once a connection came */
} late_server;

/* Starts listening only after delay_ms, as a ps task that starts late. */
static void *listen_late(void *p)
{
    late_server *s = p;
    usleep((useconds_t)s->delay_ms * 1000);
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0) {
        int c = accept(fd, NULL, NULL);
        s->accepted = c >= 0;
        if (c >= 0)
            close(c);
    }
    close(fd);
    return NULL;
}

static void test_backoff(void)
{
    const double want[] = {0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0};
    bool all = true;
    for (int i = 0; i < 7; i++)
        all = all && fabs(fl_connect_backoff_s(i) - want[i]) < 1e-9;
    ok(all, "pauses of 50 ms doubling to at most 1 s");
}

static void test_waits_for_a_late_peer(void)
{
    late_server s = {.port = loopback_free_port(), .delay_ms = 600};
    pthread_t thread;
    pthread_create(&thread, NULL, listen_late, &s);
    FILE *log = tmpfile();
    fl_connect_options o = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = s.port, .deadline_s = 10,
                            .log_every_s = 0.2, .log = log, .log_prefix = "worker 1"};
    int fd = fl_connect_with_retry(&o);
    ok(fd >= 0, "connects once the peer listens (%s)", fd < 0 ? fl_last_error() : "ok");
    if (fd >= 0)
        close(fd);
    pthread_join(thread, NULL);
    ok(s.accepted, "and the peer saw the connection");
    char text[2048] = "", want[128];
    rewind(log);
    size_t n = fread(text, 1, sizeof text - 1, log);
    text[n] = '\0';
    fclose(log);
    snprintf(want, sizeof want, "worker 1: waiting for /job:ps/task:0 at 127.0.0.1:%d for 0 s (Connection refused)", s.port);
    contains(text, want, "while waiting, it says whom it waits for and why");
    contains(text, "worker 1: reached /job:ps/task:0", "and says when the wait is over");
}

static void test_gives_up_at_the_deadline(void)
{
    int port = loopback_free_port();
    fl_connect_options o = {.who = "/job:ps/task:1", .host = "127.0.0.1", .port = port, .deadline_s = 0.5,
                            .log = stderr, .log_prefix = "worker 0"};
    int fd = fl_connect_with_retry(&o);
    ok(fd < 0, "nobody listening: no connection");
    char want[160];
    snprintf(want, sizeof want, "/job:ps/task:1 at 127.0.0.1:%d did not answer for 0.5 s (Connection refused)", port);
    contains(fl_last_error(), want, "the error names the task, its address, the wait and the reason");

    fl_connect_options bad = {.who = "/job:ps/task:0", .host = "no-such-host.invalid", .port = 2222,
                              .deadline_s = 30, .log = stderr};
    ok(fl_connect_with_retry(&bad) < 0, "a host name that does not resolve fails at once");
    contains(fl_last_error(), "cannot resolve \"no-such-host.invalid\"", "naming the host");
}

/* A ps under a flood: its listen queue full, the kernel drops our SYNs. A
 * blocking connect() waited out the kernel's retries (127 s); the deadline holds. */
static void test_full_listen_queue(void)
{
    int port = 0, fd = loopback_bind(&port, 0);
    bool listening = fd >= 0 && listen(fd, 0) == 0;
    int filler = listening ? loopback_connect(port, 1) : -1; /* a queue of 0 holds one, never accepted */
    ok(filler >= 0, "a peer that never accepts, its listen queue filled by one connection");
    fl_connect_options o = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 2,
                            .log = stderr, .log_prefix = "worker 0"};
    double start = fl_now_s();
    int got = fl_connect_with_retry(&o);
    double took = fl_now_s() - start;
    ok(got < 0 && took >= 1.9 && took < 30, "its SYNs dropped, it gives up at its deadline of 2 s (%.1f s), not after the "
       "kernel's 127 s", took);
    contains(fl_last_error(), "(Connection timed out)", "saying the peer did not answer in time");
    if (got >= 0)
        close(got);
    if (filler >= 0)
        close(filler);
    if (fd >= 0)
        close(fd);
}

int main(void)
{
    test_backoff();
    test_waits_for_a_late_peer();
    test_gives_up_at_the_deadline();
    test_full_listen_queue();
    return done_testing();
}
