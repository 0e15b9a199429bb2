/* test_cluster_trace.c: --trace in cluster mode (issue 36, item 4). An
 * in-graph step across a ps and two worker flowlab_servers, traced by a
 * client in this process: the trace has lanes of both workers' devices
 * and of the ps, each task event starting at or after 0 and lying within
 * its task's request from the client; chapter 2's lab in cluster mode
 * writes such a trace with --trace; a between-graph worker's trace has a
 * lane for the ps task, with the updates its piece ran there; a warm step's
 * host blocks on the client are counted. Processes are started on free loopback ports, waited
 * for with deadlines and killed by pid. */
#include "alloc_count.h"

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "lab_runner.h"
#include "task_servers.h"
#include "../labs/tools/trace_events.h"

static char server[600];

/* The printed times have 3 decimals: a task event may pass its request's
 * span by that rounding. */
#define ROUNDING_US 0.002

/* x0 @ w on worker 0, x1 @ w on worker 1, w and the loss's sum on the ps. */
typedef struct {
    fl_graph *g;
    fl_node *x[2], *loss, *init;
} two_task_model;

static two_task_model build_model(void)
{
    two_task_model m = {.g = fl_graph_new()};
    fl_device_scope_push(m.g, "/job:ps/task:0/cpu:0");
    fl_node *w = fl_get_variable(m.g, "w", fl_shape_make(2, 8, 4), fl_constant_initializer(0.5f));
    fl_device_pop(m.g);
    fl_node *sums[2];
    for (int i = 0; i < 2; i++) {
        char device[64], name[32];
        snprintf(device, sizeof device, "/job:worker/task:%d/cpu:0", i);
        snprintf(name, sizeof name, "tower_%d/MatMul", i);
        fl_device_scope_push(m.g, device);
        m.x[i] = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, 4, 8), NULL);
        sums[i] = fl_reduce_sum(m.g, fl_matmul(m.g, m.x[i], w, false, false, name), NULL, 0, false, NULL);
        fl_device_pop(m.g);
    }
    fl_device_scope_push(m.g, "/job:ps/task:0/cpu:0");
    m.loss = fl_add(m.g, sums[0], sums[1], "loss");
    fl_device_pop(m.g);
    m.init = fl_global_variables_initializer(m.g);
    return m;
}

/* The lane a task's request is on ("client to /job:worker/task:1") for the
 * task of a device lane ("/job:worker/task:1/cpu:0"); -1 when none. */
static int request_lane(const trace_events *t, const char *device_lane)
{
    const char *after_task = strchr(strstr(device_lane, "/task:") ? strstr(device_lane, "/task:") + 1 : "", '/');
    int task_len = after_task ? (int)(after_task - device_lane) : (int)strlen(device_lane);
    for (int l = 0; l < t->nlanes; l++)
        if (strncmp(t->lanes[l], "client to ", 10) == 0 && (int)strlen(t->lanes[l] + 10) == task_len &&
            strncmp(t->lanes[l] + 10, device_lane, (size_t)task_len) == 0)
            return l;
    return -1;
}

/* Whether event e lies within one of the requests on lane `lane`. */
static bool within_a_request(const trace_events *t, const trace_event *e, int lane)
{
    for (int i = 0; i < t->count; i++) {
        const trace_event *r = &t->events[i];
        if (r->lane == lane && e->start >= r->start - ROUNDING_US &&
            e->start + e->dur <= r->start + r->dur + ROUNDING_US)
            return true;
    }
    return false;
}

/* Events on lanes whose name starts with prefix. */
static int events_on(const trace_events *t, const char *prefix)
{
    int n = 0;
    for (int i = 0; i < t->count; i++)
        n += strncmp(t->lanes[t->events[i].lane], prefix, strlen(prefix)) == 0;
    return n;
}

/* Every task event: start >= 0 and within its task's request. */
static void check_task_times(const trace_events *t, const char *what)
{
    int task_events = 0, bad = 0;
    for (int i = 0; i < t->count; i++) {
        const trace_event *e = &t->events[i];
        if (strncmp(t->lanes[e->lane], "/job:", 5) != 0)
            continue;
        task_events++;
        int lane = request_lane(t, t->lanes[e->lane]);
        if (e->start >= 0 && e->dur >= 0 && lane >= 0 && within_a_request(t, e, lane))
            continue;
        if (bad++ == 0)
            diag("%s on %s at %.3f us for %.3f us: outside every request of its task (lane %d)", e->name,
                 t->lanes[e->lane], e->start, e->dur, lane);
    }
    ok(task_events > 0 && bad == 0, "%s: each of the %d task events starts at or after 0 and lies within its "
       "task's request (%d do not)", what, task_events, bad);
}

