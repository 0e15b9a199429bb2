/* test_ps_load.c: eight asynchronous workers against one ps, each a process
 * of its own training a small model on /cpu:0 for a few seconds through the
 * public API. No update may be lost (the global step equals the sum of the
 * workers' steps), and the ps's resident memory stays flat after warm-up. */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "loopback.h"

#define WORKERS 8
#define TRAIN_SECONDS 4.0
#define WARM_STEPS 50 /* each worker's, before the ps's memory is read */
#define FLAT_BYTES (1 << 20) /* "flat": at most 1 MiB more resident after warm-up */

static char ps_hosts[64], worker_hosts[512];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the children: they alone call flowlab (forked before any use) ---- */

static int run_ps(void)
{
    fl_cluster *cluster = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    fl_server_options o = {.log = stderr};
    fl_server *server = cluster ? fl_server_start(cluster, &o) : NULL;
    if (!server) {
        fprintf(stderr, "ps: %s\n", fl_last_error());
        return 1;
    }
    int rc = fl_server_join(server, 120);
    fl_server_stop(server);
    fl_cluster_free(cluster);
    return rc == 0 ? 0 : 1;
}

static bool say(int fd, const char *fmt, long value)
{
    char line[64];
    int n = snprintf(line, sizeof line, fmt, value);
    return write(fd, line, (size_t)n) == n;
}

/* Reports "ready", trains y = x w for WARM_STEPS and reports "warm", then
 * for TRAIN_SECONDS more and reports its step count; waits for the parent's
 * go; worker 0 then reports the global step. */
static int train(fl_monitored_session *ms, fl_node *const *xy, fl_node *train_op, fl_node *step, int out, int go,
                 int index)
{
    const float xs[32] = {1, 2, 3, 4, 0, 1, 0, 1, 2, 2, 1, 0, 3, 0, 1, 1, 1, 1, 1, 1, 0, 0, 2, 1, 4, 3, 2, 1, 0, 2, 0, 2};
    const float ys[8] = {3, 1, 2, 1, 2, 1, 1, 2};
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(2, 8, 4), xs), *y = fl_tensor_from_floats(fl_shape_make(2, 8, 1), ys);
    fl_feed feeds[2] = {{xy[0], x}, {xy[1], y}};
    long steps = 0;
    say(out, "ready\n", 0);
    for (double end = 0; steps < WARM_STEPS || now_s() < end; steps++) {
        if (fl_monitored_session_run(ms, feeds, 2, NULL, 0, NULL, &train_op, 1) != 0)
            return fprintf(stderr, "worker %d: %s\n", index, fl_monitored_session_error(ms)), 1;
        if (steps + 1 == WARM_STEPS) {
            say(out, "warm\n", 0);
            end = now_s() + TRAIN_SECONDS;
        }
    }
    say(out, "steps %ld\n", steps);
    char byte;
    struct pollfd p = {.fd = go, .events = POLLIN};
    if (poll(&p, 1, 60000) != 1 || read(go, &byte, 1) != 1)
        return 1;
    fl_tensor *value = NULL;
    if (index == 0 && fl_session_run(fl_monitored_session_session(ms), NULL, 0, &step, 1, &value, NULL, 0) == 0)
        say(out, "global %ld\n", (long)fl_tensor_scalar(value));
    fl_tensor_free(value);
    fl_tensor_free(x);
    fl_tensor_free(y);
    return 0;
}

static int run_worker(int index, int out, int go)
{
    fl_cluster *cluster = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", index);
    fl_replica_device_setter *setter = cluster ? fl_replica_device_setter_new(cluster, "/cpu:0", FL_PS_ROUND_ROBIN) : NULL;
    if (!setter)
        return fprintf(stderr, "worker %d: %s\n", index, fl_last_error()), 1;
    fl_graph *g = fl_graph_new();
    fl_replica_device_setter_push(g, setter);
    fl_node *xy[2] = {fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 8, 4), "x"),
                      fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 8, 1), "y")};
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, 4, 1), fl_zeros_initializer());
    fl_node *step = fl_get_or_create_global_step(g);
    fl_node *err = fl_sub(g, fl_matmul(g, xy[0], w, false, false, NULL), xy[1], NULL);
    fl_node *loss = fl_reduce_mean(g, fl_mul(g, err, err, NULL), NULL, 0, false, "loss");
    fl_optimizer *sgd = fl_gradient_descent_optimizer(0.01f);
    fl_node *train_op = fl_minimize(sgd, g, loss, step, NULL);
    fl_session_options config = {.cluster = cluster};
    fl_monitored_session_options o = {.log_step_count_steps = -1, .config = &config, .log = stderr};
    fl_monitored_session *ms = fl_monitored_training_session(g, step, &o);
    int rc = ms ? train(ms, xy, train_op, step, out, go, index) : 1;
    if (!ms) {
        fprintf(stderr, "worker %d: %s\n", index, fl_last_error());
        fl_cluster_say_goodbye(cluster); /* closing a monitored session would have said it */
    }
    fl_monitored_session_close(ms);
    fl_optimizer_free(sgd);
    fl_graph_free(g);
    fl_replica_device_setter_free(setter);
    fl_cluster_free(cluster);
    return rc;
}

/* ---- the parent: starts them, reads what they report, checks ---- */

typedef struct {
    pid_t pid;
    int out, go; /* the child's reports; the parent's go-ahead */
} child;

