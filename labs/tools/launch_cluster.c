/* launch_cluster.c: starts a chapter 3 cluster on this machine (N ps and M
 * worker tasks, each its own process on a loopback port), prints every line a
 * task writes with the task's name in front, waits for all and stops the rest
 * when one fails. Any program that takes TensorFlow's --ps_hosts,
 * --worker_hosts, --job_name and --task_index flags can be the task program. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* A task's line is written with one write() of at most PIPE_BUF (4096)
 * bytes, so the launcher's output stays whole lines even when it is a pipe. */
enum { MAX_PER_JOB = 64, MAX_TASKS = 2 * MAX_PER_JOB, LINE_BYTES = 4000, NAMES_BYTES = 1200 };

static const char usage_text[] =
    "usage: launch_cluster --ps N --workers M [options] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Starts a cluster of tasks on this machine, as chapter 3 runs them: N ps tasks and\n"
    "M worker tasks, each its own process running\n"
    "  PROGRAM ARGS... --ps_hosts=HOSTS --worker_hosts=HOSTS --job_name=ps|worker --task_index=I\n"
    "where HOSTS lists 127.0.0.1:PORT addresses, comma-separated, the same for every task.\n"
    "Every line a task prints comes out with the task's name in front (\"ps0: \",\n"
    "\"worker1: \"): its stdout on stdout, its stderr on stderr, never cut mid-line.\n"
    "The launcher's own lines start with \"launch_cluster: \". Tasks read /dev/null.\n"
    "\n"
    "How a run ends:\n"
    "  - a task that fails (exits non-zero or is killed by a signal) is named with its\n"
    "    status, and every other task is stopped: SIGTERM, then SIGKILL after --stop_grace;\n"
    "  - once every worker has exited 0, each ps task should exit by itself (a ps exits\n"
    "    when every worker has said goodbye); a ps still running --grace seconds later\n"
    "    is stopped and reported, because a ps that never exits is a bug;\n"
    "  - past --deadline everything is stopped, naming the tasks it was waiting for;\n"
    "  - Ctrl-C (SIGINT), SIGTERM or SIGHUP to the launcher stop every task the same way.\n"
    "  A task is stopped with its whole process group, so what it started goes too.\n"
    "\n"
    "Options:\n"
    "  --ps N            how many ps tasks (0 to 64; required)\n"
    "  --workers M       how many worker tasks (1 to 64; required)\n"
    "  --base_port P     use ports P, P+1, ... (ps tasks first, then workers), each checked\n"
    "                    free; default: free ports the system picks\n"
    "  --deadline S      seconds the whole run may take (default 600)\n"
    "  --grace S         seconds the ps tasks get to exit after the last worker (default 30)\n"
    "  --stop_grace S    seconds between SIGTERM and SIGKILL when stopping tasks (default 5)\n"
    "  --help            this text\n"
    "Flags take their value as the next argument or after '=': --ps 2, --ps=2; seconds may\n"
    "be fractional. Everything from PROGRAM on (or after --) belongs to the task program.\n"
    "\n"
    "Environment: unless POCL_DEVICES is set already, each task gets POCL_DEVICES=pthread\n"
    "and POCL_MAX_PTHREAD_COUNT=1 (kept if set), so each worker has one single-core PoCL\n"
    "device of its own. A free port is free when chosen: another program could take it\n"
    "before the task binds it (the task then says so); --base_port avoids that race.\n"
    "\n"
    "Exit status: 0 only when every task exited 0; 1 when a task failed, a ps did not exit\n"
    "after the workers or the deadline passed; 2 for a bad flag or a port in use; 128+N when\n"
    "the launcher was stopped by signal N.\n"
    "\n"
    "Example: one ps and two workers of your own trainer, for at most five minutes:\n"
    "  build/labs/tools/launch_cluster --ps 1 --workers 2 --deadline 300 build/labs/03-between-graph/between_graph --train_steps 200\n";

typedef struct {
    int fd;  /* read end of the task's pipe; -1 once closed */
    int to;  /* where its lines go: 1 (stdout) or 2 (stderr) */
    size_t len;
    char line[LINE_BYTES];
} stream;

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
    int ps, workers, base_port;
    double deadline, grace, stop_grace;
    char **program; /* PROGRAM ARGS..., the NULL-terminated tail of argv */
} options;

typedef struct {
    options opt;
    task tasks[MAX_TASKS];
    int ntasks;
    double started;
} cluster;