static void check_cluster_lanes(const trace_events *t, const char *what)
{
    ok(events_on(t, "/job:worker/task:0/") > 0 && events_on(t, "/job:worker/task:1/") > 0, "%s: worker 0's and "
       "worker 1's devices have lanes with events (%d and %d)", what, events_on(t, "/job:worker/task:0/"),
       events_on(t, "/job:worker/task:1/"));
    ok(events_on(t, "/job:ps/task:0/") > 0 && events_on(t, "client to /job:worker/task:1") > 0, "%s: the ps has a "
       "lane, and the client's requests to worker 1 one", what);
    for (int l = 0; l < t->nlanes; l++)
        diag("%s: lane %d: %s", what, l + 1, t->lanes[l]);
}

/* What a warm step allocates on the client (alloc_count.h): the loss it
 * fetches (a tensor and its data), nothing else. Each of the three tasks'
 * PARTITION_DONE is parsed once, into its connection's arena, and each
 * RUN_PARTITION built in its connection's scratch arena, both kept from
 * step to step (the 6 blocks of two parses per reply went: 8 before, 2
 * measured). The master's bookkeeping and fetch slots are kept from the
 * last step. */
#define CLIENT_WARM_STEP_BLOCKS 2

/* A traced in-graph step from a client in this process (its master's
 * threads: the ThreadSanitizer build checks them), then an untraced one
 * counted. */
static void test_traced_step(void)
{
    task_servers c;
    fl_cluster *cluster = NULL;
    if (!ok(start_task_servers(&c, server, tmp_dir, 2), "one ps and two workers start") ||
        !(cluster = fl_cluster_client_from_flags(c.ps_hosts, c.worker_hosts))) {
        stop_task_servers(&c);
        return;
    }
    two_task_model m = build_model();
    fl_session_options options = {.cluster = cluster};
    fl_session *s = fl_session_new(m.g, &options);
    fl_tensor *x = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, 4, 8));
    for (int i = 0; i < 32; i++)
        ((float *)x->data)[i] = 0.1f * (float)(i % 5);
    fl_feed feeds[2] = {{m.x[0], x}, {m.x[1], x}};
    fl_tensor *loss = NULL;
    int rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &m.init, 1);
    rc = rc ? rc : fl_session_run(s, feeds, 2, &m.loss, 1, &loss, NULL, 0); /* makes the tasks' sessions */
    fl_tensor_free(loss);
    loss = NULL;
    fl_session_set_tracing(s, true);
    rc = rc ? rc : fl_session_run(s, feeds, 2, &m.loss, 1, &loss, NULL, 0);
    fl_session_set_tracing(s, false);
    if (!ok(rc == 0 && loss, "a traced step runs on the three tasks"))
        diag("%s", fl_session_error(s));
    char path[400];
    snprintf(path, sizeof path, "%s/in-process.json", tmp_dir);
    trace_events t;
    ok(fl_session_write_trace(s, path) == 0 && trace_events_read(path, &t) == 0, "the client writes the trace");
    check_cluster_lanes(&t, "in-graph step");
    check_task_times(&t, "in-graph step");
    bool found = false;
    for (int i = 0; i < t.count; i++)
        found |= strcmp(t.events[i].name, "tower_1/MatMul") == 0 &&
                 strncmp(t.lanes[t.events[i].lane], "/job:worker/task:1/", 19) == 0;
    ok(found, "tower 1's MatMul is on worker 1's lane, by its node's name");
    trace_events_free(&t);
    fl_tensor_free(loss);
    loss = NULL;
    alloc_count_start();
    rc = fl_session_run(s, feeds, 2, &m.loss, 1, &loss, NULL, 0);
    unsigned long long blocks = alloc_count_stop();
    ok(rc == 0 && blocks <= CLIENT_WARM_STEP_BLOCKS, "an untraced warm step allocates at most %d host blocks on "
       "the client: the loss fetched and what is left (%llu blocks)", CLIENT_WARM_STEP_BLOCKS, blocks);
    fl_tensor_free(loss);
    fl_tensor_free(x);
    fl_session_free(s);
    fl_graph_free(m.g);
    fl_cluster_free(cluster);
    stop_task_servers(&c);
}

