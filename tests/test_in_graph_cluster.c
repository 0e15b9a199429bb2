/* test_in_graph_cluster.c: in-graph replication across tasks, end to end.
 * One ps and two worker flowlab_servers started with TensorFlow's flags on
 * loopback; chapter 2's lab in cluster mode trains against them to a falling
 * loss and every server exits by itself; its losses equal the single-process
 * two-tower run's; a graph grown between runs is registered again; a worker
 * stopped for a step fails it within about one task deadline, naming it,
 * with DEADLINE_EXCEEDED, and fl_cluster_reconnect recovers; a worker killed
 * mid-step fails the client's run within its deadline, naming the task,
 * with UNAVAILABLE, while the other servers keep serving; a client killed
 * mid-run leaves servers a new client trains against. Every wait has a
 * deadline and says what it waited for; every process started here is
 * killed by its pid. */
#include <fcntl.h>
#include <pthread.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "lab_runner.h"
#include "stop_process.h"
#include "task_servers.h"

static char server[600];
/* Both runs feed the same batches in the same order from the same seed and
 * run the same kernels (PoCL's /gpu:0 for the towers, the host's /cpu:0 for
 * the update); only where the towers' values are added may differ, so the
 * printed losses (6 decimals) agree to a relative 1e-4, as chapter 2's
 * one-tower and two-tower runs do (test_lab02). */
#define SAME_LOSS_TOLERANCE 1e-4
#define LAB_FLAGS "--train_steps 8 --batch_size 64 --max_examples 256 --log_every 2 --seed 3"

static bool loss_falls(const run_result *r)
{
    return r->nsteps >= 3 && r->loss[r->nsteps - 1] < r->loss[0];
}

/* The lab in cluster mode against c (with run_lab's deadline). */
static run_result run_cluster_lab(const task_servers *c)
{
    char args[600];
    snprintf(args, sizeof args, "--ps_hosts=%s --worker_hosts=%s " LAB_FLAGS, c->ps_hosts, c->worker_hosts);
    return run_lab(args);
}

static void check_servers_exit(task_servers *c, const char *what)
{
    for (int t = 0; t <= c->num_workers; t++) {
        bool exited = task_server_exits(c, t, 60);
        ok(exited && c->status[t] == 0, "%s: %s exits by itself, status 0 (waited up to 60 s; status %d)", what,
           c->log[t], c->status[t]);
        if (!exited || c->status[t] != 0) {
            char *log = read_file(c->log[t]);
            diag("its log: %s", log ? log : "(none)");
            free(log);
        }
    }
    stop_task_servers(c);
}

/* Done when: servers by hand, the lab drives them, they exit by themselves;
 * then the same run in one process gives the same losses. */
static void test_trains_and_matches(int naccelerators)
{
    task_servers c;
    if (!ok(start_task_servers(&c, server, tmp_dir, 2), "one ps and two workers start")) {
        stop_task_servers(&c);
        return;
    }
    run_result cluster = run_cluster_lab(&c);
    ok(cluster.status == 0 && loss_falls(&cluster), "cluster mode trains to a falling loss (exit %d, %d steps, "
       "%.4f -> %.4f)", cluster.status, cluster.nsteps, cluster.nsteps ? cluster.loss[0] : 0,
       cluster.nsteps ? cluster.loss[cluster.nsteps - 1] : 0);
    if (cluster.status != 0)
        diag("%s", cluster.out ? cluster.out : "");
    contains(cluster.out, "/job:worker/task:1/", "tower 1 is placed on worker 1");
    check_servers_exit(&c, "after the client's goodbye");
    if (naccelerators != 2) {
        printf("ok %d # SKIP the single-process run needs two accelerators (PoCL's two devices); found %d\n",
               ++tap_count, naccelerators);
        free(cluster.out);
        return;
    }
    run_result local = run_lab("--num_gpus 2 " LAB_FLAGS);
    bool same = local.status == 0 && local.nsteps == cluster.nsteps && local.nsteps > 0;
    for (int i = 0; same && i < local.nsteps; i++)
        same = fabs(local.loss[i] - cluster.loss[i]) <= SAME_LOSS_TOLERANCE * fabs(local.loss[i]);
    ok(same, "the cluster's losses equal the single-process two-tower run's (relative %g)", SAME_LOSS_TOLERANCE);
    for (int i = 0; !same && i < local.nsteps && i < cluster.nsteps; i++)
        diag("one process: %s | cluster: %s", local.line[i], cluster.line[i]);
    free(local.out);
    free(cluster.out);
}

