/* graph_wire_decode.c: a REGISTER_PARTITION's bytes back into a partition,
 * trusting nothing. Each node is rebuilt with the runtime's own fl_add_node,
 * which checks its inputs and infers its shape, so what the runtime would
 * refuse from a program it refuses from the wire; every refusal names the
 * node (INVALID_ARGUMENT). Sizes are bounded before anything is allocated. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_wire.h"
#include "distributed_runtime/transport/wire_internal.h"

typedef struct {
    wire_cursor c;
    fl_status read; /* the cursor's: why a field could not be read */
    char why[FL_WIRE_ERROR_LEN + 300]; /* the refusal, naming the node */
    fl_graph_partition *p;
    int nnodes;
    char node[FL_WIRE_MAX_NAME + 16]; /* the node being read: its name, or "#7" */
    uint32_t *initializer;            /* per node, resolved once all are in */
} reader;

/* "node NAME: why"; a field that failed to read says why in r->read. */
static int refuse(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(reader *r, const char *fmt, ...)
{
    char why[FL_WIRE_ERROR_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(why, sizeof why, fmt, args);
    va_end(args);
    snprintf(r->why, sizeof r->why, "node %s: %s", r->node, why);
    return -1;
}

static int read_failed(reader *r) { return refuse(r, "%s", r->read.message); }

static int get_u32(reader *r, const char *what, uint32_t *v)
{
    return wire_get_u32(&r->c, what, v) != 0 ? read_failed(r) : 0;
}

static int get_i32(reader *r, const char *what, int *v)
{
    uint32_t u;
    if (get_u32(r, what, &u) != 0)
        return -1;
    *v = (int32_t)u;
    return 0;
}

static int get_u8(reader *r, const char *what, unsigned *v)
{
    return wire_get_u8(&r->c, what, v) != 0 ? read_failed(r) : 0;
}

static int get_bool(reader *r, const char *what, bool *v)
{
    unsigned u;
    if (get_u8(r, what, &u) != 0)
        return -1;
    if (u > 1)
        return refuse(r, "%s is %u, not 0 or 1", what, u);
    *v = u == 1;
    return 0;
}

static int get_float(reader *r, const char *what, float *f)
{
    uint32_t bits;
    if (get_u32(r, what, &bits) != 0)
        return -1;
    memcpy(f, &bits, 4);
    return isfinite(*f) ? 0 : refuse(r, "%s is not finite", what);
}

/* rank u8 and four i32 dims; -1 (unknown) only where unknown allows it. */
static int get_shape(reader *r, const char *what, bool unknown_ok, fl_shape *s)
{
    unsigned rank;
    if (get_u8(r, what, &rank) != 0)
        return -1;
    if (rank > FL_MAX_RANK)
        return refuse(r, "%s has rank %u, over %d", what, rank, FL_MAX_RANK);
    s->rank = (int)rank;
    for (int i = 0; i < FL_MAX_RANK; i++)
        if (get_i32(r, what, &s->dims[i]) != 0)
            return -1;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] == 0 || s->dims[i] < (unknown_ok ? -1 : 1))
            return refuse(r, "%s has dimension %d", what, s->dims[i]);
    return 0;
}

/* ---- attrs: the order of graph_wire.c's put_attrs ---- */

static int get_attr_ints(reader *r, fl_attrs *a)
{
    int *ints[] = {&a->axis, &a->begin, &a->size, &a->part, &a->num_parts};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (get_i32(r, "an int attr", ints[i]) != 0)
            return -1;
    if (a->axis < -FL_MAX_RANK || a->axis > FL_MAX_RANK)
        return refuse(r, "axis %d outside -%d..%d", a->axis, FL_MAX_RANK, FL_MAX_RANK);
    if (a->num_parts < 0 || a->part < 0 || (a->num_parts > 0 && a->part >= a->num_parts))
        return refuse(r, "part %d of %d parts", a->part, a->num_parts);
    if (a->begin < 0 || a->size < 0)
        return refuse(r, "slice window begin %d size %d", a->begin, a->size);
    for (int i = 0; i < FL_MAX_RANK; i++)
        if (get_bool(r, "reduce_axis", &a->reduce_axis[i]) != 0)
            return -1;
    return 0;
}

