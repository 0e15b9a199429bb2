/* optimizers.cl: the update rules of SGD, Momentum and Adam, in place on the
 * variable and its slots: the rules of src/scalar_rules.h, the host's and
 * CUDA's own (TensorFlow's).
 *
 * These kernels do a few flops per element and move 12 to 28 bytes for it,
 * so they are bound by memory bandwidth, and the shape that reaches it is
 * the plainest: each work-item updates one run of OPT_CHUNK consecutive
 * elements in one pass over each array, a loop over restrict pointers that
 * the compiler turns into vector instructions (each lane computes the scalar
 * rule, so the vectors change no result). A work-item per element would pay
 * the work-item's own bookkeeping (and Adam's bias correction) per element. */

#define OPT_CHUNK 256 /* elements per work-item; as in cl/launch_state.c */

/* The work-item's run [*i, *end); false when it has none. */
bool opt_run(int n, int *i, int *end)
{
    *i = get_global_id(0) * OPT_CHUNK;
    *end = min(n, *i + OPT_CHUNK);
    return *i < n;
}

__kernel void apply_gradient_descent(__global float *restrict var,
                                     __global const float *restrict grad, float lr, int n)
{
    int i, end;
    if (!opt_run(n, &i, &end))
        return;
    for (; i < end; i++)
        var[i] = fl_rule_gradient_descent(var[i], lr, grad[i]);
}

__kernel void apply_momentum(__global float *restrict var, __global float *restrict accum,
                             __global const float *restrict grad, float lr, float mu, int nesterov,
                             int n)
{
    int i, end;
    if (!opt_run(n, &i, &end))
        return;
    for (; i < end; i++) {
        float a = fl_rule_momentum_accum(accum[i], mu, grad[i]);
        accum[i] = a;
        var[i] = fl_rule_momentum_var(var[i], lr, mu, a, grad[i], nesterov);
    }
}

/* lr_t comes from the beta powers the graph keeps as variables (read here,
 * so nothing goes back to the host), once per work-item. */
__kernel void apply_adam(__global float *restrict var, __global float *restrict m,
                         __global float *restrict v, __global const float *beta1_power,
                         __global const float *beta2_power, __global const float *restrict grad,
                         float lr, float b1, float b2, float eps, int n)
{
    int i, end;
    if (!opt_run(n, &i, &end))
        return;
    float lr_t = fl_rule_adam_lr(lr, beta1_power[0], beta2_power[0]);
    for (; i < end; i++) {
        float mm = fl_rule_adam_m(m[i], b1, grad[i]), vv = fl_rule_adam_v(v[i], b2, grad[i]);
        m[i] = mm;
        v[i] = vv;
        var[i] = fl_rule_adam_var(var[i], lr_t, mm, vv, eps);
    }
}
