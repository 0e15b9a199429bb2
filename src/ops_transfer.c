/* ops_transfer.c: Send and Recv, TensorFlow's _Send and _Recv. The master's
 * partitioner (graph_partition.c) cuts an edge between tasks into a Send on
 * the value's task and a Recv on the reader's, matched by a key naming both
 * ends; a task's rendezvous device runs them (distributed_runtime). */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

/* A Recv gives the value its attrs describe; -1 dimensions (a batch fed at
 * run time) take the arriving value's. */
static int infer_received(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    (void)in;
    fl_shape s = n->attrs.shape;
    bool ok = s.rank >= 0 && s.rank <= FL_MAX_RANK;
    for (int i = 0; ok && i < s.rank; i++)
        ok = s.dims[i] >= -1 && s.dims[i] != 0;
    if (!ok) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "its shape attr (rank %d) is not valid: rank 0 to %d, dimensions "
                      "above 0 or -1", s.rank, FL_MAX_RANK);
        return -1;
    }
    if (!n->attrs.edge_key[0] || !n->attrs.peer_task[0]) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "a Recv needs its edge key and the task it comes from");
        return -1;
    }
    *out = s;
    return 0;
}

static int infer_sent(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    (void)in;
    if (!n->attrs.edge_key[0] || !n->attrs.peer_task[0]) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "a Send needs its edge key and the task it goes to");
        return -1;
    }
    *out = fl_shape_make(0);
    return 0;
}

const fl_op_def fl_def_send = {
    "Send", {.min_inputs = 1, .max_inputs = 1, .between_tasks = true}, infer_sent, NULL};
const fl_op_def fl_def_recv = {
    "Recv", {.min_inputs = 0, .max_inputs = 0, .has_output = true, .is_source = true, .between_tasks = true},
    infer_received, NULL};

/* Both ends' names fit their attrs, or the graph records why. */
static bool names_fit(fl_graph *g, const char *name, const char *key, const char *task)
{
    if (key && task && strlen(key) < FL_EDGE_KEY_LEN && strlen(task) < FL_DEVICE_LEN)
        return true;
    fl_graph_fail(g, name ? name : "Send", "an edge key of at most %d bytes and a task of at most %d are needed",
                  FL_EDGE_KEY_LEN - 1, FL_DEVICE_LEN - 1);
    return false;
}

fl_node *fl_send(fl_graph *g, fl_node *value, const char *key, const char *to_task, const char *name)
{
    if (!names_fit(g, name, key, to_task))
        return NULL;
    fl_node_spec spec = {.op = FL_OP_SEND, .name = name, .default_name = "Send", .inputs = &value, .ninputs = 1,
                         .dtype = value ? value->dtype : FL_FLOAT32, .exact_name = name != NULL};
    snprintf(spec.attrs.edge_key, sizeof spec.attrs.edge_key, "%s", key);
    snprintf(spec.attrs.peer_task, sizeof spec.attrs.peer_task, "%s", to_task);
    return fl_add_node(g, &spec);
}

fl_node *fl_recv(fl_graph *g, fl_dtype dtype, fl_shape shape, const char *key, const char *from_task,
                 const char *name)
{
    if (!names_fit(g, name, key, from_task))
        return NULL;
    fl_node_spec spec = {.op = FL_OP_RECV, .name = name, .default_name = "Recv", .dtype = dtype,
                         .attrs = {.shape = shape}, .exact_name = name != NULL};
    snprintf(spec.attrs.edge_key, sizeof spec.attrs.edge_key, "%s", key);
    snprintf(spec.attrs.peer_task, sizeof spec.attrs.peer_task, "%s", from_task);
    return fl_add_node(g, &spec);
}