static int get_attr_window(reader *r, fl_attrs *a)
{
    int *window[] = {&a->stride_h, &a->stride_w, &a->ksize_h, &a->ksize_w};
    for (int i = 0; i < 4; i++) {
        if (get_i32(r, "a window attr", window[i]) != 0)
            return -1;
        if (*window[i] < 0 || *window[i] > 65536)
            return refuse(r, "stride or window size %d outside 0..65536", *window[i]);
    }
    unsigned padding;
    if (get_u8(r, "padding", &padding) != 0)
        return -1;
    if (padding > FL_VALID)
        return refuse(r, "padding %u is neither 0 (SAME) nor 1 (VALID)", padding);
    a->padding = (fl_padding)padding;
    return 0;
}

/* u8 length and printable bytes into out (len bytes with its NUL), maybe empty. */
static int get_text(reader *r, const char *what, char *out, size_t len)
{
    unsigned n;
    const unsigned char *bytes;
    if (get_u8(r, what, &n) != 0)
        return -1;
    if (n >= len)
        return refuse(r, "%s of %u bytes, over %zu", what, n, len - 1);
    if (wire_take(&r->c, n, what, &bytes) != 0)
        return read_failed(r);
    fl_status why = {0};
    if (n && wire_check_name(bytes, n, &why) != 0)
        return refuse(r, "%s %s", what, why.message);
    memcpy(out, bytes, n);
    out[n] = '\0';
    return 0;
}

/* A Send's or Recv's key and peer, which names a task ("/job:ps/task:0"). */
static int get_attr_edge(reader *r, fl_attrs *a)
{
    if (get_text(r, "edge key", a->edge_key, sizeof a->edge_key) != 0 ||
        get_text(r, "peer task", a->peer_task, sizeof a->peer_task) != 0)
        return -1;
    fl_device_name d;
    if (a->peer_task[0] && (fl_parse_device(a->peer_task, &d, NULL, 0) != 0 || !d.job[0] || d.task < 0))
        return refuse(r, "peer task %s is no task name (/job:NAME/task:N)", a->peer_task);
    return 0;
}

static int get_attrs(reader *r, fl_op_kind op, fl_attrs *a)
{
    bool unknown_ok = op == FL_OP_PLACEHOLDER || op == FL_OP_RESHAPE || op == FL_OP_RECV;
    if (get_bool(r, "transpose_a", &a->transpose_a) != 0 || get_bool(r, "transpose_b", &a->transpose_b) != 0 ||
        get_attr_ints(r, a) != 0 || get_bool(r, "keep_dims", &a->keep_dims) != 0 || get_bool(r, "mean", &a->mean) != 0 ||
        get_shape(r, "the shape attr", unknown_ok, &a->shape) != 0 || get_attr_window(r, a) != 0)
        return -1;
    float *floats[] = {&a->value, &a->minval, &a->maxval, &a->mean_value, &a->stddev,
                       &a->learning_rate, &a->momentum, &a->beta1, &a->beta2, &a->epsilon};
    for (size_t i = 0; i < sizeof floats / sizeof *floats; i++)
        if (get_float(r, "a float attr", floats[i]) != 0)
            return -1;
    unsigned dtype;
    if (wire_get_u64(&r->c, "seed", &a->seed) != 0)
        return read_failed(r);
    if (get_u8(r, "dtype attr", &dtype) != 0 || get_bool(r, "use_nesterov", &a->use_nesterov) != 0)
        return -1;
    if (dtype > FL_INT32)
        return refuse(r, "dtype attr %u is neither 0 (float32) nor 1 (int32)", dtype);
    a->dtype = (fl_dtype)dtype;
    return get_attr_edge(r, a);
}

