/* replica_device_setter.c: TensorFlow's replica_device_setter as a device
 * function: variables to the ps tasks (round-robin or greedy by bytes),
 * everything else to the worker's device. It only places nodes; the remote
 * backend (not here) is what later runs them there. */
#include <stdio.h>
#include <stdlib.h>

#include "flowlab_cluster.h"
#include "runtime.h"

struct fl_replica_device_setter {
    fl_ps_strategy strategy;
    int num_ps;
    int next_task;      /* round-robin: the task the next variable goes to */
    int64_t *ps_bytes;  /* [num_ps] */
    int *ps_variables;  /* [num_ps] */
    char worker_device[FL_DEVICE_LEN];
    char chosen[FL_DEVICE_LEN]; /* the last ps device returned; the graph copies it at once */
};

fl_replica_device_setter *fl_replica_device_setter_new(const fl_cluster *cluster, const char *worker_device,
                                                       fl_ps_strategy strategy)
{
    if (!cluster) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_replica_device_setter_new: the cluster is NULL");
        return NULL;
    }
    if (strategy != FL_PS_ROUND_ROBIN && strategy != FL_PS_GREEDY_BY_BYTES) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "fl_replica_device_setter_new: strategy %d is neither FL_PS_ROUND_ROBIN (0) nor "
                          "FL_PS_GREEDY_BY_BYTES (1)",
                          (int)strategy);
        return NULL;
    }
    char device[FL_DEVICE_LEN];
    /* The cluster completes what the string leaves out with the local task's. */
    if (fl_cluster_device_name(cluster, worker_device ? worker_device : "", device, sizeof device) != 0)
        return NULL;
    fl_replica_device_setter *s = fl_xcalloc(1, sizeof *s);
    s->strategy = strategy;
    s->num_ps = fl_cluster_num_tasks(cluster, "ps");
    s->ps_bytes = fl_xcalloc((size_t)(s->num_ps ? s->num_ps : 1), sizeof *s->ps_bytes);
    s->ps_variables = fl_xcalloc((size_t)(s->num_ps ? s->num_ps : 1), sizeof *s->ps_variables);
    snprintf(s->worker_device, sizeof s->worker_device, "%s", device);
    return s;
}

void fl_replica_device_setter_free(fl_replica_device_setter *s)
{
    if (!s)
        return;
    free(s->ps_bytes);
    free(s->ps_variables);
    free(s);
}

/* The ps task with the fewest bytes; the first such on a tie, as
 * TensorFlow's GreedyLoadBalancingStrategy (numpy's argmin) does. */
static int least_loaded(const fl_replica_device_setter *s)
{
    int best = 0;
    for (int k = 1; k < s->num_ps; k++)
        if (s->ps_bytes[k] < s->ps_bytes[best])
            best = k;
    return best;
}

// [book:place]
static int choose_ps_task(fl_replica_device_setter *s)
{
    if (s->strategy == FL_PS_GREEDY_BY_BYTES)
        return least_loaded(s);
    int k = s->next_task;
    s->next_task = (k + 1) % s->num_ps;
    return k;
}

/* The device function. A node only reaches it when no scope inside the
 * setter chose a device, so it never overrides an inner scope. Slots,
 * initializers and Assigns are built under a colocation scope, so only
 * the variables a program creates are counted. */
static const char *place(const fl_node *node, void *user)
{
    fl_replica_device_setter *s = user;
    if (node->op != FL_OP_VARIABLE || s->num_ps == 0)
        return s->worker_device;
    int k = choose_ps_task(s);
    /* A Variable's shape is its attribute: the node's own shape is inferred
     * only after its device is chosen. */
    int64_t elements = fl_shape_size(node->attrs.shape);
    s->ps_bytes[k] += (elements > 0 ? elements : 0) * (int64_t)fl_dtype_size(node->dtype);
    s->ps_variables[k]++;
    snprintf(s->chosen, sizeof s->chosen, "/job:ps/task:%d/cpu:0", k);
    return s->chosen;
}
// [end:place]

int fl_replica_device_setter_push(fl_graph *g, fl_replica_device_setter *s)
{
    if (!g) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_replica_device_setter_push: the graph is NULL");
        return -1;
    }
    if (!s) {
        fl_graph_fail(g, "", "fl_replica_device_setter_push: the setter is NULL");
        return -1;
    }
    return fl_device_function_push(g, place, s);
}

int fl_replica_device_setter_num_ps(const fl_replica_device_setter *s) { return s ? s->num_ps : 0; }

const char *fl_replica_device_setter_worker_device(const fl_replica_device_setter *s)
{
    return s ? s->worker_device : "";
}

int fl_replica_device_setter_ps_bytes(const fl_replica_device_setter *s, int ps_task, int64_t *bytes,
                                      int *variables)
{
    if (!s || ps_task < 0 || ps_task >= s->num_ps) {
        fl_set_error_code(FL_NOT_FOUND, "fl_replica_device_setter_ps_bytes: no ps task %d; the cluster has %d", ps_task,
                          s ? s->num_ps : 0);
        return -1;
    }
    if (bytes)
        *bytes = s->ps_bytes[ps_task];
    if (variables)
        *variables = s->ps_variables[ps_task];
    return 0;
}
