/* op_registry.c: the op table: every op kind's definition, the stated
 * reasons why an op has no gradient, and what its signature says about
 * kernels and inputs. Each op family file
 * (ops_math.c, ops_nn.c, ...) defines its ops' builders, shape inference and
 * gradients; this table is where they all meet. */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

extern const fl_op_def fl_def_placeholder, fl_def_const, fl_def_variable, fl_def_fill,
    fl_def_random_uniform, fl_def_truncated_normal, fl_def_assign, fl_def_assign_add, fl_def_no_op;
extern const fl_op_def fl_def_matmul, fl_def_add, fl_def_sub, fl_def_mul, fl_def_div, fl_def_neg,
    fl_def_add_n, fl_def_sum_to_shape, fl_def_div_grad_b;
extern const fl_op_def fl_def_relu, fl_def_relu_grad, fl_def_sigmoid, fl_def_sigmoid_grad,
    fl_def_tanh, fl_def_tanh_grad, fl_def_softplus, fl_def_softplus_grad, fl_def_softmax, fl_def_softmax_grad, fl_def_sparse_xent,
    fl_def_sparse_xent_grad;
extern const fl_op_def fl_def_reduce_sum, fl_def_reduce_mean, fl_def_reduce_grad;
extern const fl_op_def fl_def_reshape, fl_def_concat, fl_def_slice, fl_def_slice_grad,
    fl_def_identity, fl_def_stop_gradient, fl_def_cast, fl_def_argmax, fl_def_equal;
extern const fl_op_def fl_def_conv2d, fl_def_conv2d_backprop_input, fl_def_conv2d_backprop_filter,
    fl_def_max_pool, fl_def_max_pool_grad;
extern const fl_op_def fl_def_apply_gradient_descent, fl_def_apply_momentum, fl_def_apply_adam;
extern const fl_op_def fl_def_fused_conv2d, fl_def_fused_matmul, fl_def_max_pool_relu_grad,
    fl_def_fused_apply_gradient_descent, fl_def_fused_apply_momentum, fl_def_fused_apply_adam,
    fl_def_multi_apply_adam;
extern const fl_op_def fl_def_send, fl_def_recv;
extern const fl_op_def fl_def_accumulator_apply_gradient, fl_def_accumulator_take_gradient,
    fl_def_accumulator_set_global_step, fl_def_accumulator_wait_step, fl_def_accumulator_close;

