/* test_monitored_cluster.c: the monitored session takes its cluster once,
 * from the session options' plugin: the chief is the cluster's (the chief
 * task, else worker 0) unless fl_monitored_session_options.chief overrides
 * it; a waiting worker's hint names that option; and closing the session
 * says goodbye, so a ps's fl_server_join returns without the program calling
 * fl_cluster_say_goodbye. The ps runs in this process, on a loopback port. */
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "loopback.h"

typedef struct {
    fl_graph *g;
    fl_node *step, *train;
    fl_optimizer *sgd;
    fl_replica_device_setter *setter;
} model;

/* w minimising (w - 3)^2, its variables on the cluster's ps tasks (none: here). */
static model build(const fl_cluster *cluster)
{
    model m = {.g = fl_graph_new(), .sgd = fl_gradient_descent_optimizer(0.1f)};
    m.setter = cluster ? fl_replica_device_setter_new(cluster, NULL, FL_PS_ROUND_ROBIN) : NULL;
    if (m.setter)
        fl_replica_device_setter_push(m.g, m.setter);
    fl_node *w = fl_get_variable(m.g, "w", fl_shape_make(0), fl_zeros_initializer());
    m.step = fl_get_or_create_global_step(m.g);
    fl_node *d = fl_sub(m.g, w, fl_scalar(m.g, 3, NULL), NULL);
    m.train = fl_minimize(m.sgd, m.g, fl_mul(m.g, d, d, NULL), m.step, NULL);
    return m;
}

static void free_model(model *m)
{
    fl_optimizer_free(m->sgd);
    fl_replica_device_setter_free(m->setter);
    fl_graph_free(m->g);
}

/* Opens a monitored session on worker `task` of a cluster of two workers
 * and no ps; 0 when it opened (and was closed), -1 with *why set otherwise.
 * *log gets the session's lines. */
static fl_error_code open_code; /* the code of the last open_as that failed */

static int open_as(int task, fl_chief_choice chief, char **log, char *why, size_t len)
{
    char workers[64];
    snprintf(workers, sizeof workers, "127.0.0.1:%d,127.0.0.1:%d", loopback_free_port(), loopback_free_port());
    fl_cluster *cluster = fl_cluster_from_flags("", workers, "worker", task);
    model m = build(cluster);
    size_t size = 0;
    FILE *lines = open_memstream(log, &size);
    fl_session_options config = {.cluster = cluster};
    fl_monitored_session_options o = {.chief = chief, .log_step_count_steps = -1, .config = &config, .log = lines};
    fl_monitored_session *ms = fl_monitored_training_session(m.g, m.step, &o);
    snprintf(why, len, "%s", ms ? "" : fl_last_error());
    open_code = ms ? FL_OK : fl_last_error_code();
    int rc = ms ? fl_monitored_session_close(ms) : -1;
    fclose(lines);
    free_model(&m);
    fl_cluster_free(cluster);
    return rc;
}

static void test_who_is_chief(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "1", 1); /* a waiting worker gives up after 1 s */
    char *log = NULL, why[1024];
    ok(open_as(0, FL_CHIEF_FROM_CLUSTER, &log, why, sizeof why) == 0 && strstr(log, "worker 0: initialized"),
       "with no chief task, worker 0 is the chief and initializes (%s)", why);
    free(log);
    ok(open_as(1, FL_CHIEF_FROM_CLUSTER, &log, why, sizeof why) != 0, "worker 1 is not: it waits for the chief");
    ok(strstr(why, "fl_monitored_session_options.chief") != NULL, "and its hint names the override (%s)", why);
    ok(open_code == FL_DEADLINE_EXCEEDED, "giving up at the deadline is DEADLINE_EXCEEDED (%s)",
       fl_error_code_name(open_code));
    free(log);
    ok(open_as(1, FL_CHIEF_YES, &log, why, sizeof why) == 0 && strstr(log, "worker 1: initialized"),
       "FL_CHIEF_YES makes worker 1 the chief (%s)", why);
    free(log);
    ok(open_as(0, FL_CHIEF_NO, &log, why, sizeof why) != 0 && strstr(why, "fl_monitored_session_options.chief"),
       "FL_CHIEF_NO leaves worker 0 waiting, with the same hint");
    free(log);
    unsetenv("FLOWLAB_TASK_DEADLINE");
}

/* One process without a cluster is its own chief. */
static void test_no_cluster(void)
{
    model m = build(NULL);
    fl_monitored_session_options o = {.log_step_count_steps = -1, .log = stderr};
    fl_monitored_session *ms = fl_monitored_training_session(m.g, m.step, &o);
    ok(ms && fl_monitored_session_run(ms, NULL, 0, NULL, 0, NULL, &m.train, 1) == 0,
       "without a cluster the process is the chief and trains (%s)", ms ? "" : fl_last_error());
    ok(fl_monitored_session_close(ms) == 0, "and closes with no goodbye to say");
    free_model(&m);
}

/* A worker that only closes its monitored session lets the ps exit. */
static void test_close_says_goodbye(void)
{
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    fl_cluster *ps_spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    fl_cluster *worker = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    char *ps_log = NULL;
    size_t size = 0;
    FILE *lines = open_memstream(&ps_log, &size);
    fl_server_options so = {.log = lines};
    fl_server *ps = fl_server_start(ps_spec, &so);
    ok(ps != NULL, "a ps starts on %s (%s)", ps_hosts, ps ? "ok" : fl_last_error());
    model m = build(worker);
    fl_session_options config = {.cluster = worker};
    fl_monitored_session_options o = {.log_step_count_steps = -1, .config = &config, .log = stderr};
    fl_monitored_session *ms = ps ? fl_monitored_training_session(m.g, m.step, &o) : NULL;
    ok(ms && fl_monitored_session_run(ms, NULL, 0, NULL, 0, NULL, &m.train, 1) == 0,
       "worker 0 trains a step with w on the ps (%s)", ms ? fl_monitored_session_error(ms) : fl_last_error());
    ok(ps && fl_server_join(ps, 0.2) == 1, "the ps waits while the worker's session is open");
    ok(ms && fl_monitored_session_close(ms) == 0, "closing the monitored session succeeds");
    ok(ps && fl_server_join(ps, 10) == 0, "and the ps knows every worker has finished: close said goodbye");
    fl_server_stop(ps);
    fclose(lines);
    ok(ps_log && !strstr(ps_log, "without saying goodbye"), "the ps logged no worker lost without a goodbye");
    free(ps_log);
    free_model(&m);
    fl_cluster_free(worker);
    fl_cluster_free(ps_spec);
}

int main(void)
{
    test_who_is_chief();
    test_no_cluster();
    test_close_says_goodbye();
    return done_testing();
}
