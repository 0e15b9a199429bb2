/* host_optimizers.c: the update rules of SGD, Momentum and Adam on the host.
 * Each kernel updates the variable (in[0]) and its slots in place, with the
 * rules of src/scalar_rules.h (TensorFlow's ApplyGradientDescent/ApplyMomentum/ApplyAdam). */
#include "host_kernels.h"
#include "scalar_rules.h"

/* Each update is element-wise: fl_parallel_for spreads it over the cores
 * (the controller of chapter 2 updates millions of weights per step). */
typedef struct {
    const fl_node *n;
    float *var, *slot1, *slot2; /* accum for Momentum; m and v for Adam */
    const float *grad;
    float lr;                   /* Adam: lr_t, with the bias corrections folded in */
} update_args;

static void gradient_descent_range(void *p, int64_t begin, int64_t end)
{
    const update_args *u = p;
    for (int64_t i = begin; i < end; i++)
        u->var[i] = fl_rule_gradient_descent(u->var[i], u->lr, u->grad[i]);
}

FL_HOST_KERNEL(fl_host_apply_gradient_descent)
{
    (void)out;
    (void)ctx;
    update_args u = {.n = n, .var = in[0]->data, .grad = in[1]->data, .lr = n->attrs.learning_rate};
    fl_parallel_for(fl_shape_size(in[0]->shape), gradient_descent_range, &u);
    return 0;
}

static void momentum_range(void *p, int64_t begin, int64_t end)
{
    const update_args *u = p;
    float lr = u->lr, mu = u->n->attrs.momentum;
    float *var = u->var, *accum = u->slot1;
    const float *grad = u->grad;
    bool nesterov = u->n->attrs.use_nesterov;
    for (int64_t i = begin; i < end; i++) {
        accum[i] = fl_rule_momentum_accum(accum[i], mu, grad[i]);
        var[i] = fl_rule_momentum_var(var[i], lr, mu, accum[i], grad[i], nesterov);
    }
}

FL_HOST_KERNEL(fl_host_apply_momentum)
{
    (void)out;
    (void)ctx;
    update_args u = {.n = n, .var = in[0]->data, .slot1 = in[1]->data, .grad = in[2]->data,
                     .lr = n->attrs.learning_rate};
    fl_parallel_for(fl_shape_size(in[0]->shape), momentum_range, &u);
    return 0;
}

/* Inputs: var, m, v, beta1_power, beta2_power, grad. */
static void adam_range(void *p, int64_t begin, int64_t end)
{
    const update_args *u = p;
    float b1 = u->n->attrs.beta1, b2 = u->n->attrs.beta2, eps = u->n->attrs.epsilon, lr_t = u->lr;
    float *var = u->var, *m = u->slot1, *v = u->slot2;
    const float *grad = u->grad;
    for (int64_t i = begin; i < end; i++) {
        m[i] = fl_rule_adam_m(m[i], b1, grad[i]);
        v[i] = fl_rule_adam_v(v[i], b2, grad[i]);
        var[i] = fl_rule_adam_var(var[i], lr_t, m[i], v[i], eps);
    }
}

FL_HOST_KERNEL(fl_host_apply_adam)
{
    (void)out;
    (void)ctx;
    float beta1_power = ((float *)in[3]->data)[0], beta2_power = ((float *)in[4]->data)[0];
    float lr_t = fl_rule_adam_lr(n->attrs.learning_rate, beta1_power, beta2_power);
    update_args u = {.n = n, .var = in[0]->data, .slot1 = in[1]->data, .slot2 = in[2]->data,
                     .grad = in[5]->data, .lr = lr_t};
    fl_parallel_for(fl_shape_size(in[0]->shape), adam_range, &u);
    return 0;
}
