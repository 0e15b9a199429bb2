/* launch_cluster.c: starts a chapter 3 cluster on this machine (N ps and M
 * worker tasks, each its own process on a loopback port, or in a namespace of
 * its own on a shaped link), prints every line a task writes with the task's
 * name in front, waits for all and stops the rest when one fails. Any program
 * that takes TensorFlow's --ps_hosts, --worker_hosts, --job_name and
 * --task_index flags can be the task program. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch_output.h"
#include "launch_flags.h"
#include "launch_ports.h"
#include "launch_secret.h"
#include "launch_signals.h"

enum { MAX_TASKS = LAUNCH_MAX_TASKS, NAMES_BYTES = 1200 };

typedef struct {
    char name[24];    /* "ps0", "worker1": the prefix of its lines */
    bool is_worker;
    pid_t pid;        /* also the id of its process group */
    bool running;     /* false once reaped */
    bool group_gone;  /* its process group was seen empty (it never refills) */
    int status;       /* its wait status, once reaped */
    stream out, err;
} task;

typedef struct {
    options opt;
    task tasks[MAX_TASKS];
    int ntasks;
    double started;
    run_secret secret; /* the run's own secret file (unless --no_secret or --cluster_secret_file) */
    char secret_flag[320]; /* "--cluster_secret_file=F" for every task, or "" */
} cluster;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- processes ---- */

static void how_it_ended(int status, char *out, size_t size)
{
    if (WIFEXITED(status))
        snprintf(out, size, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, size, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(out, size, "ended with wait status %d", status);
}

static task *task_of(cluster *c, pid_t pid)
{
    for (int i = 0; i < c->ntasks; i++)
        if (c->tasks[i].pid == pid && c->tasks[i].running)
            return &c->tasks[i];
    return NULL;
}

/* Collects every task that ended and says how. */
static void reap_tasks(cluster *c)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        task *t = task_of(c, pid);
        if (!t)
            continue; /* a process a task started, orphaned to us as its subreaper */
        /* Its last lines come out before the launcher's word on how it ended. */
        read_stream(t->name, &t->out, 256);
        read_stream(t->name, &t->err, 256);
        t->running = false;
        t->status = status;
        char how[96];
        how_it_ended(status, how, sizeof how);
        say("%s %s", t->name, how);
    }
}

/* Whether anything of the task still runs: itself, or its process group. */
static bool task_alive(task *t)
{
    if (t->running)
        return true;
    if (!t->group_gone && kill(-t->pid, 0) != 0)
        t->group_gone = true;
    return !t->group_gone;
}

/* The names of the tasks still alive, comma-separated; how many. */
static int alive_names(cluster *c, char *out, size_t size)
{
    int count = 0;
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < c->ntasks; i++)
        if (task_alive(&c->tasks[i]) && at < size)
            at += (size_t)snprintf(out + at, size - at, "%s%s", count++ ? ", " : "", c->tasks[i].name);
    return count;
}

static int count_running(const cluster *c, bool workers_only)
{
    int n = 0;
    for (int i = 0; i < c->ntasks; i++)
        n += c->tasks[i].running && (c->tasks[i].is_worker || !workers_only);
    return n;
}

/* Waits up to seconds for output, an ended task or a signal; reads and reaps. */
static void pump(cluster *c, double seconds)
{
    struct pollfd fds[1 + 2 * MAX_TASKS];
    struct {
        task *t;
        stream *s;
    } from[1 + 2 * MAX_TASKS];
    int n = 0;
    fds[n++] = (struct pollfd){.fd = wake_pipe[0], .events = POLLIN};
    for (int i = 0; i < c->ntasks; i++) {
        task *t = &c->tasks[i];
        stream *streams[2] = {&t->out, &t->err};
        for (int k = 0; k < 2; k++)
            if (streams[k]->fd >= 0) {
                from[n].t = t, from[n].s = streams[k];
                fds[n++] = (struct pollfd){.fd = streams[k]->fd, .events = POLLIN};
            }
    }
    int ms = seconds <= 0 ? 0 : (int)ceil(fmin(seconds, 3600) * 1000);
    if (poll(fds, (nfds_t)n, ms) > 0) {
        char drain[64];
        if (fds[0].revents)
            while (read(wake_pipe[0], drain, sizeof drain) > 0)
                ;
        for (int i = 1; i < n; i++)
            if (fds[i].revents)
                read_stream(from[i].t->name, from[i].s, 16);
    }
    reap_tasks(c);
}