/* SIGCHLD and the stop signals write a byte here so that poll() wakes. */
static int wake_pipe[2] = {-1, -1};
static volatile sig_atomic_t stop_signal;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Writes all of buf; a reader that went away (EPIPE) is not our problem. */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* The launcher's own line, on stderr, written at once like a task's. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char text[2048] = "launch_cluster: ";
    size_t at = strlen(text);
    va_list args;
    va_start(args, fmt);
    vsnprintf(text + at, sizeof text - at - 1, fmt, args);
    va_end(args);
    at = strlen(text);
    text[at++] = '\n';
    write_all(2, text, at);
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    char text[600];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    fprintf(stderr, "launch_cluster: %s (see --help)\n", text);
    exit(2);
}

/* ---- flags ---- */

/* "--ps" matches "--ps" and "--ps=2", not "--ps_hosts". */
static bool flag_is(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* The value of flag argv[*i], after its '=' or as the next argument. */
static const char *flag_value(int argc, char **argv, int *i, const char *name)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc)
        usage_error("%s needs a value", name);
    return argv[++*i];
}

static int parse_whole(const char *flag, const char *value, long min, long max)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (!*value || *end || errno || v < min || v > max)
        usage_error("%s: '%s' is not valid; it must be a whole number from %ld to %ld", flag, value, min, max);
    return (int)v;
}

static double parse_seconds(const char *flag, const char *value)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    if (!*value || *end || errno || !(v > 0) || v > 1e6)
        usage_error("%s: '%s' is not valid; it must be a number of seconds above 0 (at most 1e6)", flag, value);
    return v;
}

/* Takes the launcher's flag at argv[*i]; false when it is none of them. */
static bool take_flag(options *o, int argc, char **argv, int *i)
{
    static const char *const names[] = {"--ps", "--workers", "--base_port", "--deadline", "--grace", "--stop_grace"};
    int which = -1;
    for (int k = 0; k < 6 && which < 0; k++)
        if (flag_is(argv[*i], names[k]))
            which = k;
    if (which < 0)
        return false;
    const char *value = flag_value(argc, argv, i, names[which]);
    switch (which) {
    case 0: o->ps = parse_whole("--ps", value, 0, MAX_PER_JOB); break;
    case 1: o->workers = parse_whole("--workers", value, 1, MAX_PER_JOB); break;
    case 2: o->base_port = parse_whole("--base_port", value, 1, 65535); break;
    case 3: o->deadline = parse_seconds("--deadline", value); break;
    case 4: o->grace = parse_seconds("--grace", value); break;
    default: o->stop_grace = parse_seconds("--stop_grace", value); break;
    }
    return true;
}

static void parse_flags(int argc, char **argv, options *o)
{
    *o = (options){.ps = -1, .workers = -1, .deadline = 600, .grace = 30, .stop_grace = 5};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (!take_flag(o, argc, argv, &i))
            usage_error("unknown flag '%s'; the task program's own flags go after PROGRAM", argv[i]);
    }
    if (o->ps < 0)
        usage_error("--ps N is required: how many ps tasks to start");
    if (o->workers < 0)
        usage_error("--workers M is required: how many worker tasks to start");
    if (i >= argc)
        usage_error("no PROGRAM to run: name it after the flags");
    if (o->base_port > 0 && o->base_port + o->ps + o->workers - 1 > 65535)
        usage_error("--base_port %d leaves no room for %d ports", o->base_port, o->ps + o->workers);
    o->program = argv + i;
}

/* ---- ports ---- */

/* A socket bound to 127.0.0.1:port (0: any free port), or -1. SO_REUSEADDR
 * as the task's server sets it, so a port in TIME_WAIT counts as free. */
