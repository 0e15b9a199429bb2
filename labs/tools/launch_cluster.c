/* launch_cluster.c: starts a whole cluster of chapter 3 on this machine:
 * N ps tasks and M workers of one program, each its own process, on free
 * loopback ports, with the flags TensorFlow's distributed examples use. It
 * prefixes each task's output lines with the task's name, waits for all,
 * stops the rest when a worker fails, and reports a ps that does not exit
 * once every worker has finished. It never leaves a task running. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TASKS 32

typedef struct {
    char name[16];  /* "ps0", "worker1" */
    bool is_ps;
    pid_t pid;
    int out;        /* the read end of its stdout+stderr pipe; -1 once closed */
    char line[4096];
    size_t len;
    bool exited;
    int status;
} task;

typedef struct {
    int num_ps, num_workers;
    double grace_s, deadline_s;
    char **program; /* PROGRAM ARGS..., NULL-terminated */
} options;

static task tasks[MAX_TASKS];
static int ntasks;
static volatile sig_atomic_t interrupted;

static void on_signal(int sig) { interrupted = sig; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: launch_cluster --ps N --workers M [--grace S] [--deadline S] [--] PROGRAM [ARGS...]\n"
            "Starts chapter 3's cluster on this machine: N ps tasks and M workers, each a process running\n"
            "PROGRAM ARGS --ps_hosts=127.0.0.1:P,... --worker_hosts=127.0.0.1:Q,... --job_name=ps|worker\n"
            "--task_index=I on free loopback ports. Every line a task prints comes out prefixed with its\n"
            "name (ps0:, worker1:). When a worker fails, the others are stopped; once every worker has\n"
            "finished, each ps must exit by itself within the grace time. Exit status 0 only when every\n"
            "task exited 0.\n"
            "  --ps N          ps tasks (default 1; 0 is allowed)\n"
            "  --workers M     worker tasks (default 2)\n"
            "  --grace S       seconds a ps may take to exit after the last worker (default 30)\n"
            "  --deadline S    seconds before everything is stopped (default 600)\n"
            "Each task gets POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=1 (one single-core PoCL device)\n"
            "unless POCL_DEVICES is already set.\n"
            "Example: launch_cluster --ps 1 --workers 2 build/labs/03-between-graph/between_graph "
            "--train_steps 200\n");
}

static double number_flag(const char *flag, const char *value, double min)
{
    char *end;
    double v = value ? strtod(value, &end) : 0;
    if (!value || *end || v < min) {
        fprintf(stderr, "launch_cluster: %s %s: expected a number of at least %g (see --help)\n", flag,
                value ? value : "(missing)", min);
        exit(2);
    }
    return v;
}

static options parse(int argc, char **argv)
{
    options o = {1, 2, 30, 600, NULL};
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(flag, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(flag, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(flag, "--ps") == 0)
            o.num_ps = (int)number_flag(flag, value, 0);
        else if (strcmp(flag, "--workers") == 0)
            o.num_workers = (int)number_flag(flag, value, 1);
        else if (strcmp(flag, "--grace") == 0)
            o.grace_s = number_flag(flag, value, 0);
        else if (strcmp(flag, "--deadline") == 0)
            o.deadline_s = number_flag(flag, value, 1);
        else {
            fprintf(stderr, "launch_cluster: unknown flag %s (see --help)\n", flag);
            exit(2);
        }
        i++;
    }
    if (i >= argc || o.num_ps + o.num_workers > MAX_TASKS) {
        fprintf(stderr, "launch_cluster: %s (see --help)\n",
                i >= argc ? "no PROGRAM to run" : "at most 32 tasks");
        exit(2);
    }
    o.program = argv + i;
    return o;
}

/* A port nothing listens on: the kernel's pick. Kept open until all are
 * picked, so that no two tasks get the same one. */
static int pick_port(int *fd)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(*fd, (struct sockaddr *)&a, &len) != 0) {
        fprintf(stderr, "launch_cluster: cannot find a free loopback port: %s\n", strerror(errno));
        exit(1);
    }
    return ntohs(a.sin_port);
}

