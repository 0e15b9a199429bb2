/* ops_nn.c: activations (relu, sigmoid, tanh, softplus), softmax and the sparse
 * softmax cross-entropy loss. Each gradient is one fused op that takes dy
 * first, then what the rule needs (the input x or the output y). */
#include <stdio.h>

#include "runtime.h"

static fl_node *build_fused_grad(fl_graph *g, fl_op_kind op, const char *type, fl_node *const *inputs,
                                 int n)
{
    fl_node_spec spec = {.op = op, .default_name = type, .inputs = inputs, .ninputs = n,
                         .dtype = FL_FLOAT32};
    return fl_add_node(g, &spec);
}

static int infer_float_unary(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (n->inputs[0]->dtype != FL_FLOAT32) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "needs float32 input, got %s (%s); use fl_cast", n->inputs[0]->name,
                      fl_dtype_name(n->inputs[0]->dtype));
        return -1;
    }
    *out = in[0];
    return 0;
}

/* ---- ReLU: dy where x > 0 ---- */

static int grad_relu(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *inputs[2] = {dy, n->inputs[0]};
    dx[0] = build_fused_grad(g, FL_OP_RELU_GRAD, "ReluGrad", inputs, 2);
    return 0;
}

const fl_op_def fl_def_relu = {
    "Relu",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_float_unary, grad_relu};
const fl_op_def fl_def_relu_grad = {
    "ReluGrad",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    fl_infer_same_float_pair, NULL};

fl_node *fl_relu(fl_graph *g, fl_node *x, const char *name)
{
    return fl_build_unary(g, FL_OP_RELU, x, name, "Relu");
}

/* ---- Sigmoid: dy * y * (1 - y) ---- */

static int grad_sigmoid(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *inputs[2] = {dy, n};
    dx[0] = build_fused_grad(g, FL_OP_SIGMOID_GRAD, "SigmoidGrad", inputs, 2);
    return 0;
}

const fl_op_def fl_def_sigmoid = {
    "Sigmoid",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_float_unary, grad_sigmoid};
const fl_op_def fl_def_sigmoid_grad = {
    "SigmoidGrad",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    fl_infer_same_float_pair, NULL};

fl_node *fl_sigmoid(fl_graph *g, fl_node *x, const char *name)
{
    return fl_build_unary(g, FL_OP_SIGMOID, x, name, "Sigmoid");
}

/* ---- Tanh: dy * (1 - y^2) ---- */

static int grad_tanh(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *inputs[2] = {dy, n};
    dx[0] = build_fused_grad(g, FL_OP_TANH_GRAD, "TanhGrad", inputs, 2);
    return 0;
}

const fl_op_def fl_def_tanh = {
    "Tanh",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_float_unary, grad_tanh};
const fl_op_def fl_def_tanh_grad = {
    "TanhGrad",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    fl_infer_same_float_pair, NULL};

fl_node *fl_tanh(fl_graph *g, fl_node *x, const char *name)
{
    return fl_build_unary(g, FL_OP_TANH, x, name, "Tanh");
}

/* ---- Softplus: log(1 + e^x); its gradient dy * sigmoid(x) ---- */

static int grad_softplus(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *inputs[2] = {dy, n->inputs[0]};
    dx[0] = build_fused_grad(g, FL_OP_SOFTPLUS_GRAD, "SoftplusGrad", inputs, 2);
    return 0;
}

const fl_op_def fl_def_softplus = {
    "Softplus",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_float_unary, grad_softplus};
const fl_op_def fl_def_softplus_grad = {
    "SoftplusGrad",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    fl_infer_same_float_pair, NULL};

fl_node *fl_softplus(fl_graph *g, fl_node *x, const char *name)
{
    return fl_build_unary(g, FL_OP_SOFTPLUS, x, name, "Softplus");
}

/* ---- Softmax over the last axis: dx = y * (dy - sum(dy * y)) ---- */

static int infer_softmax(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (in[0].rank < 1) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "softmax needs at least one axis, got a scalar");
        return -1;
    }
    return infer_float_unary(n, in, out, st);
}

static int grad_softmax(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *inputs[2] = {dy, n};
    dx[0] = build_fused_grad(g, FL_OP_SOFTMAX_GRAD, "SoftmaxGrad", inputs, 2);
    return 0;
}

