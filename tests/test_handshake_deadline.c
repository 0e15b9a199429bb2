/* test_handshake_deadline.c: a worker's handshake ends by its deadline
 * (FLOWLAB_TASK_DEADLINE, here 2 s) with a message naming the ps, whatever
 * the ps does: silent (the kernel accepts, nobody answers), stopped
 * (SIGSTOP), answering garbage, or answering a CHALLENGE with a false
 * SERVER_PROOF. The false ps's run in child processes, killed by pid. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "runtime.h"
#include "distributed_runtime/partition/cluster_security.h"
#include "distributed_runtime/transport/task_client.h"
#include "distributed_runtime/transport/socket_writer.h"
#include "loopback.h"
#include "stop_process.h"

#define DEADLINE_S 2.0

typedef enum { SILENT, GARBAGE, FALSE_PROOF } behaviour;

/* One connection to a false ps, served as b says until the worker hangs up. */
static void serve_falsely(int fd, behaviour b)
{
    fl_wire_buf buf = {0};
    unsigned char nonce[FL_WIRE_PROOF_BYTES] = {1, 2, 3};
    if (b == GARBAGE)
        fl_socket_write_all(fd, (const unsigned char *)"HTTP/1.0 200 OK\r\n\r\n", 19);
    if (b == FALSE_PROOF) {
        fl_wire_put_challenge(&buf, 0, nonce);
        fl_socket_write_all(fd, buf.data, buf.len);
    }
    char sink[4096];
    ssize_t n;
    bool answered = false;
    while ((n = recv(fd, sink, sizeof sink, 0)) > 0)
        if (b == FALSE_PROOF && !answered) { /* its HELLO or PROOF: answered with a proof of nothing */
            buf.len = 0;
            fl_wire_put_server_proof(&buf, 0, nonce);
            fl_socket_write_all(fd, buf.data, buf.len);
            answered = true;
        }
    close(fd);
    fl_wire_buf_free(&buf);
}

/* A child that lies to every connection on a port of its own (*port); it
 * ends after 30 s if not killed first. */
static pid_t start_false_ps(behaviour b, int *port)
{
    *port = 0;
    int listener = loopback_bind(port, 1);
    pid_t pid = fork();
    if (pid != 0) {
        close(listener);
        return pid;
    }
    alarm(30);
    for (int i = 0; i < 100; i++) /* the worker tries again after a bad answer */
        serve_falsely(accept(listener, NULL, NULL), b);
    _exit(0);
}

static void stop_child(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Opens a worker's connection to port with the secret (or none); its
 * error in why; the seconds it took in *took. */
static fl_task_client *open_worker(int port, const unsigned char *secret, size_t len, char *why, size_t why_len,
                                 double *took)
{
    fl_connect_options o = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = DEADLINE_S,
                            .job = "ps", .task = 0, .secret = secret, .secret_len = len, .log = stderr};
    double start = fl_now_s();
    fl_task_client *c = fl_task_client_open(&o, "worker", 0);
    *took = fl_now_s() - start;
    snprintf(why, why_len, "%s", c ? "" : fl_last_error());
    return c;
}

static void check_ends(const char *what, int port, const unsigned char *secret, size_t len, const char *want)
{
    char why[1024];
    double took;
    fl_task_client *c = open_worker(port, secret, len, why, sizeof why, &took);
    ok(!c && took < DEADLINE_S + 3, "%s: the worker gives up in %.1f s (deadline %g s)", what, took, DEADLINE_S);
    contains(why, "/job:ps/task:0", "the error names the ps");
    contains(why, want, "and says why");
    if (c)
        fl_task_client_close(c);
}

static void test_silent_ps(void)
{
    int port = 0, listener = loopback_bind(&port, 1); /* connections complete in the backlog */
    check_ends("a silent ps", port, NULL, 0, "before the deadline");
    close(listener);
}

static void test_stopped_ps(void)
{
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    int port = atoi(strchr(ps_hosts, ':') + 1);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30);
        fl_cluster *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
        fl_server *ps = fl_server_start(spec, NULL);
        if (ps)
            fl_server_join(ps, 30);
        _exit(0);
    }
    int fd = -1;
    for (double end = fl_now_s() + 10; fd < 0 && fl_now_s() < end; poll(NULL, 0, 20))
        fd = loopback_connect(port, 1);
    ok(fd >= 0, "the real ps listens (waited up to 10 s)");
    if (fd >= 0)
        close(fd);
    ok(stop_process(pid), "the ps is stopped (SIGSTOP; waited up to 5 s)");
    check_ends("a stopped ps", port, NULL, 0, "before the deadline");
    kill(pid, SIGCONT);
    stop_child(pid);
}

static void test_lying_ps(void)
{
    static const unsigned char secret[] = "0123456789abcdef0123456789abcdef";
    int port;
    pid_t pid = start_false_ps(GARBAGE, &port);
    check_ends("a ps that answers garbage", port, NULL, 0, "bad magic");
    stop_child(pid);
    pid = start_false_ps(FALSE_PROOF, &port);
    check_ends("a ps with a false proof", port, secret, sizeof secret - 1, "proof of the cluster secret is wrong");
    stop_child(pid);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_silent_ps();
    test_stopped_ps();
    test_lying_ps();
    return done_testing();
}
