/* graph_wire.c: a partition (graph_partition.h) as the bytes of a
 * REGISTER_PARTITION frame. Nodes go in creation order, so an input is the
 * index of an earlier node and the graph rebuilt from the bytes
 * (graph_wire_decode.c) is in a topological order by construction. Every
 * node carries all of its fields, so one format serves every op; a Send's
 * and a Recv's key and peer are attrs like any other. */
#include <stdio.h>
#include <string.h>

#include "graph_wire.h"
#include "distributed_runtime/transport/wire_internal.h"

static const fl_wire_type GW = FL_WIRE_REGISTER_PARTITION;

/* ---- encoding ---- */

static int put_bool(fl_wire_buf *b, bool v) { return wire_put_u8(b, v ? 1 : 0); }
static int put_i32(fl_wire_buf *b, int v) { return wire_put_u32(b, (uint32_t)v); }

/* rank u8, then four dims as i32 (-1: unknown), whatever the rank. */
static int put_shape(fl_wire_buf *b, fl_shape s)
{
    int rc = wire_put_u8(b, (unsigned)s.rank);
    for (int i = 0; i < FL_MAX_RANK; i++)
        rc |= put_i32(b, i < s.rank ? s.dims[i] : 0);
    return rc;
}

/* A device or a Send's key may be empty: u8 length, then the bytes. */
static int put_text(fl_wire_buf *b, const char *text)
{
    size_t len = strlen(text);
    return wire_put_u8(b, (unsigned)len) != 0 || wire_append(b, text, len) != 0 ? -1 : 0;
}

/* Every field of fl_attrs, always, in a fixed order (the appendix's table). */
static int put_attrs(fl_wire_buf *b, const fl_attrs *a)
{
    int rc = put_bool(b, a->transpose_a) | put_bool(b, a->transpose_b);
    const int ints[] = {a->axis, a->begin, a->size, a->part, a->num_parts};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        rc |= put_i32(b, ints[i]);
    for (int i = 0; i < FL_MAX_RANK; i++)
        rc |= put_bool(b, a->reduce_axis[i]);
    rc |= put_bool(b, a->keep_dims) | put_bool(b, a->mean) | put_shape(b, a->shape);
    const int window[] = {a->stride_h, a->stride_w, a->ksize_h, a->ksize_w};
    for (int i = 0; i < 4; i++)
        rc |= put_i32(b, window[i]);
    rc |= wire_put_u8(b, (unsigned)a->padding);
    const float floats[] = {a->value, a->minval, a->maxval, a->mean_value, a->stddev,
                            a->learning_rate, a->momentum, a->beta1, a->beta2, a->epsilon};
    for (size_t i = 0; i < sizeof floats / sizeof *floats; i++)
        rc |= wire_put_float(b, floats[i]);
    rc |= wire_put_u64(b, a->seed) | wire_put_u8(b, (unsigned)a->dtype) | put_bool(b, a->use_nesterov);
    rc |= put_text(b, a->edge_key) | put_text(b, a->peer_task);
    return rc ? -1 : 0;
}

static int put_node_list(fl_wire_buf *b, fl_node *const *nodes, int n)
{
    int rc = wire_put_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++)
        rc |= wire_put_u32(b, (uint32_t)nodes[i]->id);
    return rc;
}

static int put_node(fl_wire_buf *b, const fl_node *n)
{
    if (wire_put_name(b, 0, GW, "op type", fl_node_op_type(n)) != 0 || wire_put_name(b, 0, GW, "name", n->name) != 0)
        return -1;
    int rc = wire_put_u8(b, (unsigned)n->dtype) | put_bool(b, n->has_output) | put_shape(b, n->shape);
    rc |= put_text(b, n->device);
    rc |= put_node_list(b, n->inputs, n->ninputs) | put_node_list(b, n->controls, n->ncontrols);
    rc |= put_attrs(b, &n->attrs) | put_bool(b, n->value != NULL);
    if (rc == 0 && n->value && wire_put_tensor(b, 0, GW, n->value) != 0)
        return -1;
    rc |= put_bool(b, n->trainable);
    return rc | wire_put_u32(b, n->initializer ? (uint32_t)n->initializer->id : FL_GRAPH_WIRE_NO_NODE);
}

int fl_graph_wire_encode(const fl_graph_partition *p, fl_wire_buf *out)
{
    fl_wire_buf b = {0};
    int nnodes = fl_graph_node_count(p->graph);
    int rc = wire_put_u8(&b, FL_GRAPH_WIRE_VERSION) | wire_put_name(&b, 0, GW, "job", p->job);
    rc |= wire_put_u32(&b, (uint32_t)p->task);
    rc |= wire_put_u32(&b, (uint32_t)nnodes);
    for (int i = 0; i < nnodes && rc == 0; i++)
        rc = put_node(&b, fl_graph_node(p->graph, i));
    if (rc == 0) /* last: the graph's seed, so a random initializer draws what the client's graph would */
        rc = wire_put_u64(&b, fl_graph_seed(p->graph));
    if (rc == 0)
        rc = wire_append(out, b.data, b.len);
    if (rc != 0)
        fl_set_error_code(FL_INVALID_ARGUMENT, "partition of /job:%s/task:%d: %s", p->job, p->task,
                          b.error[0] ? b.error : "out of memory");
    fl_wire_buf_free(&b);
    return rc ? -1 : 0;
}