static const fl_op_def *const op_table[FL_OP_COUNT] = {
    [FL_OP_PLACEHOLDER] = &fl_def_placeholder,
    [FL_OP_CONST] = &fl_def_const,
    [FL_OP_VARIABLE] = &fl_def_variable,
    [FL_OP_FILL] = &fl_def_fill,
    [FL_OP_RANDOM_UNIFORM] = &fl_def_random_uniform,
    [FL_OP_TRUNCATED_NORMAL] = &fl_def_truncated_normal,
    [FL_OP_ASSIGN] = &fl_def_assign,
    [FL_OP_ASSIGN_ADD] = &fl_def_assign_add,
    [FL_OP_NO_OP] = &fl_def_no_op,
    [FL_OP_MATMUL] = &fl_def_matmul,
    [FL_OP_ADD] = &fl_def_add,
    [FL_OP_SUB] = &fl_def_sub,
    [FL_OP_MUL] = &fl_def_mul,
    [FL_OP_DIV] = &fl_def_div,
    [FL_OP_NEG] = &fl_def_neg,
    [FL_OP_ADD_N] = &fl_def_add_n,
    [FL_OP_SUM_TO_SHAPE] = &fl_def_sum_to_shape,
    [FL_OP_DIV_GRAD_B] = &fl_def_div_grad_b,
    [FL_OP_RELU] = &fl_def_relu,
    [FL_OP_RELU_GRAD] = &fl_def_relu_grad,
    [FL_OP_SIGMOID] = &fl_def_sigmoid,
    [FL_OP_SIGMOID_GRAD] = &fl_def_sigmoid_grad,
    [FL_OP_TANH] = &fl_def_tanh,
    [FL_OP_TANH_GRAD] = &fl_def_tanh_grad,
    [FL_OP_SOFTPLUS] = &fl_def_softplus,
    [FL_OP_SOFTPLUS_GRAD] = &fl_def_softplus_grad,
    [FL_OP_SOFTMAX] = &fl_def_softmax,
    [FL_OP_SOFTMAX_GRAD] = &fl_def_softmax_grad,
    [FL_OP_SPARSE_XENT] = &fl_def_sparse_xent,
    [FL_OP_SPARSE_XENT_GRAD] = &fl_def_sparse_xent_grad,
    [FL_OP_REDUCE_SUM] = &fl_def_reduce_sum,
    [FL_OP_REDUCE_MEAN] = &fl_def_reduce_mean,
    [FL_OP_REDUCE_GRAD] = &fl_def_reduce_grad,
    [FL_OP_RESHAPE] = &fl_def_reshape,
    [FL_OP_CONCAT] = &fl_def_concat,
    [FL_OP_SLICE] = &fl_def_slice,
    [FL_OP_SLICE_GRAD] = &fl_def_slice_grad,
    [FL_OP_IDENTITY] = &fl_def_identity,
    [FL_OP_STOP_GRADIENT] = &fl_def_stop_gradient,
    [FL_OP_CAST] = &fl_def_cast,
    [FL_OP_ARGMAX] = &fl_def_argmax,
    [FL_OP_EQUAL] = &fl_def_equal,
    [FL_OP_CONV2D] = &fl_def_conv2d,
    [FL_OP_CONV2D_BACKPROP_INPUT] = &fl_def_conv2d_backprop_input,
    [FL_OP_CONV2D_BACKPROP_FILTER] = &fl_def_conv2d_backprop_filter,
    [FL_OP_MAX_POOL] = &fl_def_max_pool,
    [FL_OP_MAX_POOL_GRAD] = &fl_def_max_pool_grad,
    [FL_OP_APPLY_GRADIENT_DESCENT] = &fl_def_apply_gradient_descent,
    [FL_OP_APPLY_MOMENTUM] = &fl_def_apply_momentum,
    [FL_OP_APPLY_ADAM] = &fl_def_apply_adam,
    [FL_OP_FUSED_CONV2D] = &fl_def_fused_conv2d,
    [FL_OP_FUSED_MATMUL] = &fl_def_fused_matmul,
    [FL_OP_MAX_POOL_RELU_GRAD] = &fl_def_max_pool_relu_grad,
    [FL_OP_FUSED_APPLY_GRADIENT_DESCENT] = &fl_def_fused_apply_gradient_descent,
    [FL_OP_FUSED_APPLY_MOMENTUM] = &fl_def_fused_apply_momentum,
    [FL_OP_FUSED_APPLY_ADAM] = &fl_def_fused_apply_adam,
    [FL_OP_MULTI_APPLY_ADAM] = &fl_def_multi_apply_adam,
    [FL_OP_SEND] = &fl_def_send,
    [FL_OP_RECV] = &fl_def_recv,
    [FL_OP_ACCUMULATOR_APPLY_GRADIENT] = &fl_def_accumulator_apply_gradient,
    [FL_OP_ACCUMULATOR_TAKE_GRADIENT] = &fl_def_accumulator_take_gradient,
    [FL_OP_ACCUMULATOR_SET_GLOBAL_STEP] = &fl_def_accumulator_set_global_step,
    [FL_OP_ACCUMULATOR_WAIT_STEP] = &fl_def_accumulator_wait_step,
    [FL_OP_ACCUMULATOR_CLOSE] = &fl_def_accumulator_close,
};

const fl_op_def *fl_op_def_of(fl_op_kind op) { return op_table[op]; }

/* ---- the stated exceptions of the add-an-op checklist (README's map) ----
 * An op with no gradient rule, or one no backend runs a kernel for, says why
 * here; tests/test_op_checklist.c holds every op to its rules or its reason. */

#define GRADIENT_OP "a gradient op, built only by a gradient rule; second derivatives are not supported"
#define SOURCE_OP "a source of values: it has no float input to pass a gradient to"
#define UPDATE_OP "an optimizer update: it writes a variable and is never differentiated"
#define TRANSFER_OP "it moves a value between tasks: its gradient is the other end's (the partitioner cuts after differentiation)"
#define ACCUMULATOR_OP "sync training's state, as in TensorFlow: gradients go in, their average comes out"
#define FUSED_OP "made by the session's fusion pass after the gradients are built; it is never differentiated"

