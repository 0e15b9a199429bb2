/* test_secure_listen.c: secure by default on a network
 * (src/distributed_runtime/partition/listen_security.c): a task server asked to listen
 * on 0.0.0.0 without a secret refuses, naming --cluster_secret_file and
 * --insecure_listen; with the switch (or FLOWLAB_INSECURE_LISTEN=1) it starts
 * and warns; with a secret, or on 127.0.0.1, it starts as before. Through
 * the API, and through chapter 3's ps and flowlab_server as a user runs them. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "lab_runner.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "loopback.h"

static char secret_file[300];

/* A connection that sends junk and waits for the server to close it: the
 * server's loop is running, so fl_server_stop's break will be seen. */
static bool server_answers(int port)
{
    int fd = loopback_connect(port, 10);
    char junk[64], reply[256];
    memset(junk, 0xff, sizeof junk);
    bool answered = fd >= 0 && write(fd, junk, sizeof junk) == (ssize_t)sizeof junk;
    ssize_t n = 1;
    for (int i = 0; answered && n > 0 && i < 1000; i++)
        n = read(fd, reply, sizeof reply);
    if (fd >= 0)
        close(fd);
    if (!answered || n < 0)
        diag("the server on port %d did not close a connection that sent junk within 10 s", port);
    return answered && n == 0;
}

/* A ps at host:(a free port) for one ps and one worker; the server or NULL,
 * its log lines in log. */
static fl_server *start_ps_at(const char *host, bool allow, const char *secret, char *log, size_t len)
{
    char ps_hosts[64], worker_hosts[64];
    int port = loopback_free_port();
    snprintf(ps_hosts, sizeof ps_hosts, "%s:%d", host, port);
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", loopback_free_port());
    fl_cluster *c = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    if (allow)
        fl_cluster_allow_insecure_listen(c, true);
    if (secret && fl_cluster_set_secret_file(c, secret) != 0)
        diag("secret: %s", fl_last_error());
    FILE *f = tmpfile();
    fl_server_options o = {.log = f};
    fl_server *s = fl_server_start(c, &o);
    if (!s)
        fprintf(f, "refused: %s\n", fl_last_error());
    else if (!server_answers(port))
        fprintf(f, "(started, but did not answer)\n");
    fflush(f);
    rewind(f);
    size_t n = fread(log, 1, len - 1, f);
    log[n] = '\0';
    fclose(f);
    fl_server_stop(s);
    fl_cluster_free(c);
    return s;
}

static void test_api(void)
{
    char log[2048];
    ok(!start_ps_at("0.0.0.0", false, NULL, log, sizeof log) && fl_last_error_code() == FL_FAILED_PRECONDITION,
       "a ps on 0.0.0.0 without a secret refuses to start: %s", log);
    contains(log, "0.0.0.0:", "the refusal names the address");
    contains(log, "--cluster_secret_file", "and the flag that secures it");
    contains(log, "--insecure_listen", "and the flag that allows it anyway");
    ok(start_ps_at("0.0.0.0", true, NULL, log, sizeof log) != NULL, "with fl_cluster_allow_insecure_listen it starts");
    contains(log, "WARNING: listening at 0.0.0.0:", "and warns in its log");
    setenv("FLOWLAB_INSECURE_LISTEN", "1", 1);
    ok(start_ps_at("0.0.0.0", false, NULL, log, sizeof log) != NULL, "FLOWLAB_INSECURE_LISTEN=1 does the same");
    contains(log, "WARNING", "with the warning");
    unsetenv("FLOWLAB_INSECURE_LISTEN");
    ok(start_ps_at("0.0.0.0", false, secret_file, log, sizeof log) != NULL && !strstr(log, "WARNING"),
       "with a secret it starts on 0.0.0.0, with no warning %s", log);
    ok(start_ps_at("127.0.0.1", false, NULL, log, sizeof log) != NULL && !strstr(log, "WARNING"),
       "on 127.0.0.1 without a secret it starts as before, with no warning %s", log);
    ok(start_ps_at("localhost", false, NULL, log, sizeof log) != NULL, "so it does on localhost %s", log);
}