static pid_t start_child(int index, child *c)
{
    int out[2], go[2];
    if (pipe(out) != 0 || pipe(go) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(out[0]);
        close(go[1]);
        _exit(index < 0 ? run_ps() : run_worker(index, out[1], go[0]));
    }
    close(out[1]);
    close(go[0]);
    *c = (child){pid, out[0], go[1]};
    return pid;
}

/* One line from fd before the deadline (without its newline), or false. */
static bool read_line(int fd, char *line, size_t size, double deadline)
{
    size_t n = 0;
    while (n + 1 < size) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int wait_ms = (int)((deadline - now_s()) * 1000);
        if (wait_ms <= 0 || poll(&p, 1, wait_ms) != 1 || read(fd, line + n, 1) != 1)
            return false;
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    return true;
}

static long resident_bytes(pid_t pid)
{
    char path[64];
    long pages = -1, resident = -1;
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = -1;
    if (f)
        fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* The child's exit status within seconds, or -1 after killing it. */
static int reap(pid_t pid, double seconds)
{
    double deadline = now_s() + seconds;
    int status;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_s() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(50000);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Every worker's next line, which must start with prefix ("steps "); the
 * number after it into values. False (and a diag naming the worker and
 * what was awaited) at the deadline or on another line. */
static bool read_all(child *workers, const char *prefix, long *values, double seconds)
{
    double deadline = now_s() + seconds;
    for (int i = 0; i < WORKERS; i++) {
        char line[64];
        if (!read_line(workers[i].out, line, sizeof line, deadline) || strncmp(line, prefix, strlen(prefix)) != 0) {
            diag("worker %d did not report '%s' within %.0f s", i, prefix, seconds);
            return false;
        }
        values[i] = atol(line + strlen(prefix));
    }
    return true;
}

static void go_ahead(child *c)
{
    if (write(c->go, "g", 1) != 1)
        diag("could not tell pid %d to go on", (int)c->pid);
}

static void check_load(child *ps, child *workers)
{
    long ready[WORKERS], steps[WORKERS], global = -1, sum = 0;
    ok(read_all(workers, "ready", ready, 90), "%d workers and a ps start, and the model is ready", WORKERS);
    long warm_steps[WORKERS];
    bool warmed = read_all(workers, "warm", warm_steps, 90); /* every connection made, every buffer grown */
    long warm = warmed ? resident_bytes(ps->pid) : -1;
    bool reported = read_all(workers, "steps ", steps, 60);
    long end = resident_bytes(ps->pid);
    ok(reported, "each worker trained for %.0f s and reported its steps", TRAIN_SECONDS);
    for (int i = 0; i < WORKERS; i++)
        sum += reported ? steps[i] : 0;
    go_ahead(&workers[0]);
    char line[64];
    if (read_line(workers[0].out, line, sizeof line, now_s() + 30))
        sscanf(line, "global %ld", &global);
    ok(reported && global == sum && sum > 0, "no update lost: the global step (%ld) is the sum of the workers' steps (%ld)",
       global, sum);
    diag("ps resident memory: %.1f MB after warm-up, %.1f MB after %ld steps", warm / 1e6, end / 1e6, sum);
#if defined(__SANITIZE_THREAD__)
    /* Under ThreadSanitizer the ps's memory grows by about 2.7 kB a step
     * since each worker runs its own piece there, while the plain and ASan
     * builds of this test stay flat to 0.1 MB over 10,000 steps: what grows
     * is the sanitizer's own bookkeeping, and those two builds check ours. */
    skip("the ps's memory is flat after warm-up", "under ThreadSanitizer its own memory grows; the plain and ASan runs check this");
#else
    ok(warm > 0 && end - warm <= FLAT_BYTES, "the ps's memory is flat after warm-up (%+ld bytes, at most %d)",
       end - warm, FLAT_BYTES);
#endif
}

/* AddressSanitizer holds freed memory in a quarantine (256 MB by default),
 * which would read as growth: under it, this test runs itself again with
 * the quarantine off, so that "flat" still means no memory kept. */
static void without_asan_quarantine(char **argv)
{
#if defined(__SANITIZE_ADDRESS__)
    const char *options = getenv("ASAN_OPTIONS");
    if (options && strstr(options, "quarantine_size_mb=0"))
        return;
    char value[512];
    snprintf(value, sizeof value, "%s%squarantine_size_mb=0", options ? options : "", options ? ":" : "");
    setenv("ASAN_OPTIONS", value, 1);
    execv("/proc/self/exe", argv);
#else
    (void)argv;
#endif
}

int main(int argc, char **argv)
{
    (void)argc;
    without_asan_quarantine(argv);
    int port = loopback_free_ports(1 + WORKERS);
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", port);
    for (int i = 0, used = 0; i < WORKERS; i++)
        used += snprintf(worker_hosts + used, sizeof worker_hosts - (size_t)used, "%s127.0.0.1:%d", i ? "," : "",
                         port + 1 + i);
    setenv("FLOWLAB_TASK_DEADLINE", "60", 1);
    child ps, workers[WORKERS];
    start_child(-1, &ps);
    for (int i = 0; i < WORKERS; i++)
        start_child(i, &workers[i]);
    check_load(&ps, workers);
    int failed = 0;
    for (int i = 1; i < WORKERS; i++)
        go_ahead(&workers[i]);
    for (int i = 0; i < WORKERS; i++)
        failed += reap(workers[i].pid, 30) != 0;
    ok(failed == 0, "every worker exits 0 (%d did not)", failed);
    ok(reap(ps.pid, 30) == 0, "the ps exits by itself, cleanly, once all %d have said goodbye", WORKERS);
    return done_testing();
}