static const char *const why_no_gradient[FL_OP_COUNT] = {
    [FL_OP_PLACEHOLDER] = SOURCE_OP,
    [FL_OP_CONST] = SOURCE_OP,
    [FL_OP_VARIABLE] = SOURCE_OP,
    [FL_OP_FILL] = SOURCE_OP " (OnesLike takes only a shape from its input)",
    [FL_OP_RANDOM_UNIFORM] = SOURCE_OP,
    [FL_OP_TRUNCATED_NORMAL] = SOURCE_OP,
    [FL_OP_ASSIGN] = "a state update, as in TensorFlow: assignments are not differentiated",
    [FL_OP_ASSIGN_ADD] = "a state update, as in TensorFlow: assignments are not differentiated",
    [FL_OP_NO_OP] = "it has no output",
    [FL_OP_SUM_TO_SHAPE] = GRADIENT_OP,
    [FL_OP_DIV_GRAD_B] = GRADIENT_OP,
    [FL_OP_RELU_GRAD] = GRADIENT_OP,
    [FL_OP_SIGMOID_GRAD] = GRADIENT_OP,
    [FL_OP_TANH_GRAD] = GRADIENT_OP,
    [FL_OP_SOFTPLUS_GRAD] = GRADIENT_OP,
    [FL_OP_SOFTMAX_GRAD] = GRADIENT_OP,
    [FL_OP_SPARSE_XENT_GRAD] = GRADIENT_OP,
    [FL_OP_REDUCE_GRAD] = GRADIENT_OP,
    [FL_OP_SLICE_GRAD] = GRADIENT_OP,
    [FL_OP_CONV2D_BACKPROP_INPUT] = GRADIENT_OP,
    [FL_OP_CONV2D_BACKPROP_FILTER] = GRADIENT_OP,
    [FL_OP_MAX_POOL_GRAD] = GRADIENT_OP,
    [FL_OP_APPLY_GRADIENT_DESCENT] = UPDATE_OP,
    [FL_OP_APPLY_MOMENTUM] = UPDATE_OP,
    [FL_OP_APPLY_ADAM] = UPDATE_OP,
    [FL_OP_FUSED_CONV2D] = FUSED_OP,
    [FL_OP_FUSED_MATMUL] = FUSED_OP,
    [FL_OP_MAX_POOL_RELU_GRAD] = FUSED_OP,
    [FL_OP_FUSED_APPLY_GRADIENT_DESCENT] = FUSED_OP,
    [FL_OP_FUSED_APPLY_MOMENTUM] = FUSED_OP,
    [FL_OP_FUSED_APPLY_ADAM] = FUSED_OP,
    [FL_OP_MULTI_APPLY_ADAM] = FUSED_OP,
    [FL_OP_SEND] = TRANSFER_OP,
    [FL_OP_RECV] = TRANSFER_OP,
    [FL_OP_ACCUMULATOR_APPLY_GRADIENT] = ACCUMULATOR_OP,
    [FL_OP_ACCUMULATOR_TAKE_GRADIENT] = ACCUMULATOR_OP,
    [FL_OP_ACCUMULATOR_SET_GLOBAL_STEP] = ACCUMULATOR_OP,
    [FL_OP_ACCUMULATOR_WAIT_STEP] = ACCUMULATOR_OP,
    [FL_OP_ACCUMULATOR_CLOSE] = ACCUMULATOR_OP,
};

const char *fl_op_why_no_gradient(fl_op_kind op) { return why_no_gradient[op]; }

/* ---- what the signature says for the checklist, the placer and the wire ---- */

/* The session itself gives a source its value on any device (placement.c
 * lets it sit anywhere), and an op with no output that writes nothing only
 * orders its control inputs: no backend needs a kernel for either. */
const char *fl_op_why_no_kernel(fl_op_kind op)
{
    const fl_op_signature *sig = &op_table[op]->sig;
    if (sig->between_tasks)
        return "it moves a value between tasks: a task's rendezvous device runs it, no compute backend";
    if (sig->in_container)
        return "its state lives in the task's container: the task's partition runs it on the host, no compute backend";
    if (sig->is_source)
        return "a source: the session gives it its value on any device (a feed, a constant, a variable's buffer)";
    if (!sig->has_output && sig->writes_inputs == 0)
        return "it has no output and writes nothing: the session only orders its control inputs";
    return NULL;
}

/* A fused op stands for ops every backend has: a backend without its
 * kernel runs them one by one (session_fusion.c asks has_kernel first). */
const char *fl_op_why_kernel_optional(fl_op_kind op)
{
    if (!op_table[op]->sig.fused)
        return NULL;
    return "a fused op: the session fuses only on a device whose backend has its kernel";
}

int fl_op_check_input_count(fl_op_kind op, int n, fl_status *st)
{
    const fl_op_signature *sig = &op_table[op]->sig;
    bool list = sig->max_inputs == FL_OP_INPUT_LIST;
    if (n >= sig->min_inputs && (list || n <= sig->max_inputs))
        return 0;
    if (list)
        fl_status_set(st, FL_INVALID_ARGUMENT, "a %s takes %d or more inputs, not %d", op_table[op]->type,
                      sig->min_inputs, n);
    else if (sig->min_inputs == sig->max_inputs)
        fl_status_set(st, FL_INVALID_ARGUMENT, "a %s takes %d inputs, not %d", op_table[op]->type, sig->min_inputs, n);
    else
        fl_status_set(st, FL_INVALID_ARGUMENT, "a %s takes %d to %d inputs, not %d", op_table[op]->type,
                      sig->min_inputs, sig->max_inputs, n);
    return -1;
}