/* ---- a worker killed mid-step, seen by a client in this process ---- */

typedef struct {
    fl_graph *g;
    fl_node *x[2], *y[2], *loss[2], *train, *global_step;
    fl_node *fetches[3]; /* a step's: both losses and the global step */
} small_model;

/* Two towers of a dense layer; the variable, averaging, update and global
 * step on the ps. */
static small_model build_small(void)
{
    small_model m = {.g = fl_graph_new()};
    fl_device_scope_push(m.g, "/job:ps/task:0/cpu:0");
    fl_node *w = fl_get_variable(m.g, "w", fl_shape_make(2, 64, 8), fl_constant_initializer(0.1f));
    fl_device_pop(m.g);
    fl_node *grads[2];
    for (int i = 0; i < 2; i++) {
        char device[64];
        snprintf(device, sizeof device, "/job:worker/task:%d/cpu:0", i);
        fl_device_scope_push(m.g, device);
        m.x[i] = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, 16, 64), NULL);
        fl_node *y = m.y[i] = fl_matmul(m.g, m.x[i], w, false, false, NULL);
        m.loss[i] = fl_reduce_mean(m.g, fl_mul(m.g, y, y, NULL), NULL, 0, false, NULL);
        fl_gradients(m.g, m.loss[i], &w, 1, &grads[i]);
        fl_device_pop(m.g);
    }
    fl_device_scope_push(m.g, "/job:ps/task:0/cpu:0");
    fl_grad_var pair = {fl_mul(m.g, fl_add_n(m.g, grads, 2, NULL), fl_scalar(m.g, 0.5f, NULL), NULL), w};
    fl_optimizer *opt = fl_gradient_descent_optimizer(0.01f);
    m.global_step = fl_get_or_create_global_step(m.g);
    m.train = fl_apply_gradients(opt, m.g, &pair, 1, m.global_step, "train");
    fl_optimizer_free(opt);
    fl_device_pop(m.g);
    m.fetches[0] = m.loss[0], m.fetches[1] = m.loss[1], m.fetches[2] = m.global_step;
    return m;
}

/* What this process writes to stderr goes to path until restore_stderr. */
static int capture_stderr(const char *path)
{
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        dup2(fd, 2);
        close(fd);
    }
    return saved;
}