static void signal_all(cluster *c, int sig)
{
    for (int i = 0; i < c->ntasks; i++) {
        task *t = &c->tasks[i];
        if (task_alive(t))
            kill(-t->pid, sig);
        if (t->running) /* in case it left its process group */
            kill(t->pid, sig);
    }
}

/* Polls until nothing of any task is alive or the time is up. Process
 * groups have no SIGCHLD to wake us, hence the short polls. */
static bool wait_all_gone(cluster *c, double seconds)
{
    char names[NAMES_BYTES];
    double until = now() + seconds;
    while (alive_names(c, names, sizeof names) > 0) {
        if (now() >= until)
            return false;
        pump(c, fmin(until - now(), 0.05));
    }
    return true;
}

/* Stops every task still alive: SIGTERM, then SIGKILL after --stop_grace. */
static void stop_all(cluster *c)
{
    char names[NAMES_BYTES];
    if (alive_names(c, names, sizeof names) == 0)
        return;
    signal_all(c, SIGTERM);
    if (wait_all_gone(c, c->opt.stop_grace))
        return;
    alive_names(c, names, sizeof names);
    say("%s still running %g s after SIGTERM; sending SIGKILL", names, c->opt.stop_grace);
    signal_all(c, SIGKILL);
    /* Only a process stuck in the kernel outlives SIGKILL for long. */
    if (!wait_all_gone(c, 5)) {
        alive_names(c, names, sizeof names);
        say("could not stop %s, even with SIGKILL", names);
    }
}

/* ---- starting ---- */

/* In the child: its own process group (so it can be stopped with all it
 * starts, and Ctrl-C reaches only the launcher), the pipes as stdout and
 * stderr, then the task program. */
