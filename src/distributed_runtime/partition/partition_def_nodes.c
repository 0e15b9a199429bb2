/* partition_def_nodes.c: a partition's NodeDefs back into a graph, trusting
 * nothing. Each node is rebuilt with the runtime's own fl_add_node, which
 * checks its inputs and infers its shape; before that, what the builders
 * would never give an op (a fused op, a list too long, a Placeholder
 * assigned to, an attr out of range) is refused here. Every refusal names
 * the node and the field or attr (INVALID_ARGUMENT). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_def.h"
#include "summary/graph_def.h"
#include "distributed_runtime/transport/wire_internal.h"

typedef struct {
    fl_graph *g;
    fl_status *st;
    const char *node; /* the node being read: its name, or "#7" */
    char index[16];
    const ProtobufCBinaryData **initializer; /* per node: its initializer's name, or NULL */
} reader;

static int refuse(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(reader *r, const char *fmt, ...)
{
    char what[FL_WIRE_ERROR_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    return fl_status_set(r->st, FL_INVALID_ARGUMENT, "node %s: %s", r->node, what);
}

/* ---- what each op may be given (its signature, fl_op_def.sig) ---- */

int fl_partition_def_check_inputs(fl_op_kind op, fl_node *const *inputs, int ninputs, fl_status *st)
{
    const fl_op_def *def = fl_op_def_of(op);
    if (def->sig.fused) /* the session's fusion pass makes them for one run */
        return fl_status_set(st, FL_INVALID_ARGUMENT, "a %s is made by the session's fusion pass, never sent in a "
                             "partition", def->type);
    if (fl_op_check_input_count(op, ninputs, st) != 0)
        return -1;
    if (ninputs > FL_WIRE_MAX_LIST)
        return fl_status_set(st, FL_INVALID_ARGUMENT, "a %s takes at most %d inputs on the wire, not %d", def->type,
                             FL_WIRE_MAX_LIST, ninputs);
    for (int i = 0; i < def->sig.writes_inputs && i < ninputs; i++) /* updated in place: the session keeps variables' buffers */
        if (inputs[i]->op != FL_OP_VARIABLE)
            return fl_status_set(st, FL_INVALID_ARGUMENT, "input %d of a %s must be a variable; %s is a %s", i, def->type,
                                 inputs[i]->name, fl_node_op_type(inputs[i]));
    return 0;
}

/* ---- one node's fields ---- */

typedef struct {
    fl_node_spec spec;
    fl_node **inputs, **controls;
    int ncontrols;
    bool has_shape, trainable;
    fl_shape shape; /* "_output_shapes" */
    const Tensorflow__TensorProto *value;
    const ProtobufCBinaryData *initializer; /* its name, in the message; NULL: none */
} node_fields;

static int find_op(reader *r, const char *type, fl_op_kind *op)
{
    for (int k = 0; k < FL_OP_COUNT; k++)
        if (strcmp(fl_op_def_of((fl_op_kind)k)->type, type) == 0) {
            *op = (fl_op_kind)k;
            return 0;
        }
    return refuse(r, "op %.64s is not one this task knows", type);
}

/* A device of the task's own: "" or "/cpu:0", "/gpu:1", never a task's. */
static int check_device(reader *r, const char *device)
{
    fl_device_name d;
    if (!device[0])
        return 0;
    if (strlen(device) >= FL_DEVICE_LEN || fl_parse_device(device, &d, NULL, 0) != 0)
        return refuse(r, "device %.64s does not parse: %s", device, fl_last_error());
    if (d.job[0] || d.task >= 0)
        return refuse(r, "device %s names a task; a partition's devices are its task's own (/cpu:0, /gpu:1)", device);
    return 0;
}

/* "name" or "^name" (a control input, after the others), each an earlier node. */
static int read_inputs(reader *r, const Tensorflow__NodeDef *def, node_fields *f)
{
    if (def->n_input > FL_WIRE_MAX_LIST)
        return refuse(r, "%zu inputs, over the wire's %d", def->n_input, FL_WIRE_MAX_LIST);
    f->inputs = fl_xcalloc(def->n_input + 1, sizeof *f->inputs);
    f->controls = fl_xcalloc(def->n_input + 1, sizeof *f->controls);
    for (size_t i = 0; i < def->n_input; i++) {
        bool control = def->input[i][0] == '^';
        fl_node *n = fl_graph_find(r->g, def->input[i] + control);
        if (!n)
            return refuse(r, "input %.64s is not an earlier node", def->input[i]);
        if (control) {
            f->controls[f->ncontrols++] = n;
            continue;
        }
        if (f->ncontrols)
            return refuse(r, "input %s comes after a control input", n->name);
        if (!n->has_output)
            return refuse(r, "input %s has no value (a %s)", n->name, fl_node_op_type(n));
        f->inputs[f->spec.ninputs++] = n;
    }
    return 0;
}

/* The attrs of a node rather than of its op's settings (fl_attrs). */
enum { OWN_DTYPE, OWN_OUTPUT_SHAPES, OWN_VALUE, OWN_TRAINABLE, OWN_INITIALIZER, OWN_COUNT };
static const struct {
    const char *key;
    Tensorflow__AttrValue__ValueCase value_case;
} OWN[OWN_COUNT] = {{"dtype", TENSORFLOW__ATTR_VALUE__VALUE_TYPE},
                    {"_output_shapes", TENSORFLOW__ATTR_VALUE__VALUE_LIST},
                    {"value", TENSORFLOW__ATTR_VALUE__VALUE_TENSOR},
                    {"_trainable", TENSORFLOW__ATTR_VALUE__VALUE_B},
                    {"_initializer", TENSORFLOW__ATTR_VALUE__VALUE_S}};

static int read_own_attr(reader *r, int which, const Tensorflow__AttrValue *v, node_fields *f)
{
    fl_status st = {0};
    if (!v || v->value_case != OWN[which].value_case)
        return refuse(r, "attr %s has the wrong kind of value", OWN[which].key);
    switch (which) {
    case OWN_DTYPE:
        if (fl_graph_def_read_dtype(v->type, &f->spec.dtype) != 0)
            return refuse(r, "attr dtype is type %d, neither DT_FLOAT nor DT_INT32", (int)v->type);
        return 0;
    case OWN_OUTPUT_SHAPES:
        if (v->list->n_shape != 1 || v->list->n_i || v->list->n_b)
            return refuse(r, "attr _output_shapes is not a list of one shape");
        if (fl_graph_def_read_shape(v->list->shape[0], &f->shape, &st) != 0)
            return refuse(r, "attr _output_shapes has %s", st.message);
        f->has_shape = true;
        return 0;
    case OWN_VALUE: f->value = v->tensor; return 0;
    case OWN_TRAINABLE: f->trainable = v->b; return 0;
    default: /* a name, checked when all nodes are in */
        if (v->s.len == 0 || v->s.len > FL_WIRE_MAX_NAME || memchr(v->s.data, 0, v->s.len))
            return refuse(r, "attr _initializer is no node name");
        f->initializer = &v->s;
        return 0;
    }
}

static int read_attrs(reader *r, const Tensorflow__NodeDef *def, node_fields *f)
{
    for (size_t i = 0; i < def->n_attr; i++) {
        const Tensorflow__AttrEntry *e = def->attr[i];
        int own = 0;
        while (own < OWN_COUNT && strcmp(e->key, OWN[own].key) != 0)
            own++;
        if (own < OWN_COUNT) {
            if (read_own_attr(r, own, e->value, f) != 0)
                return -1;
            continue;
        }
        fl_status st = {0};
        int known = fl_graph_def_read_attr(e, &f->spec.attrs, &st);
        if (known < 0)
            return refuse(r, "%s", st.message);
        if (known == 0)
            return refuse(r, "attr %.64s is not one a partition carries", e->key);
    }
    return 0;
}

/* ---- the attrs' ranges, which the op's shape function trusts ---- */

static int check_ints(reader *r, const fl_attrs *a)
{
    if (a->axis < -FL_MAX_RANK || a->axis > FL_MAX_RANK)
        return refuse(r, "attr axis %d outside -%d..%d", a->axis, FL_MAX_RANK, FL_MAX_RANK);
    if (a->num_parts < 0 || a->part < 0 || (a->num_parts > 0 && a->part >= a->num_parts))
        return refuse(r, "attr part %d of num_parts %d", a->part, a->num_parts);
    if (a->begin < 0 || a->size < 0)
        return refuse(r, "attrs begin %d and size %d make no slice", a->begin, a->size);
    const int window[] = {a->stride_h, a->stride_w, a->ksize_h, a->ksize_w};
    for (int i = 0; i < 4; i++)
        if (window[i] < 0 || window[i] > 65536)
            return refuse(r, "attr stride or ksize %d outside 0..65536", window[i]);
    return 0;
}

/* A shape with unknown dims only where the op allows them; one it will
 * allocate (a variable, a fill) known and within the wire's limit. */
static int check_shape_attr(reader *r, fl_op_kind op, const fl_shape *s)
{
    bool unknown_ok = op == FL_OP_PLACEHOLDER || op == FL_OP_RESHAPE || op == FL_OP_RECV;
    bool allocates = op == FL_OP_VARIABLE || op == FL_OP_FILL || op == FL_OP_RANDOM_UNIFORM ||
                     op == FL_OP_TRUNCATED_NORMAL || op == FL_OP_CONST;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 1 && !unknown_ok)
            return refuse(r, "attr shape has dimension %d", s->dims[i]);
    int64_t count;
    fl_status why = {0};
    if (allocates && wire_check_shape(s->rank, s->dims, &count, &why) != 0)
        return refuse(r, "attr %s", why.message);
    return 0;
}

/* A Send's or Recv's peer names a task ("/job:ps/task:0"). */
static int check_peer(reader *r, const char *peer)
{
    fl_device_name d;
    if (peer[0] && (fl_parse_device(peer, &d, NULL, 0) != 0 || !d.job[0] || d.task < 0))
        return refuse(r, "attr peer_task %s is no task name (/job:NAME/task:N)", peer);
    return 0;
}

/* A Const's value, and only a Const's, of the node's dtype and shape. */
static int check_value(reader *r, const node_fields *f)
{
    fl_status st = {0};
    fl_shape shape;
    bool is_const = f->spec.op == FL_OP_CONST;
    if (!f->value != !is_const)
        return refuse(r, f->value ? "only a Const carries a value" : "a Const without its value");
    if (!f->value)
        return 0;
    fl_dtype dtype;
    if (!f->value->tensor_shape || fl_graph_def_read_shape(f->value->tensor_shape, &shape, &st) != 0 ||
        fl_graph_def_read_dtype(f->value->dtype, &dtype) != 0)
        return refuse(r, "attr value has no shape or dtype of a tensor %s", st.message);
    if (dtype != f->spec.dtype || !fl_shape_equal(shape, f->spec.attrs.shape))
        return refuse(r, "attr value's dtype or shape differ from the node's");
    if (f->value->base.n_unknown_fields || f->value->tensor_content.len != (size_t)fl_shape_size(shape) * 4)
        return refuse(r, "attr value holds %zu bytes, not 4 for each of %lld elements",
                      f->value->tensor_content.len, (long long)fl_shape_size(shape));
    return 0;
}

static int check_fields(reader *r, node_fields *f)
{
    fl_status why = {0};
    if (fl_partition_def_check_inputs(f->spec.op, f->inputs, f->spec.ninputs, &why) != 0)
        return refuse(r, "%s", why.message);
    if (check_ints(r, &f->spec.attrs) != 0 || check_shape_attr(r, f->spec.op, &f->spec.attrs.shape) != 0 ||
        check_peer(r, f->spec.attrs.peer_task) != 0 || check_value(r, f) != 0)
        return -1;
    if (f->spec.op != FL_OP_VARIABLE && (f->initializer || f->trainable))
        return refuse(r, "only a variable has an initializer or is trainable");
    if (fl_op_def_of(f->spec.op)->sig.has_output && !f->has_shape)
        return refuse(r, "its _output_shapes attr is missing");
    return 0;
}

/* ---- the node as the runtime builds it: fl_add_node checks and infers ---- */

static int build(reader *r, node_fields *f, const char *device)
{
    char want[64], got[64];
    fl_device_scope_push(r->g, device);
    fl_node *n = fl_add_node(r->g, &f->spec);
    fl_device_pop(r->g);
    if (!n) {
        return fl_status_set(r->st, FL_INVALID_ARGUMENT, "node %s", fl_graph_error(r->g));
    }
    if (f->has_shape && !fl_shape_equal(n->shape, f->shape))
        return refuse(r, "its inputs make its shape %s, its _output_shapes says %s",
                      fl_shape_format(n->shape, got, sizeof got), fl_shape_format(f->shape, want, sizeof want));
    for (int i = 0; i < f->ncontrols; i++)
        fl_add_control_input(r->g, n, f->controls[i]);
    if (f->value) {
        n->value = fl_tensor_new(f->spec.dtype, f->spec.attrs.shape);
        fl_wire_tensor t = {.data = f->value->tensor_content.data, .bytes = f->value->tensor_content.len};
        fl_wire_tensor_read(&t, n->value->data);
    }
    if (n->op == FL_OP_VARIABLE) {
        n->trainable = f->trainable;
        fl_graph_register_variable(r->g, n);
    }
    return 0;
}

static int read_node(reader *r, int index, const Tensorflow__NodeDef *def)
{
    node_fields f = {0};
    snprintf(r->index, sizeof r->index, "#%d", index);
    r->node = r->index;
    fl_status why = {0};
    const char *where;
    uint32_t unknown = wire_unknown_field(&def->base, &where);
    if (unknown)
        return refuse(r, "field %u is not one this task knows", unknown);
    if (wire_check_name((const unsigned char *)def->name, strlen(def->name), &why) != 0)
        return refuse(r, "its name %s", why.message);
    r->node = def->name;
    f.spec.name = def->name;
    f.spec.exact_name = true;
    int rc = find_op(r, def->op, &f.spec.op) != 0 || check_device(r, def->device) != 0 ||
                     read_inputs(r, def, &f) != 0 || read_attrs(r, def, &f) != 0 || check_fields(r, &f) != 0
                 ? -1
                 : 0;
    f.spec.inputs = f.inputs;
    if (rc == 0)
        rc = build(r, &f, def->device);
    r->initializer[index] = f.initializer;
    free(f.inputs);
    free(f.controls);
    return rc;
}

/* A variable's initializer comes after it: resolved once every node is in. */
static int resolve_initializers(reader *r, int count)
{
    for (int i = 0; i < count; i++) {
        if (!r->initializer[i])
            continue;
        fl_node *var = fl_graph_node(r->g, i);
        char name[FL_WIRE_MAX_NAME + 1];
        memcpy(name, r->initializer[i]->data, r->initializer[i]->len);
        name[r->initializer[i]->len] = '\0';
        r->node = var->name;
        fl_node *init = fl_graph_find(r->g, name);
        if (!init || init->op != FL_OP_ASSIGN || init->inputs[0] != var)
            return refuse(r, "its initializer %s is not an Assign to it", name);
        var->initializer = init;
    }
    return 0;
}

int fl_partition_def_read_nodes(const Tensorflow__GraphDef *def, fl_graph *g, fl_status *st)
{
    reader r = {.g = g, .st = st, .node = "(graph)"};
    r.initializer = fl_xcalloc(def->n_node + 1, sizeof *r.initializer);
    int rc = 0;
    for (size_t i = 0; i < def->n_node && rc == 0; i++)
        rc = read_node(&r, (int)i, def->node[i]);
    if (rc == 0)
        rc = resolve_initializers(&r, (int)def->n_node);
    free(r.initializer);
    return rc;
}