static void test_switch(void)
{
    fl_cluster_security_flags f = {0};
    ok(fl_cluster_security_switch(&f, "--insecure_listen") && f.insecure_listen, "--insecure_listen is a switch");
    ok(fl_cluster_security_switch(&f, "--insecure_listen=false") && !f.insecure_listen, "=false turns it off");
    ok(!fl_cluster_security_switch(&f, "--insecure_listening") && !fl_cluster_security_switch(&f, "--tls_ca"),
       "other flags are not it");
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Runs the shell command until it exits or prints want (then it is killed
 * by pid), for at most 60 s; its output into out, its status (-1: killed). */
static int run_until(const char *command, const char *want, char *out, size_t len)
{
    int fds[2];
    if (pipe(fds) != 0)
        skip_all("no pipe");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1), dup2(fds[1], 2), close(fds[0]);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t used = 0;
    double deadline = now_s() + 60;
    for (int n = 1; n > 0 && used + 1 < len && !strstr(out, want) && now_s() < deadline;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (poll(&p, 1, 1000) == 1 && (n = (int)read(fds[0], out + used, len - 1 - used)) > 0)
            used += (size_t)n;
        out[used] = '\0';
    }
    bool seen = strstr(out, want) != NULL;
    if (!seen && now_s() >= deadline)
        diag("waited 60 s for \"%s\" or the end of: %s", want, command);
    int status;
    pid_t ended = 0; /* it closed its output (or printed want): up to 10 s more to exit */
    for (int i = 0; i < 1000 && !seen && (ended = waitpid(pid, &status, WNOHANG)) == 0; i++)
        usleep(10000);
    if (seen || ended == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        status = -1;
    } else {
        status = decode_status(status);
    }
    close(fds[0]);
    return status;
}

/* program (chapter 3's lab or flowlab_server) as a ps on 0.0.0.0. */
static void test_program(const char *program, const char *serving)
{
    char cmd[1500], out[8192] = "", flags[200];
    int port = loopback_free_port();
    snprintf(flags, sizeof flags, "--ps_hosts=0.0.0.0:%d --worker_hosts=127.0.0.1:%d --job_name=ps", port,
             loopback_free_port());
    snprintf(cmd, sizeof cmd, "exec env FLOWLAB_BACKEND=host %s/%s %s", build_dir, program, flags);
    int status = run_until(cmd, "\n\n(never)", out, sizeof out);
    ok(status == 1, "%s as a ps on 0.0.0.0 without a secret exits 1 (status %d)", program, status);
    contains(out, "--cluster_secret_file", "it names --cluster_secret_file");
    contains(out, "--insecure_listen", "and --insecure_listen");
    out[0] = '\0';
    snprintf(cmd, sizeof cmd, "exec env FLOWLAB_BACKEND=host %s/%s %s --insecure_listen", build_dir, program, flags);
    status = run_until(cmd, serving, out, sizeof out);
    ok(status == -1 && strstr(out, serving), "with --insecure_listen it starts and serves (%s)",
       status == -1 ? "stopped by pid" : "it exited");
    contains(out, "WARNING: listening at 0.0.0.0:", "and warns");
    out[0] = '\0';
    snprintf(cmd, sizeof cmd, "exec env FLOWLAB_BACKEND=host %s/%s %s --cluster_secret_file %s", build_dir, program,
             flags, secret_file);
    status = run_until(cmd, serving, out, sizeof out);
    ok(status == -1 && strstr(out, serving) && !strstr(out, "WARNING"),
       "with --cluster_secret_file it starts on 0.0.0.0 without a warning");
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_secure_listen", "labs/tools/flowlab_server");
    snprintf(secret_file, sizeof secret_file, "%s/secret", tmp_dir);
    int fd = open(secret_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, "0123456789abcdef0123456789abcdef\n", 33) != 33)
        skip_all("cannot write a secret file");
    close(fd);
    test_switch();
    test_api();
    test_program("labs/tools/flowlab_server", "serving partitions");
    test_program("labs/03-between-graph/between_graph", "serving variables");
    lab_runner_finish();
    return done_testing();
}