static void restore_stderr(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One training step of the small model, on a thread of its own. */
typedef struct {
    fl_session *s;
    const small_model *m;
    fl_feed feeds[2];
    int rc;
    fl_error_code code;
    char error[512];
    double seconds;
} step_call;

static void *run_step(void *arg)
{
    step_call *c = arg;
    fl_tensor *losses[3] = {NULL, NULL, NULL};
    double start = seconds_now();
    c->rc = fl_session_run(c->s, c->feeds, 2, c->m->fetches, 3, losses, &c->m->train, 1);
    c->seconds = seconds_now() - start;
    c->code = fl_session_error_code(c->s);
    snprintf(c->error, sizeof c->error, "%s", c->rc ? fl_session_error(c->s) : "");
    for (int i = 0; i < 3; i++)
        fl_tensor_free(losses[i]);
    return NULL;
}

/* Worker 1 is stopped once the step is under way (the ps and worker 0 wait
 * for its values), then killed: the run must fail, naming it. */
static void kill_worker_mid_step(task_servers *c, step_call *call)
{
    if (!stop_process(c->pid[2]))
        diag("worker 1 (pid %d) did not stop within 5 s of SIGSTOP", (int)c->pid[2]);
    pthread_t thread;
    pthread_create(&thread, NULL, run_step, call);
    usleep(500000);
    kill(c->pid[2], SIGKILL);
    waitpid(c->pid[2], NULL, 0);
    c->status[2] = 137;
    pthread_join(thread, NULL);
}

/* Worker 1 is paused once the step is under way: within seconds the client
 * says whom it waits for, and once the worker goes on the step ends well. */
static void pause_worker_mid_step(task_servers *c, step_call *call, const char *log)
{
    if (!stop_process(c->pid[2]))
        diag("worker 1 (pid %d) did not stop within 5 s of SIGSTOP", (int)c->pid[2]);
    int saved_stderr = capture_stderr(log);
    pthread_t thread;
    pthread_create(&thread, NULL, run_step, call);
    bool said = wait_for_text(log, "waiting for its reply from", 20);
    kill(c->pid[2], SIGCONT);
    pthread_join(thread, NULL);
    restore_stderr(saved_stderr);
    char *text = read_file(log);
    const char *line = text ? strstr(text, "client: run ") : NULL;
    ok(said && line && strstr(line, "/job:worker/task:1"),
       "worker 1 paused mid-step: within 20 s the client says it waits for its reply, naming the task: %.*s",
       line ? (int)strcspn(line, "\n") : 9, line ? line : "(nothing)");
    if (!ok(call->rc == 0, "and the step ends well once worker 1 goes on"))
        diag("%s", call->error);
    free(text);
}

/* The client's task deadline for one step; the servers keep theirs (30 s),
 * so only the client's can end it. */
#define SHORT_DEADLINE_S 3

/* Worker 1 stopped for a whole step, connected but silent: the step fails
 * within about one deadline (not one per task waited for in turn), with
 * DEADLINE_EXCEEDED naming it; its connection is closed, the others are
 * kept, so once it goes on fl_cluster_reconnect makes one connection anew
 * and a step runs on the three tasks again. */
static void stop_worker_for_a_step(task_servers *c, const fl_cluster *cluster, step_call *call)
{
    char deadline[16];
    snprintf(deadline, sizeof deadline, "%d", SHORT_DEADLINE_S);
    setenv("FLOWLAB_TASK_DEADLINE", deadline, 1);
    if (!stop_process(c->pid[2]))
        diag("worker 1 (pid %d) did not stop within 5 s of SIGSTOP", (int)c->pid[2]);
    run_step(call);
    kill(c->pid[2], SIGCONT);
    setenv("FLOWLAB_TASK_DEADLINE", "30", 1);
    char named[80];
    snprintf(named, sizeof named, "on /job:worker/task:1: no reply within %d s", SHORT_DEADLINE_S);
    ok(call->rc == -1 && call->code == FL_DEADLINE_EXCEEDED && strstr(call->error, named),
       "worker 1 stopped for a step: it fails with DEADLINE_EXCEEDED naming it alone (code %d): %s", call->code,
       call->error);
    ok(call->seconds >= 0.95 * SHORT_DEADLINE_S && call->seconds < 2 * SHORT_DEADLINE_S + 1,
       "after the deadline, within twice FLOWLAB_TASK_DEADLINE=%d and a second (%.1f s)", SHORT_DEADLINE_S,
       call->seconds);
    int made = fl_cluster_reconnect(cluster);
    ok(made == 1, "only worker 1's connection was closed: once it goes on, fl_cluster_reconnect makes one (%d): %s",
       made, made < 0 ? fl_last_error() : "");
    run_step(call);
    if (!ok(call->rc == 0, "and a step runs on the three tasks again"))
        diag("%s", call->error);
}

/* Placement as the client sees it: no device before a run needed the node,
 * then the task's ("/job:worker/task:1/cpu:0"), and log_device_placement's
 * lines, in the single-process format, in what the first runs printed. */
static void check_placement(fl_session *s, const small_model *m, const char *log_path)
{
    const char *y1 = fl_session_node_device(s, m->y[1]), *w = fl_session_node_device(s, fl_graph_find(m->g, "w"));
    ok(y1 && strcmp(y1, "/job:worker/task:1/cpu:0") == 0, "tower 1's MatMul reports worker 1's device (%s)",
       y1 ? y1 : "NULL");
    ok(w && strcmp(w, "/job:ps/task:0/cpu:0") == 0, "w reports the ps's device (%s)", w ? w : "NULL");
    char *log = read_file(log_path), want[200];
    snprintf(want, sizeof want, "%s: (MatMul): /job:worker/task:1/cpu:0\n", fl_node_name(m->y[1]));
    ok(log && strstr(log, want), "log_device_placement printed \"%.*s\"", (int)strlen(want) - 1, want);
    ok(log && strstr(log, "w: (VariableV2): /job:ps/task:0/cpu:0\n"), "and w's line, on the ps");
    if (!log || !strstr(log, want))
        diag("what the runs printed: %s", log ? log : "(nothing)");
    free(log);
}

static void test_worker_killed_mid_step(void)
{
    task_servers c;
    fl_cluster *cluster = NULL;
    if (!ok(start_task_servers(&c, server, tmp_dir, 2), "a second cluster starts") ||
        !(cluster = fl_cluster_client_from_flags(c.ps_hosts, c.worker_hosts))) {
        stop_task_servers(&c);
        return;
    }
    small_model m = build_small();
    fl_node *init = fl_global_variables_initializer(m.g);
    fl_session_options options = {.cluster = cluster, .log_device_placement = true};
    fl_session *s = fl_session_new(m.g, &options);
    char placement_log[400];
    snprintf(placement_log, sizeof placement_log, "%s/placement.log", tmp_dir);
    int saved_stderr = capture_stderr(placement_log);
    int init_rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    const char *before = fl_session_node_device(s, m.y[1]);
    fl_tensor *x = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, 16, 64));
    for (int i = 0; i < 16 * 64; i++)
        ((float *)x->data)[i] = 0.01f * (float)(i % 7);
    step_call call = {.s = s, .m = &m, .feeds = {{m.x[0], x}, {m.x[1], x}}};
    run_step(&call);
    restore_stderr(saved_stderr);
    if (!ok(init_rc == 0, "the client initializes w on the ps"))
        diag("%s", fl_session_error(s));
    ok(before == NULL, "a node no run has needed yet has no device (%s)", before ? before : "NULL");
    if (!ok(call.rc == 0, "a step runs on the three tasks"))
        diag("%s", call.error);
    check_placement(s, &m, placement_log);
    fl_node *w = fl_graph_find(m.g, "w");
    fl_tensor *trained = NULL, *kept = NULL;
    fl_session_run(s, NULL, 0, &w, 1, &trained, NULL, 0);
    fl_device_scope_push(m.g, "/job:worker/task:0/cpu:0");
    fl_node *doubled = fl_mul(m.g, m.loss[0], fl_scalar(m.g, 2.0f, NULL), "doubled");
    fl_device_pop(m.g);
    fl_tensor *value = NULL;
    int grown = fl_session_run(s, call.feeds, 1, &doubled, 1, &value, NULL, 0);
    ok(grown == 0 && value, "a node added after the first runs: the graph is cut and registered again");
    fl_tensor_free(value);
    fl_session_run(s, NULL, 0, &w, 1, &kept, NULL, 0);
    ok(trained && kept && ((float *)trained->data)[0] != 0.1f &&
       memcmp(trained->data, kept->data, 64 * 8 * sizeof(float)) == 0,
       "and w keeps its trained value across the new registration");
    fl_tensor_free(trained);
    fl_tensor_free(kept);
    run_step(&call); /* registers the new cut on worker 1 too, so the kill below is mid-step */
    if (!ok(call.rc == 0, "and the training step runs on the new cut"))
        diag("%s", call.error);
    char paused_log[400];
    snprintf(paused_log, sizeof paused_log, "%s/paused.log", tmp_dir);
    pause_worker_mid_step(&c, &call, paused_log);
    stop_worker_for_a_step(&c, cluster, &call);
    kill_worker_mid_step(&c, &call);
    ok(call.rc == -1 && call.code == FL_UNAVAILABLE && strstr(call.error, "/job:worker/task:1"),
       "worker 1 killed mid-step: the run fails with UNAVAILABLE naming it (code %d): %s", call.code, call.error);
    /* Runs so far: init, a step, w, the grown graph, w, a step, the paused step, the stopped one (which
     * updated nothing), a step; this is the 10th. The global step was last fetched by the 9th: 3 or 4, as
     * its read and its increment have no order within a run. */
    ok(strncmp(call.error, "run 10 of this session (global step ", 36) == 0 &&
       (strncmp(call.error + 36, "3 when", 6) == 0 || strncmp(call.error + 36, "4 when", 6) == 0),
       "the failed step is named as the user counts: run 10, the global step last fetched, no internal id");
    ok(call.seconds < 30, "within the task deadline, FLOWLAB_TASK_DEADLINE=30 (%.1f s)", call.seconds);
    fl_tensor *loss = NULL;
    int rc = fl_session_run(s, call.feeds, 1, &m.loss[0], 1, &loss, NULL, 0);
    if (!ok(rc == 0 && loss, "the ps and worker 0 keep serving: tower 0's loss runs after the failed step"))
        diag("%s", fl_session_error(s));
    fl_tensor_free(loss);
    fl_device_scope_push(m.g, "/job:worker/task:5/cpu:0");
    fl_node *nowhere = fl_scalar(m.g, 1.0f, "nowhere");
    fl_device_pop(m.g);
    fl_tensor *never = NULL;
    rc = fl_session_run(s, NULL, 0, &nowhere, 1, &never, NULL, 0);
    ok(rc == -1 && !never && fl_session_error_code(s) == FL_INVALID_ARGUMENT && strstr(fl_session_error(s), "nowhere"),
       "a node on a task the cluster lacks is refused at once, named: %s", fl_session_error(s));
    fl_tensor_free(x);
    fl_session_free(s);
    fl_cluster_free(cluster);
    fl_graph_free(m.g);
    for (int t = 0; t < 2; t++) {
        bool exited = task_server_exits(&c, t, 60);
        ok(exited && c.status[t] == 0, "%s exits by itself after the goodbye (waited up to 60 s; status %d)",
           c.log[t], c.status[t]);
    }
    stop_task_servers(&c);
}