/* A shape a node will allocate (a variable, a fill) must be known and fit
 * the wire's limit: the task would otherwise try to allocate it. */
static int check_allocated_shape(reader *r, fl_op_kind op, const fl_shape *s)
{
    bool allocates = op == FL_OP_VARIABLE || op == FL_OP_FILL || op == FL_OP_RANDOM_UNIFORM ||
                     op == FL_OP_TRUNCATED_NORMAL || op == FL_OP_CONST;
    int64_t count;
    fl_status why = {0};
    if (allocates && wire_check_shape(s->rank, s->dims, &count, &why) != 0)
        return refuse(r, "its shape attr %s", why.message);
    return 0;
}

/* ---- one node ---- */

static int find_op(reader *r, const char *type, fl_op_kind *op)
{
    for (int k = 0; k < FL_OP_COUNT; k++)
        if (strcmp(fl_op_def_of((fl_op_kind)k)->type, type) == 0) {
            *op = (fl_op_kind)k;
            return 0;
        }
    return refuse(r, "op type %s is not one this task knows", type);
}

static int check_op_inputs(reader *r, fl_op_kind op, fl_node *const *inputs, int ninputs)
{
    fl_status why = {0};
    return fl_graph_wire_check_inputs(op, inputs, ninputs, &why) != 0 ? refuse(r, "%s", why.message) : 0;
}

/* A count, then that many indices of earlier nodes. */
static int get_node_list(reader *r, const char *what, int self, fl_node ***out, int *count)
{
    uint32_t n;
    if (get_u32(r, what, &n) != 0)
        return -1;
    if (n > FL_WIRE_MAX_LIST || (uint64_t)n * 4 > r->c.left)
        return refuse(r, "%u %s cannot fit in the %zu bytes left", (unsigned)n, what, r->c.left);
    fl_node **nodes = fl_xcalloc((size_t)n + 1, sizeof *nodes);
    *out = nodes;
    *count = (int)n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id;
        if (get_u32(r, what, &id) != 0)
            return -1;
        if (id >= (uint32_t)self)
            return refuse(r, "%s %u is not an earlier node (this is node %d)", what, (unsigned)id, self);
        nodes[i] = fl_graph_node(r->p->graph, (int)id);
        if (!nodes[i]->has_output && strcmp(what, "input") == 0)
            return refuse(r, "input %s has no value (a %s)", nodes[i]->name, fl_node_op_type(nodes[i]));
    }
    return 0;
}

/* A device of the task's own: "" or "/cpu:0", "/gpu:1", never a task's. */
static int get_device(reader *r, char device[FL_DEVICE_LEN])
{
    if (get_text(r, "device", device, FL_DEVICE_LEN) != 0)
        return -1;
    fl_device_name d;
    if (!device[0])
        return 0;
    if (fl_parse_device(device, &d, NULL, 0) != 0)
        return refuse(r, "%s", fl_last_error());
    if (d.job[0] || d.task >= 0)
        return refuse(r, "device %s names a task; a partition's devices are its task's own (/cpu:0, /gpu:1)",
                      device);
    return 0;
}

typedef struct {
    fl_node_spec spec;
    char name[FL_WIRE_MAX_NAME + 1];
    fl_shape shape;
    char device[FL_DEVICE_LEN];
    fl_node **inputs, **controls;
    int ncontrols;
    bool has_value, trainable;
    fl_wire_tensor value;
    uint32_t initializer;
} node_fields;

