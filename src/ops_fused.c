/* ops_fused.c: the ops the session's fusion pass (session_fusion.c) runs in
 * place of several of the user's: FusedConv2D and FusedMatMul (the product,
 * a bias per output channel, then an optional ReLU) and MaxPoolReluGrad
 * (MaxPoolGrad, then ReluGrad). No builder: a user never makes them. */
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
