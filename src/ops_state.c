/* ops_state.c: where values come from and where they are kept.
 * Placeholders (fed at run time), constants, variables (state that lives in
 * the session across steps), fills and random initial values, assignments,
 * NoOp/group for "run these first", and the optimizers' in-place updates. */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

/* The shape attr of a source: rank 0 to 4, every dimension known but a
 * placeholder's (-1, fed at run time). */
static int infer_from_attrs(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    (void)in;
    fl_shape s = n->attrs.shape;
    int lowest = n->op == FL_OP_PLACEHOLDER ? -1 : 0;
    bool ok = s.rank >= 0 && s.rank <= FL_MAX_RANK;
    for (int i = 0; ok && i < s.rank; i++)
        ok = s.dims[i] >= lowest;
    if (!ok) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "its shape attr (rank %d) is not valid: rank 0 to %d, dimensions >= %d",
                      s.rank, FL_MAX_RANK, lowest);
        return -1;
    }
    *out = s;
    return 0;
}

static int check_shape(fl_graph *g, const char *name, fl_shape shape, bool must_be_known)
{
    char s[64];
    bool ok = shape.rank >= 0 && shape.rank <= FL_MAX_RANK;
    for (int i = 0; ok && i < shape.rank; i++)
        ok = shape.dims[i] >= (must_be_known ? 0 : -1);
    if (!ok) {
        fl_graph_fail(g, name, "shape %s is not valid here (rank 0 to %d%s)",
                      shape.rank >= 0 && shape.rank <= FL_MAX_RANK ? fl_shape_format(shape, s, sizeof s) : "?",
                      FL_MAX_RANK, must_be_known ? ", every dimension known" : ", dimensions >= 0 or -1");
        return -1;
    }
    return 0;
}

/* ---- Placeholder ---- */

const fl_op_def fl_def_placeholder = {
    "Placeholder",
    {.min_inputs = 0, .max_inputs = 0, .has_output = true, .is_source = true},
    infer_from_attrs, NULL};

fl_node *fl_placeholder(fl_graph *g, fl_dtype dtype, fl_shape shape, const char *name)
{
    if (check_shape(g, name ? name : "Placeholder", shape, false) != 0)
        return NULL;
    if (dtype == FL_UINT8)
        return fl_graph_fail(g, name ? name : "Placeholder", "placeholders take float32 or int32, not uint8; "
                             "feed uint8 images through fl_dataset, whose batches are float32");
    fl_node_spec spec = {.op = FL_OP_PLACEHOLDER, .name = name, .default_name = "Placeholder",
                         .dtype = dtype};
    spec.attrs.shape = shape;
    return fl_add_node(g, &spec);
}

/* ---- Const ---- */

const fl_op_def fl_def_const = {
    "Const",
    {.min_inputs = 0, .max_inputs = 0, .has_output = true, .is_source = true},
    infer_from_attrs, NULL};

fl_node *fl_constant(fl_graph *g, const fl_tensor *value, const char *name)
{
    if (!value)
        return fl_graph_fail(g, name ? name : "Const", "the constant's value is NULL");
    if (value->device)
        return fl_graph_fail(g, name ? name : "Const", "the constant's value lies on %s: give it in host memory",
                             value->device);
    if (check_shape(g, name ? name : "Const", value->shape, true) != 0)
        return NULL;
    fl_node_spec spec = {.op = FL_OP_CONST, .name = name, .default_name = "Const",
                         .dtype = value->dtype};
    spec.attrs.shape = value->shape;
    fl_node *n = fl_add_node(g, &spec);
    if (n)
        n->value = fl_tensor_copy(value);
    return n;
}

fl_node *fl_scalar(fl_graph *g, float value, const char *name)
{
    fl_tensor t = {.dtype = FL_FLOAT32, .shape = {0, {0}}, .data = &value};
    return fl_constant(g, &t, name);
}

fl_node *fl_int_scalar(fl_graph *g, int32_t value, const char *name)
{
    fl_tensor t = {.dtype = FL_INT32, .shape = {0, {0}}, .data = &value};
    return fl_constant(g, &t, name);
}

/* ---- Variable: its value is the session's storage for it ---- */

const fl_op_def fl_def_variable = {
    "VariableV2",
    {.min_inputs = 0, .max_inputs = 0, .has_output = true, .is_source = true},
    infer_from_attrs, NULL};

/* ---- Fill, RandomUniform, TruncatedNormal: initial values ----
 * Fill with one input takes that input's run-time shape (ones_like). */

static int infer_fill(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (n->ninputs == 0)
        return infer_from_attrs(n, in, out, st);
    *out = in[0];
    return 0;
}

const fl_op_def fl_def_fill = {
    "Fill",
    {.min_inputs = 0, .max_inputs = 1, .has_output = true},
    infer_fill, NULL};
const fl_op_def fl_def_random_uniform = {
    "RandomUniform",
    {.min_inputs = 0, .max_inputs = 0, .has_output = true},
    infer_from_attrs, NULL};
const fl_op_def fl_def_truncated_normal = {
    "TruncatedNormal",
    {.min_inputs = 0, .max_inputs = 0, .has_output = true},
    infer_from_attrs, NULL};

fl_node *fl_ones_like(fl_graph *g, fl_node *x, const char *name)
{
    fl_node *inputs[1] = {x};
    fl_node_spec spec = {.op = FL_OP_FILL, .name = name, .default_name = "OnesLike",
                         .inputs = inputs, .ninputs = 1, .dtype = x ? x->dtype : FL_FLOAT32};
    spec.attrs.value = 1.0f;
    return fl_add_node(g, &spec);
}

