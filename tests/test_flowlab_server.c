/* test_flowlab_server.c: build/labs/tools/flowlab_server as a student runs
 * it: one ps and one worker started as processes with TensorFlow's flags on
 * loopback; this test, their client, registers a partition on each, trains
 * a few steps (values checked), says goodbye, and both servers must exit by
 * themselves with status 0 within the deadline. Every process it starts is
 * killed by pid if it is still there at the end. */
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <sys/wait.h>

#include "distributed_runtime/transport/task_client.h"
#include "loopback.h"
#include "partition_fixture.h"
#include "tap.h"
#include "tools.h"

static char server_path[600], log_path[2][128];

static pid_t start_server(const char *ps, const char *worker, const char *job, int index, const char *extra)
{
    snprintf(log_path[index], sizeof log_path[index], "/tmp/test_flowlab_server.%d.%s.log", (int)getpid(), job);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int fd = open(log_path[index], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    char flags[4][160];
    snprintf(flags[0], sizeof flags[0], "--ps_hosts=%s", ps);
    snprintf(flags[1], sizeof flags[1], "--worker_hosts=%s", worker);
    snprintf(flags[2], sizeof flags[2], "--job_name=%s", job);
    snprintf(flags[3], sizeof flags[3], "--task_index=0");
    execl(server_path, server_path, flags[0], flags[1], flags[2], flags[3], extra, (char *)NULL);
    _exit(127);
}

/* The exit status once it has exited, or -1 after the deadline. */
static int wait_exit(pid_t pid, double deadline_s)
{
    double start = fl_now_s();
    int status;
    while (fl_now_s() - start < deadline_s) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        fl_sleep_s(0.05);
    }
    return -1;
}

static fl_task_client *connect_to(int port, const char *who)
{
    fl_connect_options o = {.who = who, .host = "127.0.0.1", .port = port, .deadline_s = 30, .log_prefix = "client"};
    return fl_task_client_open(&o, FL_WIRE_CLIENT_JOB, 0);
}

static void train(remote_run *ps, remote_run *worker)
{
    float xv[2] = {1, 2};
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(1, 2), xv);
    const fl_tensor *feeds[1] = {x};
    float want[3] = {3, 8, 22}; /* the sum of g = w x, w from [1, 1], w += g each step */
    double start = fl_now_s();
    for (int step = 0; step < 3; step++) {
        setup_runs(ps, worker, 10 + (uint64_t)step, feeds);
        pthread_t thread;
        pthread_create(&thread, NULL, run_remote, ps);
        run_remote(worker);
        pthread_join(thread, NULL);
        ok(ps->rc == 0 && worker->rc == 0, "step %d ran on both servers (ps: %s; worker: %s)", step, ps->error,
           worker->error);
        if (ps->rc || worker->rc)
            break;
        is_near(fl_tensor_scalar(worker->out[0]), want[step], 1e-6, "the worker's sum of g");
        fl_tensor_free(ps->out[0]);
        fl_tensor_free(worker->out[0]);
    }
    diag("%.2f ms per step: two RUN_PARTITIONs, two SEND_TENSORs between the servers, on loopback",
         (fl_now_s() - start) * 1000 / 3);
    fl_tensor_free(x);
}

/* --keep_running: a client's goodbye does not end it; the next client is served. */
static void test_keep_running(void)
{
    int port = loopback_free_port();
    char ps_hosts[64];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", port);
    pid_t pid = start_server(ps_hosts, "127.0.0.1:1", "ps", 0, "--keep_running");
    fl_task_client *first = connect_to(port, "/job:ps/task:0");
    ok(first && fl_task_client_goodbye(first) == 0, "a client of a --keep_running server says goodbye");
    fl_task_client_close(first);
    ok(wait_exit(pid, 1.0) == -1, "the server is still there a second later");
    fl_task_client *second = connect_to(port, "/job:ps/task:0");
    fl_graph_partition p;
    uint64_t handle;
    ps_partition(&p);
    ok(second && fl_partition_register(second, &p, &handle) == 0, "and a second client registers a partition on it: %s",
       fl_last_error());
    fl_graph_partition_free(&p);
    fl_task_client_close(second);
    kill(pid, SIGTERM);
    bool stopped = wait_exit(pid, 10) >= 0;
    ok(stopped, "it is stopped by a signal (waited up to 10 s)");
    if (!stopped) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
}

static void test_help(void)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "%s --help > /dev/null", server_path);
    ok(system(cmd) == 0, "flowlab_server --help exits 0");
    snprintf(cmd, sizeof cmd, "%s --no_such_flag=1 2> /dev/null", server_path);
    int status = system(cmd);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 2, "an unknown flag exits 2");
}

int main(int argc, char **argv)
{
    (void)argc;
    char self[512];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(server_path, sizeof server_path, "%s/../labs/tools/flowlab_server", dirname(self));
    if (access(server_path, X_OK) != 0)
        skip_all("flowlab_server is not built (make build/labs/tools/flowlab_server)");
    test_help();
    test_keep_running();
    int base = loopback_free_ports(2);
    char ps_hosts[64], worker_hosts[64];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", base);
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", base + 1);
    pid_t pids[2] = {start_server(ps_hosts, worker_hosts, "ps", 0, NULL),
                     start_server(ps_hosts, worker_hosts, "worker", 1, NULL)};
    remote_run ps = {.client = connect_to(base, "/job:ps/task:0")};
    remote_run worker = {.client = connect_to(base + 1, "/job:worker/task:0")};
    ok(ps.client && worker.client, "the client reached both servers (waited up to 30 s): %s", fl_last_error());
    fl_graph_partition p, q;
    ps_partition(&p);
    worker_partition(&q);
    ok(ps.client && worker.client && fl_partition_register(ps.client, &p, &ps.handle) == 0 &&
           fl_partition_register(worker.client, &q, &worker.handle) == 0,
       "a partition registered on each: %s", fl_last_error());
    fl_graph_partition_free(&p);
    fl_graph_partition_free(&q);
    if (ps.client && worker.client) {
        initialize(&ps);
        train(&ps, &worker);
        ok(fl_task_client_goodbye(ps.client) == 0 && fl_task_client_goodbye(worker.client) == 0, "the client said goodbye");
    }
    for (int i = 0; i < 2; i++) {
        int status = wait_exit(pids[i], 20);
        ok(status == 0, "the %s server exited by itself with status 0 (got %d; waited up to 20 s)", i ? "worker" : "ps",
           status);
        if (status < 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
        }
    }
    char *log = read_text(log_path[1]);
    contains(log ? log : "", "offers /cpu:0", "the worker's log says what it offers");
    contains(log ? log : "", "ran 3 steps of partitions; per step, 0.000 MB of values came from other tasks",
             "and, at exit, what crossed tasks per step");
    free(log);
    fl_task_client_close(ps.client);
    fl_task_client_close(worker.client);
    remove(log_path[0]);
    remove(log_path[1]);
    return done_testing();
}