/* ---- a client killed mid-run ---- */

static pid_t start_lab_client(const task_servers *c, const char *log)
{
    char ps[80], workers[180];
    snprintf(ps, sizeof ps, "--ps_hosts=%s", c->ps_hosts);
    snprintf(workers, sizeof workers, "--worker_hosts=%s", c->worker_hosts);
    char *argv[] = {lab, ps, workers, "--train_steps", "100000", "--batch_size", "64", "--max_examples", "256",
                    "--log_every", "1", NULL};
    return spawn_logged(log, argv);
}

static void test_client_killed_mid_run(void)
{
    task_servers c;
    if (!ok(start_task_servers(&c, server, tmp_dir, 2), "a third cluster starts")) {
        stop_task_servers(&c);
        return;
    }
    char log[400];
    snprintf(log, sizeof log, "%s/killed_client.log", tmp_dir);
    pid_t client = start_lab_client(&c, log);
    bool training = wait_for_text(log, "Step 2 with loss", 120);
    ok(training, "the first client trains (waited up to 120 s for its \"Step 2 with loss\" line)");
    kill(client, SIGKILL);
    waitpid(client, NULL, 0);
    run_result r = run_cluster_lab(&c);
    ok(r.status == 0 && loss_falls(&r), "after the first client was killed mid-run, a new client registers and "
       "trains to a falling loss (exit %d, %d steps)", r.status, r.nsteps);
    if (r.status != 0)
        diag("%s", r.out ? r.out : "");
    free(r.out);
    check_servers_exit(&c, "after the second client's goodbye");
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_in_graph_cluster", "labs/02-in-graph-towers/in_graph_towers");
    snprintf(server, sizeof server, "%s/labs/tools/flowlab_server", build_dir);
    if (access(server, X_OK) != 0)
        skip_all("flowlab_server is not built; `make tests` builds it");
    setenv("POCL_DEVICES", "pthread pthread", 1);
    setenv("POCL_MAX_PTHREAD_COUNT", "1", 1);
    setenv("FLOWLAB_TASK_DEADLINE", "30", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1); /* ThreadSanitizer cannot see OpenBLAS's own threads sync */
    fl_device_info devices[16];
    int naccelerators = fl_list_devices(devices, 16) - 1;
    /* Under ThreadSanitizer the threads to check are the master's, in this
     * process; training the CNN through three instrumented processes would
     * take minutes of CI for no more of them. */
    bool tsan = strstr(build_dir, "tsan") != NULL;
    if (tsan)
        skip("the lab's training runs (cluster mode, equivalence, a killed client)", "ThreadSanitizer build: "
             "the master's threads are checked by the in-process fault test");
    else
        test_trains_and_matches(naccelerators);
    test_worker_killed_mid_step();
    if (!tsan)
        test_client_killed_mid_run();
    lab_runner_finish();
    return done_testing();
}