/* ---- Assign, AssignAdd: write into a variable; the output is the variable ---- */

static int infer_assign(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    fl_shape merged;
    char sv[64], sx[64];
    if (n->inputs[0]->dtype != n->inputs[1]->dtype) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "variable %s is %s but the value is %s", n->inputs[0]->name,
                      fl_dtype_name(n->inputs[0]->dtype), fl_dtype_name(n->inputs[1]->dtype));
        return -1;
    }
    if (in[0].rank != in[1].rank || fl_broadcast_shape(in[0], in[1], &merged, st) != 0 ||
        !fl_shape_equal(merged, in[0])) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "variable %s is %s but the value is %s", n->inputs[0]->name,
                      fl_shape_format(in[0], sv, sizeof sv), fl_shape_format(in[1], sx, sizeof sx));
        return -1;
    }
    *out = in[0];
    return 0;
}

const fl_op_def fl_def_assign = {
    "Assign",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true, .writes_inputs = 1, .aliases = FL_ALIAS_WRITES_INPUT0},
    infer_assign, NULL};
const fl_op_def fl_def_assign_add = {
    "AssignAdd",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true, .writes_inputs = 1, .aliases = FL_ALIAS_WRITES_INPUT0},
    infer_assign, NULL};

static fl_node *build_assign(fl_graph *g, fl_op_kind op, fl_node *var, fl_node *value,
                             const char *name, const char *default_name)
{
    if (var && var->op != FL_OP_VARIABLE)
        return fl_graph_fail(g, name ? name : default_name, "%s is a %s, not a variable", var->name,
                             fl_node_op_type(var));
    fl_node *inputs[2] = {var, value};
    fl_node_spec spec = {.op = op, .name = name, .default_name = default_name, .inputs = inputs,
                         .ninputs = 2, .dtype = var ? var->dtype : FL_FLOAT32};
    return fl_add_node(g, &spec);
}

fl_node *fl_assign(fl_graph *g, fl_node *variable, fl_node *value, const char *name)
{
    return build_assign(g, FL_OP_ASSIGN, variable, value, name, "Assign");
}

fl_node *fl_assign_add(fl_graph *g, fl_node *variable, fl_node *value, const char *name)
{
    return build_assign(g, FL_OP_ASSIGN_ADD, variable, value, name, "AssignAdd");
}

/* ---- NoOp and group ---- */

static int infer_no_output(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    (void)n;
    (void)in;
    (void)st;
    *out = fl_shape_make(0);
    return 0;
}

const fl_op_def fl_def_no_op = {"NoOp", {.min_inputs = 0, .max_inputs = 0}, infer_no_output, NULL};

fl_node *fl_group(fl_graph *g, fl_node *const *nodes, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!nodes[i])
            return fl_graph_failed(g) ? NULL : fl_graph_fail(g, name ? name : "group", "node %d is NULL", i);
    fl_node_spec spec = {.op = FL_OP_NO_OP, .name = name, .default_name = "group_deps",
                         .dtype = FL_FLOAT32};
    fl_node *group = fl_add_node(g, &spec);
    for (int i = 0; group && i < n; i++)
        if (fl_add_control_input(g, group, nodes[i]) != 0)
            return NULL;
    return group;
}

/* The optimizers' updates (optimizers.c builds them): they write the variable
 * and its slots in place and have no output. */
/* Every input float32; the gradient and the slots (Momentum's accumulator,
 * Adam's m and v) shaped like the variable; Adam's beta powers one number each. */
static int infer_update(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    const fl_shape grad = in[n->ninputs - 1];
    char sv[64], sg[64];
    if (fl_check_float_inputs(n, st) != 0)
        return -1;
    if (!fl_shape_equal(grad, in[0])) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "gradient %s has shape %s but variable %s is %s",
                      n->inputs[n->ninputs - 1]->name, fl_shape_format(grad, sg, sizeof sg),
                      n->inputs[0]->name, fl_shape_format(in[0], sv, sizeof sv));
        return -1;
    }
    int slots = n->op == FL_OP_APPLY_ADAM ? 2 : n->ninputs - 2;
    for (int i = 1; i <= slots; i++)
        if (fl_check_same_shape(n, in, i, 0, st) != 0)
            return -1;
    for (int i = slots + 1; i < n->ninputs - 1; i++)
        if (fl_shape_size(in[i]) != 1 && fl_shape_size(in[i]) != -1) {
            fl_status_set(st, FL_INVALID_ARGUMENT, "input %d (%s) has shape %s; a beta power holds one number", i,
                          n->inputs[i]->name, fl_shape_format(in[i], sv, sizeof sv));
            return -1;
        }
    *out = fl_shape_make(0);
    return 0;
}

const fl_op_def fl_def_apply_gradient_descent = {
    "ApplyGradientDescent",
    {.min_inputs = 2, .max_inputs = 2, .writes_inputs = 1},
    infer_update, NULL};
const fl_op_def fl_def_apply_momentum = {
    "ApplyMomentum",
    {.min_inputs = 3, .max_inputs = 3, .writes_inputs = 2},
    infer_update, NULL};
const fl_op_def fl_def_apply_adam = {
    "ApplyAdam",
    {.min_inputs = 6, .max_inputs = 6, .writes_inputs = 3},
    infer_update, NULL};