static int get_head(reader *r, node_fields *f)
{
    char type[FL_WIRE_MAX_NAME + 1];
    unsigned dtype;
    bool has_output = false;
    if (wire_get_name(&r->c, "op type", type) != 0 || wire_get_name(&r->c, "name", f->name) != 0)
        return read_failed(r);
    snprintf(r->node, sizeof r->node, "%s", f->name);
    if (find_op(r, type, &f->spec.op) != 0 || get_u8(r, "dtype", &dtype) != 0 ||
        get_bool(r, "has_output", &has_output) != 0 || get_shape(r, "shape", true, &f->shape) != 0 ||
        get_device(r, f->device) != 0)
        return -1;
    if (dtype > FL_INT32)
        return refuse(r, "dtype %u is neither 0 (float32) nor 1 (int32)", dtype);
    bool declared = fl_op_def_of(f->spec.op)->sig.has_output;
    if (has_output != declared) /* the byte is the encoder's word for what the op's signature says */
        return refuse(r, "a %s %s a value", type, declared ? "has" : "has no");
    f->spec.dtype = (fl_dtype)dtype;
    return 0;
}

static int get_fields(reader *r, int index, node_fields *f)
{
    if (get_head(r, f) != 0 ||
        get_node_list(r, "input", index, &f->inputs, &f->spec.ninputs) != 0 ||
        check_op_inputs(r, f->spec.op, f->inputs, f->spec.ninputs) != 0 ||
        get_node_list(r, "control input", index, &f->controls, &f->ncontrols) != 0 ||
        get_attrs(r, f->spec.op, &f->spec.attrs) != 0 || check_allocated_shape(r, f->spec.op, &f->spec.attrs.shape) != 0 ||
        get_bool(r, "has_value", &f->has_value) != 0)
        return -1;
    if (f->has_value && wire_get_tensor(&r->c, &f->value) != 0)
        return read_failed(r);
    if (f->has_value != (f->spec.op == FL_OP_CONST))
        return refuse(r, f->has_value ? "only a Const carries a value" : "a Const without its value");
    if (f->has_value && (f->value.dtype != f->spec.dtype || !fl_shape_equal(f->value.shape, f->spec.attrs.shape)))
        return refuse(r, "its value's dtype or shape differ from the node's");
    if (get_bool(r, "trainable", &f->trainable) != 0 || get_u32(r, "initializer", &f->initializer) != 0)
        return -1;
    if (f->initializer != FL_GRAPH_WIRE_NO_NODE && f->spec.op != FL_OP_VARIABLE)
        return refuse(r, "only a variable has an initializer");
    f->spec.name = f->name;
    f->spec.inputs = f->inputs;
    f->spec.exact_name = true;
    return 0;
}

/* The node as the runtime builds it: fl_add_node checks and infers. */
static int build(reader *r, int index, node_fields *f)
{
    fl_graph *g = r->p->graph;
    char want[64], got[64];
    fl_device_scope_push(g, f->device);
    fl_node *n = fl_add_node(g, &f->spec);
    fl_device_pop(g);
    if (!n) {
        snprintf(r->why, sizeof r->why, "node %s", fl_graph_error(g));
        return -1;
    }
    if (!fl_shape_equal(n->shape, f->shape))
        return refuse(r, "its inputs make its shape %s, the partition says %s", fl_shape_format(n->shape, got, sizeof got),
                      fl_shape_format(f->shape, want, sizeof want));
    for (int i = 0; i < f->ncontrols; i++)
        fl_add_control_input(g, n, f->controls[i]);
    if (f->has_value) {
        n->value = fl_tensor_new(f->value.dtype, f->value.shape);
        fl_wire_tensor_read(&f->value, n->value->data);
    }
    if (n->op == FL_OP_VARIABLE) {
        n->trainable = f->trainable;
        fl_graph_register_variable(g, n);
    }
    r->initializer[index] = f->initializer;
    return 0;
}

static int read_node(reader *r, int index)
{
    node_fields f = {0};
    snprintf(r->node, sizeof r->node, "#%d", index);
    int rc = get_fields(r, index, &f) != 0 || build(r, index, &f) != 0 ? -1 : 0;
    free(f.inputs);
    free(f.controls);
    return rc;
}