static int bind_loopback(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Ports for every task, ps tasks first: --base_port's, each checked free, or
 * the system's free ones (all held open at once, so no two are the same). */
static int pick_ports(const cluster *c, int *ports)
{
    int fds[MAX_TASKS], n = c->ntasks, rc = 0;
    for (int i = 0; i < n; i++) {
        int want = c->opt.base_port > 0 ? c->opt.base_port + i : 0;
        fds[i] = bind_loopback(want);
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        if (fds[i] < 0 || getsockname(fds[i], (struct sockaddr *)&a, &len) != 0) {
            if (want > 0)
                say("port %d (for %s) is not free: %s; choose another --base_port, or leave it out to use "
                    "free ports", want, c->tasks[i].name, strerror(errno));
            else
                say("cannot find a free loopback port for %s: %s", c->tasks[i].name, strerror(errno));
            n = i; /* close only what was opened */
            rc = -1;
            break;
        }
        ports[i] = ntohs(a.sin_port);
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return rc;
}

/* "127.0.0.1:p,127.0.0.1:q" for count ports from ports[first]. */
static void host_list(const int *ports, int first, int count, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < count && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s127.0.0.1:%d", i ? "," : "", ports[first + i]);
}

/* ---- tasks' output ---- */

/* Prints the stream's line so far with the task's name in front. */
static void emit_line(const task *t, stream *s)
{
    char text[LINE_BYTES + 32];
    int at = snprintf(text, sizeof text, "%s: ", t->name);
    memcpy(text + at, s->line, s->len);
    at += (int)s->len;
    text[at++] = '\n';
    write_all(s->to, text, (size_t)at);
    s->len = 0;
}

/* At its end a stream prints what is left of its last line. */
static void end_stream(const task *t, stream *s)
{
    if (s->len > 0)
        emit_line(t, s);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

static void take_bytes(const task *t, stream *s, const char *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (bytes[i] == '\n') {
            emit_line(t, s);
            continue;
        }
        s->line[s->len++] = bytes[i];
        if (s->len == sizeof s->line) /* a very long line goes out in pieces, each prefixed */
            emit_line(t, s);
    }
}

/* Reads what the pipe holds now (at most max_reads reads, so one chatty task
 * cannot starve the others); the pipe is non-blocking. */
static void read_stream(const task *t, stream *s, int max_reads)
{
    char chunk[4096];
    for (int i = 0; i < max_reads && s->fd >= 0; i++) {
        ssize_t n = read(s->fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            end_stream(t, s);
            return;
        }
        take_bytes(t, s, chunk, (size_t)n);
    }
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
        read_stream(t, &t->out, 256);
        read_stream(t, &t->err, 256);
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
                read_stream(from[i].t, from[i].s, 16);
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

static int open_pipe(int fds[2])
{
    if (pipe(fds) != 0)
        return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    return 0;
}

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
        t->out.fd = t->err.fd = -1;
        t->group_gone = true; /* until it starts: kill(-0) would signal the launcher's own group */
    }
}

/* Picks the ports and starts every task, ps tasks first: PROGRAM ARGS, then
 * the four flags. 0, or the launcher's exit status. */
static int start_cluster(cluster *c)
{
    name_tasks(c);
    int ports[MAX_TASKS];
    if (pick_ports(c, ports) != 0)
        return 2;
    char ps_flag[MAX_PER_JOB * 17 + 16] = "--ps_hosts=", worker_flag[MAX_PER_JOB * 17 + 16] = "--worker_hosts=";
    size_t at = strlen(ps_flag);
    host_list(ports, 0, c->opt.ps, ps_flag + at, sizeof ps_flag - at);
    at = strlen(worker_flag);
    host_list(ports, c->opt.ps, c->opt.workers, worker_flag + at, sizeof worker_flag - at);
    int nprogram = 0;
    while (c->opt.program[nprogram])
        nprogram++;
    char **argv = calloc((size_t)nprogram + 5, sizeof *argv);
    if (!argv)
        return 1;
    memcpy(argv, c->opt.program, (size_t)nprogram * sizeof *argv);
    argv[nprogram] = ps_flag;
    argv[nprogram + 1] = worker_flag;
    int rc = 0;
    for (int i = 0; i < c->ntasks && rc == 0; i++) {
        char job[32], index[32];
        const task *t = &c->tasks[i];
        snprintf(job, sizeof job, "--job_name=%s", t->is_worker ? "worker" : "ps");
        snprintf(index, sizeof index, "--task_index=%d", t->is_worker ? i - c->opt.ps : i);
        argv[nprogram + 2] = job;
        argv[nprogram + 3] = index;
        rc = start_task(&c->tasks[i], argv) == 0 ? 0 : 1;
    }
    free(argv);
    return rc;
}

/* ---- waiting ---- */

static void on_signal(int sig)
{
    int saved = errno;
    if (sig != SIGCHLD)
        stop_signal = sig;
    ssize_t n = write(wake_pipe[1], "x", 1);
    (void)n; /* a full pipe already wakes poll() */
    errno = saved;
}

static int install_signals(void)
{
    if (open_pipe(wake_pipe) != 0)
        return -1;
    fcntl(wake_pipe[1], F_SETFL, fcntl(wake_pipe[1], F_GETFL) | O_NONBLOCK);
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++)
        sigaction(stops[i], &sa, NULL);
    sa.sa_flags |= SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout must not kill the launcher before it stops the tasks */
#ifdef PR_SET_CHILD_SUBREAPER
    /* What a task leaves behind becomes our child, so it is reaped here and
     * an empty process group really means nothing of the task is left. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    return 0;
}

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
        end_stream(&c->tasks[i], &c->tasks[i].out);
        end_stream(&c->tasks[i], &c->tasks[i].err);
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
    int rc = start_cluster(&c);
    if (rc != 0)
        stop_all(&c);
    else
        rc = supervise(&c);
    finish(&c);
    return rc;
}
