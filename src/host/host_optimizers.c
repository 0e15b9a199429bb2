/* host_optimizers.c: the update rules of SGD, Momentum and Adam on the host.
 * Each kernel updates the variable (in[0]) and its slots in place, with the
 * rules of src/scalar_rules.h (TensorFlow's ApplyGradientDescent/ApplyMomentum/ApplyAdam).
 * The fused forms (ops_fused.c) update with the mean of several gradients,
 * made block by block in the same pass; MultiApplyAdam updates its
 * variables one after another with Adam's kernel. */
#include <string.h>

#include "host_kernels.h"
#include "scalar_rules.h"

/* Each update is element-wise: fl_parallel_for spreads it over the cores
 * (the controller of chapter 2 updates millions of weights per step). */
typedef struct {
    const fl_node *n;
    float *var, *slot1, *slot2; /* accum for Momentum; m and v for Adam */
    const float *grad;          /* NULL for a fused update: the mean of parts */
    const float *parts[FL_FUSED_MEAN_PARTS];
    int nparts;
    float divisor;
    float lr;                   /* Adam: lr_t, with the bias corrections folded in */
} update_args;

/* Elements per block of a fused update's mean: 4 kB, which stays in the
 * core's L1 cache between its making and the update's reading it. */
#define MEAN_BLOCK 1024

/* The gradient for elements [begin, end), as an array from begin: the
 * update's own, or the mean of its parts made into block exactly as AddN
 * (in input order) and then Div would make it, so fusing changes no bit. */
static const float *gradient_of(const update_args *u, int64_t begin, int64_t end, float *block)
{
    if (u->grad)
        return u->grad + begin;
    int64_t count = end - begin;
    memcpy(block, u->parts[0] + begin, (size_t)count * sizeof *block);
    for (int k = 1; k < u->nparts; k++) {
        const float *part = u->parts[k] + begin;
        for (int64_t i = 0; i < count; i++)
            block[i] += part[i];
    }
    for (int64_t i = 0; i < count; i++)
        block[i] = block[i] / u->divisor;
    return block;
}

static void gradient_descent_block(const update_args *u, int64_t begin, int64_t count, const float *grad)
{
    float *var = u->var + begin;
    for (int64_t i = 0; i < count; i++)
        var[i] = fl_rule_gradient_descent(var[i], u->lr, grad[i]);
}

static void momentum_block(const update_args *u, int64_t begin, int64_t count, const float *grad)
{
    float lr = u->lr, mu = u->n->attrs.momentum;
    float *var = u->var + begin, *accum = u->slot1 + begin;
    bool nesterov = u->n->attrs.use_nesterov;
    for (int64_t i = 0; i < count; i++) {
        accum[i] = fl_rule_momentum_accum(accum[i], mu, grad[i]);
        var[i] = fl_rule_momentum_var(var[i], lr, mu, accum[i], grad[i], nesterov);
    }
}

static void adam_block(const update_args *u, int64_t begin, int64_t count, const float *grad)
{
    float b1 = u->n->attrs.beta1, b2 = u->n->attrs.beta2, eps = u->n->attrs.epsilon, lr_t = u->lr;
    float *var = u->var + begin, *m = u->slot1 + begin, *v = u->slot2 + begin;
    for (int64_t i = 0; i < count; i++) {
        m[i] = fl_rule_adam_m(m[i], b1, grad[i]);
        v[i] = fl_rule_adam_v(v[i], b2, grad[i]);
        var[i] = fl_rule_adam_var(var[i], lr_t, m[i], v[i], eps);
    }
}

typedef void update_block_fn(const update_args *u, int64_t begin, int64_t count, const float *grad);

/* One core's range of an update, block by block (one block: the whole
 * range, when the gradient is the update's own input). */
static void update_range(const update_args *u, update_block_fn *update, int64_t begin, int64_t end)
{
    float block[MEAN_BLOCK];
    int64_t step = u->grad ? end - begin : MEAN_BLOCK;
    for (int64_t b = begin; b < end; b += step) {
        int64_t e = end - b < step ? end : b + step;
        update(u, b, e - b, gradient_of(u, b, e, block));
    }
}

static void gradient_descent_range(void *p, int64_t begin, int64_t end)
{
    update_range(p, gradient_descent_block, begin, end);
}
static void momentum_range(void *p, int64_t begin, int64_t end) { update_range(p, momentum_block, begin, end); }
static void adam_range(void *p, int64_t begin, int64_t end) { update_range(p, adam_block, begin, end); }

/* The variable and its slots, then the gradient: the update's input, or a
 * fused update's parts and divisor (ops_fused.c). */
static update_args update_args_of(const fl_node *n, fl_tensor *const *in)
{
    int before = fl_update_inputs_before_gradient(n->op);
    update_args u = {.n = n, .var = in[0]->data, .lr = n->attrs.learning_rate};
    u.slot1 = before > 1 ? in[1]->data : NULL;
    u.slot2 = before > 2 ? in[2]->data : NULL;
    if (!fl_op_def_of(n->op)->sig.fused) {
        u.grad = in[before]->data;
        return u;
    }
    u.nparts = n->ninputs - before - 1;
    for (int k = 0; k < u.nparts; k++)
        u.parts[k] = in[before + k]->data;
    u.divisor = ((const float *)in[n->ninputs - 1]->data)[0];
    return u;
}

FL_HOST_KERNEL(fl_host_apply_gradient_descent)
{
    (void)out;
    (void)ctx;
    update_args u = update_args_of(n, in);
    fl_parallel_for(fl_shape_size(in[0]->shape), gradient_descent_range, &u);
    return 0;
}

FL_HOST_KERNEL(fl_host_apply_momentum)
{
    (void)out;
    (void)ctx;
    update_args u = update_args_of(n, in);
    fl_parallel_for(fl_shape_size(in[0]->shape), momentum_range, &u);
    return 0;
}

/* Inputs: var, m, v, beta1_power, beta2_power, then the gradient. */
FL_HOST_KERNEL(fl_host_apply_adam)
{
    (void)out;
    (void)ctx;
    update_args u = update_args_of(n, in);
    float beta1_power = ((float *)in[3]->data)[0], beta2_power = ((float *)in[4]->data)[0];
    u.lr = fl_rule_adam_lr(n->attrs.learning_rate, beta1_power, beta2_power);
    fl_parallel_for(fl_shape_size(in[0]->shape), adam_range, &u);
    return 0;
}

/* MultiApplyAdam: var, m, v of each variable, the beta powers, each
 * gradient. On the host one launch buys nothing, so each variable is
 * updated in turn, exactly as its own ApplyAdam would update it. */
FL_HOST_KERNEL(fl_host_multi_apply_adam)
{
    (void)out;
    (void)ctx;
    int count = fl_multi_adam_count(n), powers = 3 * count;
    float beta1_power = ((float *)in[powers]->data)[0], beta2_power = ((float *)in[powers + 1]->data)[0];
    float lr_t = fl_rule_adam_lr(n->attrs.learning_rate, beta1_power, beta2_power);
    for (int k = 0; k < count; k++) {
        update_args u = {.n = n, .var = in[3 * k]->data, .slot1 = in[3 * k + 1]->data,
                         .slot2 = in[3 * k + 2]->data, .grad = in[powers + 2 + k]->data, .lr = lr_t};
        fl_parallel_for(fl_shape_size(in[3 * k]->shape), adam_range, &u);
    }
    return 0;
}