static void run_child(char **argv, int out, int err)
{
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL); /* an ignored signal stays ignored across exec */
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
        dup2(null, 0);
    dup2(out, 1);
    dup2(err, 2);
    execvp(argv[0], argv);
    dprintf(2, "launch_cluster: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Starts task t running argv; -1 when the system refuses (no fork, no pipe). */
static int start_task(task *t, char **argv)
{
    int out[2], err[2] = {-1, -1};
    if (open_pipe(out) != 0 || open_pipe(err) != 0) {
        say("cannot make a pipe for %s: %s", t->name, strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0)
        run_child(argv, out[1], err[1]);
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        say("cannot start %s: %s", t->name, strerror(errno));
        close(out[0]);
        close(err[0]);
        return -1;
    }
    setpgid(pid, pid); /* the child does it too: whichever runs first, it is done before any kill */
    t->pid = pid;
    t->running = true;
    t->group_gone = false;
    t->out.fd = out[0];
    t->out.to = 1;
    t->err.fd = err[0];
    t->err.to = 2;
    return 0;
}

/* "ps0", "ps1", ..., then "worker0", ...: the order of the ports too. */
static void name_tasks(cluster *c)
{
    c->ntasks = c->opt.ps + c->opt.workers;
    for (int i = 0; i < c->ntasks; i++) {
        task *t = &c->tasks[i];
        t->is_worker = i >= c->opt.ps;
        snprintf(t->name, sizeof t->name, "%s%d", t->is_worker ? "worker" : "ps", t->is_worker ? i - c->opt.ps : i);
        if (c->opt.mpi_ranks > 0)
            snprintf(t->name, sizeof t->name, "mpirun");
        t->out.fd = t->err.fd = -1;
        t->group_gone = true; /* until it starts: kill(-0) would signal the launcher's own group */
    }
}

/* --links: a namespace per task, or per MPI rank; 0, or the exit status. */
static int make_links(cluster *c)
{
    links *l = &c->opt.links;
    int n = c->opt.mpi_ranks > 0 ? c->opt.mpi_ranks : c->opt.ps + c->opt.workers;
    for (int i = 0; i < n; i++)
        if (c->opt.mpi_ranks > 0)
            snprintf(l->names[i], sizeof l->names[i], "rank%d", i);
        else
            snprintf(l->names[i], sizeof l->names[i], "%s%d", i < c->opt.ps ? "ps" : "worker",
                     i < c->opt.ps ? i : i - c->opt.ps);
    return links_up(l, n) == 0 ? 0 : 1;
}

/* --mpi_ranks: the one task is mpirun, its ranks each in a namespace. */
static int start_mpi_ranks(cluster *c)
{
    char ranks[16], subnet[24], enter[96];
    snprintf(ranks, sizeof ranks, "%d", c->opt.mpi_ranks);
    char **argv = links_mpirun_argv(&c->opt.links, c->opt.program, ranks, subnet, enter);
    if (!argv)
        return 1;
    say("mpirun starts %d ranks, rank I in namespace flowlab-%ld-rankI at 10.233.%d.(I+2)", c->opt.mpi_ranks,
        (long)getpid(), c->opt.links.subnet);
    int rc = start_task(&c->tasks[0], argv) == 0 ? 0 : 1;
    free(argv);
    return rc;
}

/* Each task's address and port: loopback and free ports, or with --links
 * its namespace's address and one port for all. 0, or the exit status. */
static int place_tasks(cluster *c, char (*hosts)[40], int *ports)
{
    const char *names[MAX_TASKS];
    for (int i = 0; i < c->ntasks; i++) {
        names[i] = c->tasks[i].name;
        ports[i] = LINKS_PORT;
        if (c->opt.links.on)
            links_address(&c->opt.links, i, hosts[i], 40);
        else
            snprintf(hosts[i], 40, "127.0.0.1");
    }
    return !c->opt.links.on && pick_ports(c->opt.base_port, names, c->ntasks, ports) != 0 ? 2 : 0;
}

/* Picks the addresses and starts every task, ps tasks first: PROGRAM ARGS,
 * then the four flags (after "ip netns exec NS" with --links). 0, or the
 * launcher's exit status. */
static int start_cluster(cluster *c)
{
    name_tasks(c);
    if (c->opt.mpi_ranks > 0)
        return start_mpi_ranks(c);
    int ports[MAX_TASKS];
    char hosts[MAX_TASKS][40];
    if (place_tasks(c, hosts, ports) != 0)
        return 2;
    char ps_flag[MAX_PER_JOB * 24 + 16] = "--ps_hosts=", worker_flag[MAX_PER_JOB * 24 + 16] = "--worker_hosts=";
    size_t at = strlen(ps_flag);
    host_list(hosts, ports, 0, c->opt.ps, ps_flag + at, sizeof ps_flag - at);
    at = strlen(worker_flag);
    host_list(hosts, ports, c->opt.ps, c->opt.workers, worker_flag + at, sizeof worker_flag - at);
    say("the tasks get %s %s", ps_flag, worker_flag); /* so that another program can join, or try to */
    int nprogram = 0;
    while (c->opt.program[nprogram])
        nprogram++;
    char **argv = calloc((size_t)nprogram + 10, sizeof *argv), namespace[64];
    if (!argv)
        return 1;
    char **task_argv = c->opt.links.on ? argv : argv + 4;
    argv[0] = "ip", argv[1] = "netns", argv[2] = "exec", argv[3] = namespace;
    memcpy(argv + 4, c->opt.program, (size_t)nprogram * sizeof *argv);
    argv[4 + nprogram] = ps_flag;
    argv[4 + nprogram + 1] = worker_flag;
    argv[4 + nprogram + 4] = c->secret_flag[0] ? c->secret_flag : NULL;
    int rc = 0;
    for (int i = 0; i < c->ntasks && rc == 0; i++) {
        char job[32], index[32];
        const task *t = &c->tasks[i];
        snprintf(job, sizeof job, "--job_name=%s", t->is_worker ? "worker" : "ps");
        snprintf(index, sizeof index, "--task_index=%d", t->is_worker ? i - c->opt.ps : i);
        namespace_name(i, &c->opt.links, namespace, sizeof namespace);
        argv[4 + nprogram + 2] = job;
        argv[4 + nprogram + 3] = index;
        rc = start_task(&c->tasks[i], task_argv) == 0 ? 0 : 1;
    }
    free(argv);
    return rc;
}

/* ---- waiting ---- */

static const task *first_failure(const cluster *c)
{
    for (int i = 0; i < c->ntasks; i++) {
        const task *t = &c->tasks[i];
        if (!t->running && !(WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0))
            return t;
    }
    return NULL;
}

/* The run's exit status once it is decided (what still runs is stopped
 * first), or -1 while it goes on. ps_deadline is 0 until the workers are done. */
static int judge(cluster *c, double deadline, double *ps_deadline)
{
    char names[NAMES_BYTES], how[96];
    alive_names(c, names, sizeof names);
    if (stop_signal) {
        say("got signal %d (%s); stopping %s", (int)stop_signal, strsignal(stop_signal), names);
        stop_all(c);
        return 128 + stop_signal;
    }
    const task *failed = first_failure(c);
    if (failed) {
        how_it_ended(failed->status, how, sizeof how);
        say("%s failed (it %s); stopping the other tasks: %s", failed->name, how, names[0] ? names : "none left");
        stop_all(c);
        return 1;
    }
    if (count_running(c, false) == 0) {
        say("all %d tasks exited with status 0", c->ntasks);
        return 0;
    }
    if (count_running(c, true) == 0 && *ps_deadline == 0) {
        *ps_deadline = now() + c->opt.grace;
        say("every worker exited with status 0; the ps tasks have %g s to exit", c->opt.grace);
    }
    if (*ps_deadline > 0 && now() >= *ps_deadline) {
        say("%s still running %g s after every worker finished; stopping it (a ps task should exit by "
            "itself once every worker has said goodbye)", names, c->opt.grace);
        stop_all(c);
        return 1;
    }
    if (now() >= deadline) {
        say("the deadline (%g s) passed while waiting for %s; stopping them", c->opt.deadline, names);
        stop_all(c);
        return 1;
    }
    return -1;
}

/* Waits for the tasks until judge() decides the run. */
static int supervise(cluster *c)
{
    double deadline = c->started + c->opt.deadline, ps_deadline = 0;
    reap_tasks(c);
    for (;;) {
        int verdict = judge(c, deadline, &ps_deadline);
        if (verdict >= 0)
            return verdict;
        double next = ps_deadline > 0 && ps_deadline < deadline ? ps_deadline : deadline;
        pump(c, next - now());
    }
}

/* Stops what the tasks left running, prints the rest of their output and
 * closes their pipes. */
static void finish(cluster *c)
{
    char names[NAMES_BYTES];
    if (alive_names(c, names, sizeof names) > 0) {
        say("stopping the processes that %s started and left running", names);
        stop_all(c);
    }
    double until = now() + 1;
    for (bool open = true; open && now() < until;) {
        pump(c, 0.05);
        open = false;
        for (int i = 0; i < c->ntasks; i++)
            open = open || c->tasks[i].out.fd >= 0 || c->tasks[i].err.fd >= 0;
    }
    for (int i = 0; i < c->ntasks; i++) {
        end_stream(c->tasks[i].name, &c->tasks[i].out);
        end_stream(c->tasks[i].name, &c->tasks[i].err);
    }
}

int main(int argc, char **argv)
{
    static cluster c; /* static: the line buffers are large for a stack */
    parse_flags(argc, argv, &c.opt);
    /* One single-core PoCL device per task, unless the caller chose devices. */
    if (!getenv("POCL_DEVICES")) {
        setenv("POCL_DEVICES", "pthread", 1);
        setenv("POCL_MAX_PTHREAD_COUNT", "1", 0);
    }
    if (install_signals() != 0) {
        say("cannot make a pipe: %s", strerror(errno));
        return 1;
    }
    c.started = now();
    char why[400];
    if (c.opt.make_secret && make_run_secret(&c.secret, why, sizeof why) != 0) {
        say("the run's shared secret: %s (--cluster_secret_file F gives one of yours)", why);
        return 1;
    }
    if (c.opt.make_secret)
        say("made a shared secret for this run: %s", c.secret.path);
    snprintf(c.secret_flag, sizeof c.secret_flag, "%s", c.opt.make_secret ? c.secret.flag : "");
    if (c.opt.secret_file)
        snprintf(c.secret_flag, sizeof c.secret_flag, "--cluster_secret_file=%s", c.opt.secret_file);
    int rc = c.opt.links.on ? make_links(&c) : 0;
    if (rc == 0 && (rc = start_cluster(&c)) != 0)
        stop_all(&c);
    else if (rc == 0)
        rc = supervise(&c);
    finish(&c);
    if (c.opt.links.on) {
        links_report(&c.opt.links, now() - c.started);
        links_down(&c.opt.links);
    }
    remove_run_secret(&c.secret);
    return rc;
}
