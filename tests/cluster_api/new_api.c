/* new_api.c: a user's cluster program as the README writes one, built by
 * tests/cluster_api.t with -std=c11 -Wall -Wextra -Werror: the session is
 * given the cluster itself (.cluster = cluster), a worker's against a ps
 * task and a client's against a worker task, each on loopback in this
 * process, and trains a few steps. Prints each loss; exits 0 when both fell. */
#include <stdio.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "loopback.h"

enum { STEPS = 5 };

/* y = 3x fitted by w from 0; the losses of STEPS steps into losses. */
static int train(fl_graph *g, const fl_cluster *cluster, const char *who, double *losses)
{
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 4), "x");
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(0), fl_zeros_initializer());
    fl_node *step = fl_get_or_create_global_step(g);
    fl_node *err = fl_sub(g, fl_mul(g, x, w, NULL), fl_mul(g, x, fl_scalar(g, 3, NULL), NULL), NULL);
    fl_node *loss = fl_reduce_mean(g, fl_mul(g, err, err, NULL), NULL, 0, false, "loss");
    fl_optimizer *sgd = fl_gradient_descent_optimizer(0.05f);
    fl_node *train_op = fl_minimize(sgd, g, loss, step, NULL);
    fl_node *init = fl_global_variables_initializer(g);
    fl_session_options options = {.cluster = cluster};
    fl_session *s = fl_session_new(g, &options);
    fl_tensor *xs = fl_tensor_from_floats(fl_shape_make(1, 4), (const float[]){1, 2, 3, 4});
    fl_feed feed = {x, xs};
    int rc = s ? fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) : -1;
    for (int i = 0; i < STEPS && rc == 0; i++) {
        fl_tensor *value = NULL;
        rc = fl_session_run(s, &feed, 1, &loss, 1, &value, &train_op, 1);
        losses[i] = rc == 0 ? fl_tensor_scalar(value) : -1;
        fl_tensor_free(value);
        printf("%s: step %d loss %g\n", who, i + 1, losses[i]);
    }
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", who, s ? fl_session_error(s) : fl_last_error());
    fl_tensor_free(xs);
    fl_session_free(s); /* a client's session says goodbye to its tasks */
    fl_optimizer_free(sgd);
    return rc == 0 && losses[STEPS - 1] < losses[0] ? 0 : -1;
}

/* Between-graph: a worker's variables on the ps, through the setter. */
static int between_graph(void)
{
    char ps_hosts[64], worker_hosts[64];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", loopback_free_port());
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", loopback_free_port());
    fl_cluster *ps_cluster = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    fl_cluster *cluster = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    fl_server *ps = ps_cluster ? fl_server_start(ps_cluster, NULL) : NULL;
    if (!ps || !cluster) {
        fprintf(stderr, "worker: %s\n", fl_last_error());
        return -1;
    }
    fl_graph *g = fl_graph_new();
    fl_replica_device_setter *setter = fl_replica_device_setter_new(cluster, NULL, FL_PS_ROUND_ROBIN);
    fl_replica_device_setter_push(g, setter);
    double losses[STEPS];
    int rc = train(g, cluster, "worker", losses);
    fl_server_stats stats;
    fl_server_get_stats(ps, &stats);
    printf("worker: the ps holds %d variables\n", stats.variables);
    if (stats.variables != 2) /* w and the global step */
        rc = -1;
    fl_cluster_say_goodbye(cluster);
    if (rc == 0 && fl_server_join(ps, 30) != 0)
        rc = -1;
    fl_server_stop(ps);
    fl_replica_device_setter_free(setter);
    fl_graph_free(g);
    fl_cluster_free(cluster);
    fl_cluster_free(ps_cluster);
    return rc;
}

/* In-graph across tasks: this process is the client, worker 0 runs the graph. */
static int in_graph(void)
{
    char worker_hosts[64];
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", loopback_free_port());
    fl_cluster *task_cluster = fl_cluster_from_flags(NULL, worker_hosts, "worker", 0);
    fl_cluster *cluster = fl_cluster_client_from_flags(NULL, worker_hosts);
    fl_server *task = task_cluster ? fl_server_start(task_cluster, NULL) : NULL;
    if (!task || !cluster) {
        fprintf(stderr, "client: %s\n", fl_last_error());
        return -1;
    }
    fl_graph *g = fl_graph_new();
    double losses[STEPS];
    int rc = train(g, cluster, "client", losses);
    fl_server_stats stats;
    fl_server_get_stats(task, &stats);
    printf("client: worker 0 ran %llu partition steps\n", (unsigned long long)stats.partition_steps);
    if (stats.partition_steps < STEPS)
        rc = -1;
    if (rc == 0 && fl_server_join(task, 30) != 0)
        rc = -1;
    fl_server_stop(task);
    fl_graph_free(g);
    fl_cluster_free(cluster);
    fl_cluster_free(task_cluster);
    return rc;
}

int main(void)
{
    int rc = between_graph();
    if (in_graph() != 0)
        rc = -1;
    return rc == 0 ? 0 : 1;
}