/* "--ps_hosts=127.0.0.1:P,..." and "--worker_hosts=..." with fresh ports. */
static void host_flags(const options *o, char *ps, char *workers, size_t len)
{
    int fds[MAX_TASKS];
    snprintf(ps, len, "--ps_hosts=");
    snprintf(workers, len, "--worker_hosts=");
    for (int i = 0; i < o->num_ps + o->num_workers; i++) {
        char *list = i < o->num_ps ? ps : workers;
        bool first = i == 0 || i == o->num_ps;
        snprintf(list + strlen(list), len - strlen(list), "%s127.0.0.1:%d", first ? "" : ",", pick_port(&fds[i]));
    }
    for (int i = 0; i < o->num_ps + o->num_workers; i++)
        close(fds[i]);
}

static void start_task(const options *o, bool is_ps, int index, char *ps_hosts, char *worker_hosts)
{
    task *t = &tasks[ntasks++];
    snprintf(t->name, sizeof t->name, "%s%d", is_ps ? "ps" : "worker", index);
    t->is_ps = is_ps;
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) {
        perror("launch_cluster: pipe");
        exit(1);
    }
    char job[32], index_flag[32];
    snprintf(job, sizeof job, "--job_name=%s", is_ps ? "ps" : "worker");
    snprintf(index_flag, sizeof index_flag, "--task_index=%d", index);
    t->pid = fork();
    if (t->pid == 0) {
        setpgid(0, 0); /* its own group: stopping it stops what it started */
        dup2(pipe_fds[1], 1);
        dup2(pipe_fds[1], 2);
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        if (!getenv("POCL_DEVICES")) {
            setenv("POCL_DEVICES", "pthread", 1);
            setenv("POCL_MAX_PTHREAD_COUNT", "1", 1);
        }
        int n = 0;
        while (o->program[n])
            n++;
        char **argv = calloc((size_t)n + 5, sizeof *argv);
        memcpy(argv, o->program, (size_t)n * sizeof *argv);
        argv[n] = ps_hosts;
        argv[n + 1] = worker_hosts;
        argv[n + 2] = job;
        argv[n + 3] = index_flag;
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pipe_fds[1]);
    t->out = pipe_fds[0];
    fcntl(t->out, F_SETFL, O_NONBLOCK);
}

static void print_line(task *t)
{
    printf("%s: %.*s\n", t->name, (int)t->len, t->line);
    fflush(stdout);
    t->len = 0;
}

