/* ops_fused.c: the ops the session's fusion pass (session_fusion.c) runs in
 * place of several of the user's: FusedConv2D and FusedMatMul (the product,
 * a bias per output channel, then an optional ReLU), MaxPoolReluGrad
 * (MaxPoolGrad, then ReluGrad) and the fused updates (an update of the mean
 * of several gradients). No builder: a user never makes them. */
#include <stdio.h>

#include "runtime.h"

extern const fl_op_def fl_def_conv2d, fl_def_matmul, fl_def_max_pool_grad;

/* Input 2, the bias, holds one float per column of the product. */
static int check_bias(fl_shape product, fl_shape bias, fl_status *st)
{
    int64_t columns = product.rank > 0 ? product.dims[product.rank - 1] : 0;
    if (bias.rank == 1 && (bias.dims[0] == columns || bias.dims[0] < 0 || columns < 0))
        return 0;
    char got[64];
    fl_status_set(st, FL_INVALID_ARGUMENT, "the bias must be [%lld], one per output channel, got %s",
                  (long long)columns, fl_shape_format(bias, got, sizeof got));
    return -1;
}

/* The product's own rule on inputs 0 and 1 (the fused node keeps the
 * product's attrs), then the bias. */
static int infer_fused_conv2d(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (fl_def_conv2d.infer(n, in, out, st) != 0)
        return -1;
    return check_bias(*out, in[2], st);
}

static int infer_fused_matmul(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (fl_def_matmul.infer(n, in, out, st) != 0)
        return -1;
    return check_bias(*out, in[2], st);
}

const fl_op_def fl_def_fused_conv2d = {
    "FusedConv2D",
    {.min_inputs = 3, .max_inputs = 3, .has_output = true, .fused = true},
    infer_fused_conv2d, NULL};
const fl_op_def fl_def_fused_matmul = {
    "FusedMatMul",
    {.min_inputs = 3, .max_inputs = 3, .has_output = true, .fused = true},
    infer_fused_matmul, NULL};

/* MaxPoolReluGrad(dy, x, y) takes MaxPoolGrad's inputs and is shaped like x. */
static int infer_max_pool_relu_grad(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    return fl_def_max_pool_grad.infer(n, in, out, st);
}

const fl_op_def fl_def_max_pool_relu_grad = {
    "MaxPoolReluGrad",
    {.min_inputs = 3, .max_inputs = 3, .has_output = true, .fused = true},
    infer_max_pool_relu_grad, NULL};

/* ---- FusedApplyGradientDescent, FusedApplyMomentum, FusedApplyAdam ----
 * An update whose gradient is Div(AddN(g1..gk), d), the towers' mean: its
 * kernel sums and divides each element as AddN and Div would, in its one
 * pass over the variable (issue 42). Inputs: the update's own before its
 * gradient, g1..gk, then d. */

int fl_update_inputs_before_gradient(fl_op_kind op)
{
    switch (op) {
    case FL_OP_APPLY_GRADIENT_DESCENT:
    case FL_OP_FUSED_APPLY_GRADIENT_DESCENT: return 1;
    case FL_OP_APPLY_MOMENTUM:
    case FL_OP_FUSED_APPLY_MOMENTUM: return 2;
    default: return 5;
    }
}

/* The slots (inputs 1 to writes_inputs - 1) and every gradient shaped like
 * the variable; Adam's beta powers (up to the gradients) and the divisor
 * (last) one number each. */
static int infer_fused_update(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    int writes = fl_op_def_of(n->op)->sig.writes_inputs, before = fl_update_inputs_before_gradient(n->op);
    if (fl_check_float_inputs(n, st) != 0)
        return -1;
    for (int i = 1; i < n->ninputs; i++) {
        bool one_number = (i >= writes && i < before) || i == n->ninputs - 1;
        if (!one_number && fl_check_same_shape(n, in, i, 0, st) != 0)
            return -1;
        if (one_number && fl_shape_size(in[i]) != 1) {
            char got[64];
            fl_status_set(st, FL_INVALID_ARGUMENT, "input %d (%s) has shape %s; it must hold one number", i,
                          n->inputs[i]->name, fl_shape_format(in[i], got, sizeof got));
            return -1;
        }
    }
    *out = fl_shape_make(0);
    return 0;
}

const fl_op_def fl_def_fused_apply_gradient_descent = {
    "FusedApplyGradientDescent",
    {.min_inputs = 3, .max_inputs = 2 + FL_FUSED_MEAN_PARTS, .writes_inputs = 1, .fused = true},
    infer_fused_update, NULL};
const fl_op_def fl_def_fused_apply_momentum = {
    "FusedApplyMomentum",
    {.min_inputs = 4, .max_inputs = 3 + FL_FUSED_MEAN_PARTS, .writes_inputs = 2, .fused = true},
    infer_fused_update, NULL};
const fl_op_def fl_def_fused_apply_adam = {
    "FusedApplyAdam",
    {.min_inputs = 7, .max_inputs = 6 + FL_FUSED_MEAN_PARTS, .writes_inputs = 3, .fused = true},
    infer_fused_update, NULL};

/* ---- MultiApplyAdam: fused Adam over N variables (issue 41 item 4) ----
 * ApplyAdams that share their beta powers, rate, betas and epsilon, run as
 * one kernel, each element by ApplyAdam's own rules. Inputs: var, m, v of
 * variable 0, of variable 1, ... (all updated in place), beta1_power,
 * beta2_power, then each variable's gradient. */

int fl_node_writes_inputs(const fl_node *n)
{
    if (n->op == FL_OP_MULTI_APPLY_ADAM)
        return 3 * fl_multi_adam_count(n);
    return fl_op_def_of(n->op)->sig.writes_inputs;
}

static int infer_multi_apply_adam(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    int count = fl_multi_adam_count(n), powers = 3 * count;
    if (fl_check_float_inputs(n, st) != 0)
        return -1;
    if ((n->ninputs - 2) % 4 != 0) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "a MultiApplyAdam takes 4 inputs per variable and 2, not %d",
                      n->ninputs);
        return -1;
    }
    for (int k = 0; k < count; k++)
        if (fl_check_same_shape(n, in, 3 * k + 1, 3 * k, st) != 0 ||
            fl_check_same_shape(n, in, 3 * k + 2, 3 * k, st) != 0 ||
            fl_check_same_shape(n, in, powers + 2 + k, 3 * k, st) != 0)
            return -1;
    for (int i = powers; i < powers + 2; i++)
        if (fl_shape_size(in[i]) != 1) {
            char got[64];
            fl_status_set(st, FL_INVALID_ARGUMENT, "input %d (%s) has shape %s; a beta power holds one number", i,
                          n->inputs[i]->name, fl_shape_format(in[i], got, sizeof got));
            return -1;
        }
    *out = fl_shape_make(0);
    return 0;
}

/* writes_inputs: the first variable's three; fl_node_writes_inputs gives all. */
const fl_op_def fl_def_multi_apply_adam = {
    "MultiApplyAdam",
    {.min_inputs = 6, .max_inputs = 4 * FL_MULTI_ADAM_VARIABLES + 2, .writes_inputs = 3, .fused = true},
    infer_multi_apply_adam, NULL};