/* Chapter 2's lab in cluster mode, with --trace: accepted, and written. */
static void test_lab_trace(void)
{
    task_servers c;
    if (!ok(start_task_servers(&c, server, tmp_dir, 2), "servers for the lab start")) {
        stop_task_servers(&c);
        return;
    }
    char args[800], path[400];
    snprintf(path, sizeof path, "%s/lab.json", tmp_dir);
    snprintf(args, sizeof args, "--ps_hosts=%s --worker_hosts=%s --train_steps 5 --batch_size 32 --max_examples 128 "
             "--log_every 2 --trace %s", c.ps_hosts, c.worker_hosts, path);
    run_result r = run_lab(args);
    if (!ok(r.status == 0, "chapter 2's lab in cluster mode takes --trace (exit %d)", r.status))
        diag("%s", r.out ? r.out : "");
    trace_events t;
    if (ok(trace_events_read(path, &t) == 0, "and writes %s", path)) {
        check_cluster_lanes(&t, "the lab's steps 2 to 4");
        check_task_times(&t, "the lab's steps 2 to 4");
        trace_events_free(&t);
    }
    free(r.out);
    stop_task_servers(&c);
}

/* Chapter 3's between-graph lab: the chief worker's trace has a lane for
 * the ps task, where its requests to it are. */
static void test_between_graph_trace(void)
{
    char cmd[1600], path[400], *out = NULL;
    snprintf(path, sizeof path, "%s/between.json", tmp_dir);
    snprintf(cmd, sizeof cmd, "timeout 300 %s/labs/tools/launch_cluster --ps 1 --workers 2 -- "
             "%s/labs/03-between-graph/between_graph --train_steps 6 --batch_size 32 --max_examples 256 "
             "--log_every 3 --trace %s", build_dir, build_dir, path);
    int status = run_command(cmd, &out);
    if (!ok(status == 0, "chapter 3's lab runs traced, 1 ps and 2 workers (exit %d)", status))
        diag("%s", out ? out : "");
    free(out);
    trace_events t;
    if (!ok(trace_events_read(path, &t) == 0, "the chief writes %s", path))
        return;
    /* The ps's piece sends the variables' values: its Sends are the worker's pulls. */
    int pulls = 0, applies = 0, requests = 0, timed = 0, received_copied = 0;
    for (int i = 0; i < t.count; i++) {
        const trace_event *e = &t.events[i];
        if (strncmp(t.lanes[e->lane], "/job:ps/task:0", 14) != 0)
            continue;
        received_copied += strcmp(e->cat, "Copy") == 0 && strncmp(e->name, "_recv", 5) == 0;
        if (strcmp(e->cat, "Copy") == 0)
            continue;
        requests++;
        pulls += strcmp(e->cat, "Send") == 0;
        /* ApplyAdam (or MultiApplyAdam, should a ps's updates ever be grouped) */
        applies += strstr(e->cat, "ApplyAdam") != NULL;
        timed += e->dur > 0 && e->start >= 0;
    }
    ok(pulls > 0 && applies > 0 && timed == requests, "the worker's trace has a lane for the ps task: %d pulls (%s) "
       "and %d applies, %d of its %d requests timed from send to reply", pulls, "Send", applies, timed, requests);
    ok(applies > 0 && received_copied == 0, "the ps's updates read the received gradients where they landed: %d "
       "copies of a received value", received_copied);
    for (int l = 0; l < t.nlanes; l++)
        diag("between-graph: lane %d: %s", l + 1, t.lanes[l]);
    trace_events_free(&t);
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_cluster_trace", "labs/02-in-graph-towers/in_graph_towers");
    snprintf(server, sizeof server, "%s/labs/tools/flowlab_server", build_dir);
    if (access(server, X_OK) != 0)
        skip_all("flowlab_server is not built; `make tests` builds it");
    setenv("FLOWLAB_BACKEND", "host", 1);
    setenv("FLOWLAB_TASK_DEADLINE", "30", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1); /* ThreadSanitizer cannot see OpenBLAS's own threads sync */
    test_traced_step();
    /* Under ThreadSanitizer the threads to check are the master's, in this
     * process: the labs' runs through instrumented processes add minutes. */
    if (strstr(build_dir, "tsan")) {
        skip("the labs' traced runs", "ThreadSanitizer build: the master's threads are checked in process");
    } else {
        test_lab_trace();
        test_between_graph_trace();
    }
    lab_runner_finish();
    return done_testing();
}
