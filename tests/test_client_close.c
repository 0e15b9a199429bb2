/* test_client_close.c: an in-graph client whose three tasks cannot be
 * reached (ports nothing listens on) fails its run once, within the task
 * deadline, naming a task; then fl_session_free says its goodbyes to all
 * three at once, each with a short deadline of its own (cluster_goodbye.c),
 * so it returns in less than the task deadline instead of waiting it again
 * for each task. Bounds, measured here: not a timed performance test. */
#include <stdlib.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "runtime.h"
#include "loopback.h"

#define DEADLINE_S 3.0
#define SLACK_S 3.0 /* a loaded machine, ASan */

/* A variable on the ps, a product on each worker: a run needs all three. */
static fl_graph *build(fl_node **fetches)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/job:ps/task:0/cpu:0");
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, 4, 4), fl_constant_initializer(0.5f));
    fl_device_pop(g);
    for (int i = 0; i < 2; i++) {
        char device[64];
        snprintf(device, sizeof device, "/job:worker/task:%d/cpu:0", i);
        fl_device_scope_push(g, device);
        fetches[i] = fl_matmul(g, w, w, false, false, NULL);
        fl_device_pop(g);
    }
    return g;
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "3", 1);
    char ps_hosts[64], worker_hosts[96];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", loopback_free_port());
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d,127.0.0.1:%d", loopback_free_port(),
             loopback_free_port());
    fl_cluster *cluster = fl_cluster_client_from_flags(ps_hosts, worker_hosts);
    ok(cluster != NULL, "a client of one ps and two workers that nothing serves (%s)",
       cluster ? ps_hosts : fl_last_error());
    if (!cluster)
        return done_testing();
    fl_node *fetches[2];
    fl_graph *g = build(fetches);
    fl_session_options o = {.cluster = cluster};
    fl_session *s = fl_session_new(g, &o);
    ok(s != NULL, "its session opens");

    fl_tensor *out[2] = {NULL, NULL};
    double start = fl_now_s();
    int rc = s ? fl_session_run(s, NULL, 0, fetches, 2, out, NULL, 0) : 0;
    double run_s = fl_now_s() - start;
    const char *why = s ? fl_session_error(s) : "";
    ok(rc != 0, "the run fails");
    ok(strstr(why, "/job:") != NULL, "naming a task it cannot reach: %s", why);
    ok(run_s < 2 * DEADLINE_S, "once: within one task deadline, not two (%.1f s < %.0f s)", run_s, 2 * DEADLINE_S);

    start = fl_now_s();
    fl_session_free(s);
    double free_s = fl_now_s() - start;
    ok(free_s < DEADLINE_S + SLACK_S, "fl_session_free's goodbyes to the three tasks go at once, each with its own "
       "short deadline: %.1f s (< %.0f s; one task deadline each would be %.0f s)", free_s, DEADLINE_S + SLACK_S,
       3 * DEADLINE_S);
    diag("the failed run took %.1f s and fl_session_free %.1f s (FLOWLAB_TASK_DEADLINE=%.0f)", run_s, free_s,
         DEADLINE_S);
    fl_tensor_free(out[0]);
    fl_tensor_free(out[1]);
    fl_graph_free(g);
    fl_cluster_free(cluster);
    return done_testing();
}