const fl_op_def fl_def_softmax = {
    "Softmax",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_softmax, grad_softmax};
/* SoftmaxGrad(dy, y): both of y's shape, rows over the last axis. */
static int infer_softmax_grad(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (in[0].rank < 1) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "softmax needs at least one axis, got a scalar dy");
        return -1;
    }
    return fl_infer_same_float_pair(n, in, out, st);
}

const fl_op_def fl_def_softmax_grad = {
    "SoftmaxGrad",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_softmax_grad, NULL};

fl_node *fl_softmax(fl_graph *g, fl_node *logits, const char *name)
{
    return fl_build_unary(g, FL_OP_SOFTMAX, logits, name, "Softmax");
}

/* ---- SparseSoftmaxCrossEntropyWithLogits(labels [N], logits [N,C]) -> [N] ----
 * Gradient for the logits: (softmax(logits) - onehot(labels)) * dy. */

/* labels [N] int32 and logits [N,C] float32 (inputs li and gi of n): [N]. */
static int check_xent(const fl_node *n, const fl_shape *in, int li, int gi, fl_shape *batch, fl_status *st)
{
    char sl[64], sg[64];
    fl_shape labels = in[li], logits = in[gi];
    if (fl_check_input_dtype(n, li, FL_INT32, st) != 0 || fl_check_input_dtype(n, gi, FL_FLOAT32, st) != 0)
        return -1;
    bool batch_ok = labels.rank == 1 && logits.rank == 2 &&
                    (labels.dims[0] < 0 || logits.dims[0] < 0 || labels.dims[0] == logits.dims[0]);
    if (!batch_ok) {
        fl_status_set(st, FL_INVALID_ARGUMENT,
                      "labels %s and logits %s do not match; expected labels [N] and logits [N,classes]",
                      fl_shape_format(labels, sl, sizeof sl), fl_shape_format(logits, sg, sizeof sg));
        return -1;
    }
    *batch = fl_shape_make(1, logits.dims[0] >= 0 ? logits.dims[0] : labels.dims[0]);
    return 0;
}

static int infer_sparse_xent(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    return check_xent(n, in, 0, 1, out, st);
}

/* SparseSoftmaxXentGrad(dy [N], labels [N], logits [N,C]) is shaped like logits. */
static int infer_sparse_xent_grad(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    fl_shape batch;
    if (check_xent(n, in, 1, 2, &batch, st) != 0 || fl_check_input_dtype(n, 0, FL_FLOAT32, st) != 0)
        return -1;
    fl_shape dy = in[0];
    if (dy.rank != 1 || (dy.dims[0] >= 0 && batch.dims[0] >= 0 && dy.dims[0] != batch.dims[0])) {
        char sd[64], sb[64];
        fl_status_set(st, FL_INVALID_ARGUMENT, "input 0 (%s), dy, has shape %s but the loss has %s", n->inputs[0]->name,
                      fl_shape_format(dy, sd, sizeof sd), fl_shape_format(batch, sb, sizeof sb));
        return -1;
    }
    *out = in[2];
    return 0;
}

static int grad_sparse_xent(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *inputs[3] = {dy, n->inputs[0], n->inputs[1]};
    dx[1] = build_fused_grad(g, FL_OP_SPARSE_XENT_GRAD, "SparseSoftmaxXentGrad", inputs, 3);
    return 0;
}

const fl_op_def fl_def_sparse_xent = {
    "SparseSoftmaxCrossEntropyWithLogits",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_sparse_xent, grad_sparse_xent};
const fl_op_def fl_def_sparse_xent_grad = {
    "SparseSoftmaxXentGrad",
    {.min_inputs = 3, .max_inputs = 3, .has_output = true},
    infer_sparse_xent_grad, NULL};

fl_node *fl_sparse_softmax_cross_entropy_with_logits(fl_graph *g, fl_node *labels, fl_node *logits,
                                                     const char *name)
{
    fl_node *inputs[2] = {labels, logits};
    fl_node_spec spec = {.op = FL_OP_SPARSE_XENT, .name = name,
                         .default_name = "SparseSoftmaxCrossEntropyWithLogits", .inputs = inputs,
                         .ninputs = 2, .dtype = FL_FLOAT32};
    return fl_add_node(g, &spec);
}