/* A variable's initializer comes after it: resolved once every node is in. */
static int resolve_initializers(reader *r)
{
    for (int i = 0; i < r->nnodes; i++) {
        if (r->initializer[i] == FL_GRAPH_WIRE_NO_NODE)
            continue;
        fl_node *var = fl_graph_node(r->p->graph, i);
        snprintf(r->node, sizeof r->node, "%s", var->name);
        fl_node *init = r->initializer[i] < (uint32_t)r->nnodes ? fl_graph_node(r->p->graph, (int)r->initializer[i]) : NULL;
        if (!init || init->op != FL_OP_ASSIGN || init->inputs[0] != var)
            return refuse(r, "its initializer %u is not an Assign to it", (unsigned)r->initializer[i]);
        var->initializer = init;
    }
    return 0;
}

/* ---- the partition ---- */

static int get_header(reader *r)
{
    unsigned version;
    char job[FL_WIRE_MAX_NAME + 1];
    uint32_t task, nnodes;
    snprintf(r->node, sizeof r->node, "(header)");
    if (get_u8(r, "version", &version) != 0)
        return -1;
    if (version != FL_GRAPH_WIRE_VERSION) /* graph_wire.h says why only this one */
        return refuse(r, "partition format %u; this task reads format %u only (client and task of one build)",
                      version, FL_GRAPH_WIRE_VERSION);
    if (wire_get_name(&r->c, "job", job) != 0)
        return read_failed(r);
    if (get_u32(r, "task", &task) != 0 || get_u32(r, "node count", &nnodes) != 0)
        return -1;
    if (strlen(job) >= sizeof r->p->job || task > FL_WIRE_MAX_TASK)
        return refuse(r, "/job:%s/task:%u is no task name", job, (unsigned)task);
    snprintf(r->p->job, sizeof r->p->job, "%s", job); /* from here on, refusals name the task */
    r->p->task = (int)task;
    if (nnodes > FL_GRAPH_WIRE_MAX_NODES)
        return refuse(r, "%u nodes, over the %d a partition may have", (unsigned)nnodes, FL_GRAPH_WIRE_MAX_NODES);
    if ((uint64_t)nnodes * 64 > r->c.left)
        return refuse(r, "%u nodes cannot fit in the %zu bytes left", (unsigned)nnodes, r->c.left);
    r->nnodes = (int)nnodes;
    return 0;
}

static int read_partition(reader *r)
{
    if (get_header(r) != 0)
        return -1;
    r->p->graph = fl_graph_new();
    r->initializer = fl_xcalloc((size_t)r->nnodes + 1, sizeof *r->initializer);
    for (int i = 0; i < r->nnodes; i++)
        if (read_node(r, i) != 0)
            return -1;
    if (resolve_initializers(r) != 0)
        return -1;
    uint64_t seed;
    if (wire_get_u64(&r->c, "graph seed", &seed) != 0)
        return read_failed(r);
    fl_graph_set_random_seed(r->p->graph, seed);
    snprintf(r->node, sizeof r->node, "(end)");
    return wire_finish(&r->c) != 0 ? read_failed(r) : 0;
}

int fl_graph_wire_decode(const void *bytes, size_t len, fl_graph_partition *p)
{
    memset(p, 0, sizeof *p);
    reader *r = fl_xcalloc(1, sizeof *r);
    r->p = p;
    fl_wire_frame f = {.type = FL_WIRE_REGISTER_PARTITION, .payload = bytes, .payload_len = (uint32_t)len};
    int rc = len > FL_WIRE_MAX_PAYLOAD ? -1 : wire_cursor_open(&r->c, &f, true, "partition", &r->read);
    if (rc == 0)
        rc = read_partition(r);
    if (rc != 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "partition for /job:%s/task:%d refused: %s", p->job[0] ? p->job : "?",
                          p->task, r->why[0] ? r->why : "it is over the wire's size limit");
        fl_graph_partition_free(p);
        memset(p, 0, sizeof *p);
    }
    free(r->initializer);
    free(r);
    return rc;
}
