/* check_round_robin.c: checks my_round_robin (exercise round-robin). It builds
 * the chapter 1 model on worker 1 of a cluster with 2 ps tasks, then with 3,
 * under the device function, and compares each node's requested device with
 * round-robin's answer and with the library's replica device setter's. */
#include "exercises.h"
#include "../../common/check.h"
#include "../../common/model.h"

#define PS_HOSTS_2 "127.0.0.1:2222,127.0.0.1:2223"
#define PS_HOSTS_3 PS_HOSTS_2 ",127.0.0.1:2224"
#define WORKER_HOSTS "127.0.0.1:2230,127.0.0.1:2231"

/* The model's variables in the order core_model creates them. */
static const char *const variables[] = {"conv_1/kernel",  "conv_1/bias",  "conv_2/kernel",  "conv_2/bias",
                                        "dense_1/kernel", "dense_1/bias", "dense_2/kernel", "dense_2/bias"};
#define NVARIABLES ((int)(sizeof variables / sizeof variables[0]))

/* The model on a placeholder "image", under the device function fn (with
 * user), or under the library's replica device setter when setter is set. */
static fl_graph *build_model(fl_device_fn fn, void *user, fl_replica_device_setter *setter)
{
    fl_graph *g = fl_graph_new();
    fl_node *image = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image");
    if (setter)
        fl_replica_device_setter_push(g, setter);
    else
        fl_device_function_push(g, fn, user);
    core_model(g, image);
    fl_device_pop(g);
    check_graph(g);
    return g;
}

/* Every other node asks for what the library's replica device setter gives
 * it: the worker device, except what the graph places itself (a variable's
 * Assign beside its variable; its initial value nowhere in particular). */
static void check_others(const fl_graph *g, const fl_cluster *cluster, const char *worker_device)
{
    fl_replica_device_setter *setter = fl_replica_device_setter_new(cluster, worker_device, FL_PS_ROUND_ROBIN);
    if (!setter)
        fail("the check's replica device setter: %s", fl_last_error());
    fl_graph *want = build_model(NULL, NULL, setter);
    if (fl_graph_node_count(want) != fl_graph_node_count(g))
        fail("the model has %d nodes, not %d; did the device function change the graph?",
             fl_graph_node_count(g), fl_graph_node_count(want));
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        const fl_node *n = fl_graph_node(g, i), *w = fl_graph_node(want, i);
        if (strcmp(fl_node_device(n), fl_node_device(w)) != 0)
            fail("%s (%s) asks for '%s', not '%s'; everything but the variables belongs on the worker, %s",
                 fl_node_name(n), fl_node_op_type(n), fl_node_device(n), fl_node_device(w), worker_device);
    }
    fl_graph_free(want);
    fl_replica_device_setter_free(setter);
}

static void check_cluster(const char *ps_hosts)
{
    fl_cluster *cluster = fl_cluster_from_flags(ps_hosts, WORKER_HOSTS, "worker", 1);
    if (!cluster)
        fail("the check's cluster spec: %s", fl_last_error());
    char worker_device[64];
    snprintf(worker_device, sizeof worker_device, "/job:%s/task:%d/cpu:0", fl_cluster_job_name(cluster),
             fl_cluster_task_index(cluster));
    ps_placement placement = {.worker_device = worker_device, .num_ps = fl_cluster_num_tasks(cluster, "ps")};
    fl_graph *g = build_model(my_round_robin, &placement, NULL);
    const fl_node *logits = fl_graph_node(g, fl_graph_node_count(g) - 1);
    if (!fl_node_device(logits)[0] && !fl_node_device(fl_graph_find(g, "conv_1/kernel"))[0])
        fail("not implemented yet (my_round_robin chose no device)");
    for (int v = 0; v < NVARIABLES; v++) {
        char want[64];
        snprintf(want, sizeof want, "/job:ps/task:%d/cpu:0", v % placement.num_ps);
        const fl_node *var = fl_graph_find(g, variables[v]);
        if (!var)
            fail("the model has no variable %s", variables[v]);
        if (strcmp(fl_node_device(var), want) != 0)
            fail("with %d ps tasks, variable %d (%s) asks for '%s'; round-robin puts it on %s", placement.num_ps,
                 v, variables[v], fl_node_device(var), want);
    }
    check_others(g, cluster, worker_device);
    fl_graph_free(g);
    fl_cluster_free(cluster);
}

int main(void)
{
    check_start("round-robin", "labs/03-between-graph/exercises/round_robin.c");
    check_cluster(PS_HOSTS_2);
    check_cluster(PS_HOSTS_3);
    pass();
}
