/* ops_math.c: matmul, element-wise arithmetic with broadcasting, add_n.
 * Builders, shape rules and gradients; the kernels live with each backend.
 * Gradients of a broadcast operand are summed back to its shape. */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

/* ---- MatMul ---- */

static int infer_matmul(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    fl_shape a = in[0], b = in[1];
    char sa[64], sb[64];
    if (fl_check_input_dtype(n, 0, FL_FLOAT32, st) != 0 || fl_check_input_dtype(n, 1, FL_FLOAT32, st) != 0)
        return -1;
    if (a.rank != 2 || b.rank != 2) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "matmul needs two matrices, got %s and %s",
                      fl_shape_format(a, sa, sizeof sa), fl_shape_format(b, sb, sizeof sb));
        return -1;
    }
    bool ta = n->attrs.transpose_a, tb = n->attrs.transpose_b;
    int m = ta ? a.dims[1] : a.dims[0], ka = ta ? a.dims[0] : a.dims[1];
    int kb = tb ? b.dims[1] : b.dims[0], nn = tb ? b.dims[0] : b.dims[1];
    if (ka >= 0 && kb >= 0 && ka != kb) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "cannot multiply %s%s by %s%s", fl_shape_format(a, sa, sizeof sa),
                      ta ? " transposed" : "", fl_shape_format(b, sb, sizeof sb), tb ? " transposed" : "");
        return -1;
    }
    *out = fl_shape_make(2, m, nn);
    return 0;
}

/* What every backend's MatMul kernel needs, worked out once: op(A) is
 * [M, K], so A is stored [M, K], or [K, M] when transposed. */
fl_matmul_dims fl_matmul_dims_of(const fl_node *n, fl_shape a, fl_shape out)
{
    fl_matmul_dims d = {.m = out.dims[0], .n = out.dims[1],
                        .transpose_a = n->attrs.transpose_a, .transpose_b = n->attrs.transpose_b};
    d.k = d.transpose_a ? a.dims[0] : a.dims[1];
    d.lda = d.transpose_a ? d.m : d.k;
    d.ldb = d.transpose_b ? d.k : d.n;
    return d;
}

static int grad_matmul(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *a = n->inputs[0], *b = n->inputs[1];
    bool ta = n->attrs.transpose_a, tb = n->attrs.transpose_b;
    if (!ta && !tb) {
        dx[0] = fl_matmul(g, dy, b, false, true, NULL);
        dx[1] = fl_matmul(g, a, dy, true, false, NULL);
    } else if (ta && !tb) {
        dx[0] = fl_matmul(g, b, dy, false, true, NULL);
        dx[1] = fl_matmul(g, a, dy, false, false, NULL);
    } else if (!ta && tb) {
        dx[0] = fl_matmul(g, dy, b, false, false, NULL);
        dx[1] = fl_matmul(g, dy, a, true, false, NULL);
    } else {
        dx[0] = fl_matmul(g, b, dy, true, true, NULL);
        dx[1] = fl_matmul(g, dy, a, true, true, NULL);
    }
    return 0;
}

const fl_op_def fl_def_matmul = {
    "MatMul",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_matmul, grad_matmul};

static int check_float(fl_graph *g, fl_node *x, const char *name, const char *what)
{
    if (x && x->dtype != FL_FLOAT32) {
        fl_graph_fail(g, name ? name : what, "%s needs float32, but %s is %s; use fl_cast", what,
                      x->name, fl_dtype_name(x->dtype));
        return -1;
    }
    return 0;
}

fl_node *fl_matmul(fl_graph *g, fl_node *a, fl_node *b, bool transpose_a, bool transpose_b,
                   const char *name)
{
    if (check_float(g, a, name, "MatMul") || check_float(g, b, name, "MatMul"))
        return NULL;
    fl_node *inputs[2] = {a, b};
    fl_node_spec spec = {.op = FL_OP_MATMUL, .name = name, .default_name = "MatMul",
                         .inputs = inputs, .ninputs = 2, .dtype = FL_FLOAT32};
    spec.attrs.transpose_a = transpose_a;
    spec.attrs.transpose_b = transpose_b;
    return fl_add_node(g, &spec);
}

/* ---- element-wise binary ops ---- */

static int infer_broadcast(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (n->inputs[0]->dtype != n->inputs[1]->dtype) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "inputs are %s and %s; cast one with fl_cast",
                      fl_dtype_name(n->inputs[0]->dtype), fl_dtype_name(n->inputs[1]->dtype));
        return -1;
    }
    return fl_broadcast_shape(in[0], in[1], out, st);
}

/* The gradient for an operand is dy summed over the axes it was broadcast on. */
static fl_node *reduce_to_operand(fl_graph *g, fl_node *grad, fl_node *operand, fl_node *n)
{
    if (operand->shape.rank == n->shape.rank)
        return grad; /* suffix broadcasting at equal rank is the identity */
    return fl_sum_to_shape(g, grad, operand, NULL);
}

static int grad_add(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    dx[0] = reduce_to_operand(g, dy, n->inputs[0], n);
    dx[1] = reduce_to_operand(g, dy, n->inputs[1], n);
    return 0;
}

static int grad_sub(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    dx[0] = reduce_to_operand(g, dy, n->inputs[0], n);
    dx[1] = fl_neg(g, reduce_to_operand(g, dy, n->inputs[1], n), NULL);
    return 0;
}

static int grad_mul(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *a = n->inputs[0], *b = n->inputs[1];
    dx[0] = reduce_to_operand(g, fl_mul(g, dy, b, NULL), a, n);
    dx[1] = reduce_to_operand(g, fl_mul(g, dy, a, NULL), b, n);
    return 0;
}