/* Reads what a task printed and prints its whole lines, prefixed. */
static void pump(task *t)
{
    char buf[4096];
    ssize_t n;
    while ((n = read(t->out, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n' || t->len == sizeof t->line)
                print_line(t);
            if (buf[i] != '\n')
                t->line[t->len++] = buf[i];
        }
    if (n == 0) { /* the end of its output */
        if (t->len)
            print_line(t);
        close(t->out);
        t->out = -1;
    }
}

static void pump_all(int timeout_ms)
{
    struct pollfd fds[MAX_TASKS];
    int map[MAX_TASKS], n = 0;
    for (int i = 0; i < ntasks; i++)
        if (tasks[i].out >= 0) {
            fds[n] = (struct pollfd){.fd = tasks[i].out, .events = POLLIN};
            map[n++] = i;
        }
    if (n == 0 || poll(fds, (nfds_t)n, timeout_ms) <= 0) {
        if (n == 0)
            usleep((useconds_t)timeout_ms * 1000);
        return;
    }
    for (int k = 0; k < n; k++)
        if (fds[k].revents)
            pump(&tasks[map[k]]);
}

static void reap(void)
{
    for (int i = 0; i < ntasks; i++) {
        int status;
        if (!tasks[i].exited && waitpid(tasks[i].pid, &status, WNOHANG) == tasks[i].pid) {
            tasks[i].exited = true;
            tasks[i].status = status;
        }
    }
}

static void describe_status(const task *t, char *out, size_t len)
{
    if (WIFSIGNALED(t->status))
        snprintf(out, len, "killed by signal %d", WTERMSIG(t->status));
    else
        snprintf(out, len, "exit status %d", WEXITSTATUS(t->status));
}

/* SIGTERM to every task still running (its whole group), then SIGKILL. */
static void stop_all(void)
{
    for (int sig = SIGTERM, round = 0; round < 2; round++, sig = SIGKILL) {
        for (int i = 0; i < ntasks; i++)
            if (!tasks[i].exited)
                kill(-tasks[i].pid, sig);
        for (int wait = 0; wait < 30; wait++) { /* 3 s for SIGTERM to work */
            pump_all(100);
            reap();
            bool all = true;
            for (int i = 0; i < ntasks; i++)
                all = all && tasks[i].exited;
            if (all)
                return;
        }
    }
}

/* The first task that exited with a failure, or NULL. */
static const task *failed_task(void)
{
    for (int i = 0; i < ntasks; i++)
        if (tasks[i].exited && !(WIFEXITED(tasks[i].status) && WEXITSTATUS(tasks[i].status) == 0))
            return &tasks[i];
    return NULL;
}

static bool all_exited(bool workers_only)
{
    for (int i = 0; i < ntasks; i++)
        if (!tasks[i].exited && !(workers_only && tasks[i].is_ps))
            return false;
    return true;
}

/* Names the tasks still running into out: "ps0 ps1". */
static void still_running(char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < ntasks; i++)
        if (!tasks[i].exited)
            snprintf(out + strlen(out), len - strlen(out), " %s", tasks[i].name);
}

static int give_up(const char *fmt, double seconds)
{
    char running[512];
    still_running(running, sizeof running);
    fprintf(stderr, "launch_cluster: ");
    fprintf(stderr, fmt, seconds);
    fprintf(stderr, "; still running:%s; stopping them\n", running);
    stop_all();
    return 1;
}

/* Waits for every task; 0 when all exited 0. */
static int supervise(const options *o)
{
    double start = now(), workers_done_at = 0;
    for (;;) {
        pump_all(100);
        reap();
        const task *failed = failed_task();
        if (failed) {
            char why[64];
            describe_status(failed, why, sizeof why);
            fprintf(stderr, "launch_cluster: %s failed (%s)%s\n", failed->name, why,
                    all_exited(false) ? "" : "; stopping the other tasks");
            stop_all();
            return 1;
        }
        if (all_exited(false))
            return 0;
        if (all_exited(true) && workers_done_at == 0)
            workers_done_at = now();
        if (workers_done_at && now() - workers_done_at > o->grace_s)
            return give_up("every worker finished, but a ps did not exit by itself within %g s", o->grace_s);
        if (now() - start > o->deadline_s)
            return give_up("the deadline of %g s passed", o->deadline_s);
        if (interrupted) {
            give_up("interrupted after %.0f s", now() - start);
            return 130;
        }
    }
}

int main(int argc, char **argv)
{
    options o = parse(argc, argv);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    char ps_hosts[2048], worker_hosts[2048];
    host_flags(&o, ps_hosts, worker_hosts, sizeof ps_hosts);
    printf("launch_cluster: %d ps and %d workers: %s %s\n", o.num_ps, o.num_workers, ps_hosts, worker_hosts);
    fflush(stdout);
    for (int i = 0; i < o.num_ps; i++)
        start_task(&o, true, i, ps_hosts, worker_hosts);
    for (int i = 0; i < o.num_workers; i++)
        start_task(&o, false, i, ps_hosts, worker_hosts);
    int rc = supervise(&o);
    while (!all_exited(false)) /* never leave one behind */
        stop_all();
    for (int i = 0; i < ntasks; i++)
        while (tasks[i].out >= 0)
            pump(&tasks[i]);
    if (rc == 0)
        printf("launch_cluster: every task exited 0\n");
    return rc;
}