static int grad_div(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *a = n->inputs[0], *b = n->inputs[1];
    fl_node *inputs[3] = {dy, a, b};
    fl_node_spec spec = {.op = FL_OP_DIV_GRAD_B, .default_name = "DivGradB", .inputs = inputs,
                         .ninputs = 3, .dtype = FL_FLOAT32};
    dx[0] = reduce_to_operand(g, fl_div(g, dy, b, NULL), a, n);
    dx[1] = reduce_to_operand(g, fl_add_node(g, &spec), b, n);
    return 0;
}

const fl_op_def fl_def_add = {
    "Add",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_broadcast, grad_add};
const fl_op_def fl_def_sub = {
    "Sub",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_broadcast, grad_sub};
const fl_op_def fl_def_mul = {
    "Mul",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_broadcast, grad_mul};
const fl_op_def fl_def_div = {
    "Div",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_broadcast, grad_div};

fl_node *fl_add(fl_graph *g, fl_node *a, fl_node *b, const char *name)
{
    return fl_build_binary(g, FL_OP_ADD, a, b, name, "Add");
}

fl_node *fl_sub(fl_graph *g, fl_node *a, fl_node *b, const char *name)
{
    return fl_build_binary(g, FL_OP_SUB, a, b, name, "Sub");
}

fl_node *fl_mul(fl_graph *g, fl_node *a, fl_node *b, const char *name)
{
    return fl_build_binary(g, FL_OP_MUL, a, b, name, "Mul");
}

fl_node *fl_div(fl_graph *g, fl_node *a, fl_node *b, const char *name)
{
    return fl_build_binary(g, FL_OP_DIV, a, b, name, "Div");
}

/* DivGradB(dy, a, b) = -dy * a / b^2, shaped like dy: the gradient of a / b for b. */
static int infer_div_grad_b(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (fl_check_float_inputs(n, st) != 0 || fl_check_broadcasts_into(n, in, 1, in[0], st) != 0 ||
        fl_check_broadcasts_into(n, in, 2, in[0], st) != 0)
        return -1;
    *out = in[0];
    return 0;
}

const fl_op_def fl_def_div_grad_b = {
    "DivGradB",
    {.min_inputs = 3, .max_inputs = 3, .has_output = true},
    infer_div_grad_b, NULL};

/* ---- Neg ---- */

static int grad_neg(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    (void)n;
    dx[0] = fl_neg(g, dy, NULL);
    return 0;
}

const fl_op_def fl_def_neg = {
    "Neg",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    fl_infer_same_as_input0, grad_neg};

fl_node *fl_neg(fl_graph *g, fl_node *x, const char *name)
{
    return fl_build_unary(g, FL_OP_NEG, x, name, "Neg");
}

/* ---- AddN ---- */

static int infer_add_n(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    *out = in[0];
    for (int i = 1; i < n->ninputs; i++) {
        fl_shape merged;
        if (fl_check_input_dtype(n, i, n->inputs[0]->dtype, st) != 0)
            return -1;
        if (in[i].rank != in[0].rank || fl_broadcast_shape(*out, in[i], &merged, st) != 0) {
            char s0[64], si[64];
            fl_status_set(st, FL_INVALID_ARGUMENT, "input %d has shape %s, input 0 has %s; add_n needs equal shapes",
                          i, fl_shape_format(in[i], si, sizeof si), fl_shape_format(in[0], s0, sizeof s0));
            return -1;
        }
        *out = merged;
    }
    return 0;
}

static int grad_add_n(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    (void)g;
    for (int i = 0; i < n->ninputs; i++)
        dx[i] = dy;
    return 0;
}

const fl_op_def fl_def_add_n = {
    "AddN",
    {.min_inputs = 1, .max_inputs = FL_OP_INPUT_LIST, .has_output = true},
    infer_add_n, grad_add_n};

fl_node *fl_add_n(fl_graph *g, fl_node *const *inputs, int n, const char *name)
{
    if (n < 1)
        return fl_graph_fail(g, name ? name : "AddN", "add_n needs at least one input");
    for (int i = 1; i < n; i++)
        if (inputs[0] && inputs[i] && inputs[i]->dtype != inputs[0]->dtype)
            return fl_graph_fail(g, name ? name : "AddN", "inputs mix %s and %s",
                                 fl_dtype_name(inputs[0]->dtype), fl_dtype_name(inputs[i]->dtype));
    fl_node_spec spec = {.op = FL_OP_ADD_N, .name = name, .default_name = "AddN", .inputs = inputs,
                         .ninputs = n, .dtype = inputs[0] ? inputs[0]->dtype : FL_FLOAT32};
    return fl_add_node(g, &spec);
}

/* ---- SumToShape(x, like): x summed over its leading axes to like's shape ---- */

/* like must broadcast into x (a scalar or x's trailing dims): the kernel
 * adds x up in blocks of like's size. */
static int infer_sum_to_shape(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (fl_check_input_dtype(n, 0, FL_FLOAT32, st) != 0 || fl_check_broadcasts_into(n, in, 1, in[0], st) != 0)
        return -1;
    *out = in[1];
    return 0;
}

const fl_op_def fl_def_sum_to_shape = {
    "SumToShape",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_sum_to_shape, NULL};

fl_node *fl_sum_to_shape(fl_graph *g, fl_node *x, fl_node *like, const char *name)
{
    return fl_build_binary(g, FL_OP_SUM_TO_SHAPE, x, like, name, "SumToShape");
}
