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

/* The gradient at i: part 0 for a plain update; for a fused one (an update
 * of the towers' mean, src/ops_fused.c) its parts added in order, as AddN's
 * kernels add them, then divided once, as Div's: fusing changes no bit.
 * Parts past nparts are NULL and never read. OpenCL C passes no array of
 * buffers, so the eight are parameters, named once here for the three kernels. */
#define GRADIENT_PARTS __global const float *p0, __global const float *p1, __global const float *p2, \
    __global const float *p3, __global const float *p4, __global const float *p5, __global const float *p6, \
    __global const float *p7, int nparts, __global const float *divisor

float gradient_at(int i, GRADIENT_PARTS)
{
    float g = p0[i];
    if (nparts > 1) g += p1[i];
    if (nparts > 2) g += p2[i];
    if (nparts > 3) g += p3[i];
    if (nparts > 4) g += p4[i];
    if (nparts > 5) g += p5[i];
    if (nparts > 6) g += p6[i];
    if (nparts > 7) g += p7[i];
    return divisor ? g / divisor[0] : g;
}

#define GRADIENT_AT(i) gradient_at(i, p0, p1, p2, p3, p4, p5, p6, p7, nparts, divisor)

__kernel void apply_gradient_descent(__global float *restrict var, GRADIENT_PARTS, float lr, int n)
{
    int i, end;
    if (!opt_run(n, &i, &end))
        return;
    for (; i < end; i++)
        var[i] = fl_rule_gradient_descent(var[i], lr, GRADIENT_AT(i));
}

__kernel void apply_momentum(__global float *restrict var, __global float *restrict accum, GRADIENT_PARTS,
                             float lr, float mu, int nesterov, int n)
{
    int i, end;
    if (!opt_run(n, &i, &end))
        return;
    for (; i < end; i++) {
        float g = GRADIENT_AT(i), a = fl_rule_momentum_accum(accum[i], mu, g);
        accum[i] = a;
        var[i] = fl_rule_momentum_var(var[i], lr, mu, a, g, nesterov);
    }
}

/* lr_t comes from the beta powers the graph keeps as variables (read here,
 * so nothing goes back to the host), once per work-item. */
__kernel void apply_adam(__global float *restrict var, __global float *restrict m,
                         __global float *restrict v, __global const float *beta1_power,
                         __global const float *beta2_power, GRADIENT_PARTS,
                         float lr, float b1, float b2, float eps, int n)
{
    int i, end;
    if (!opt_run(n, &i, &end))
        return;
    float lr_t = fl_rule_adam_lr(lr, beta1_power[0], beta2_power[0]);
    for (; i < end; i++) {
        float g = GRADIENT_AT(i), mm = fl_rule_adam_m(m[i], b1, g), vv = fl_rule_adam_v(v[i], b2, g);
        m[i] = mm;
        v[i] = vv;
        var[i] = fl_rule_adam_var(var[i], lr_t, mm, vv, eps);
    }
}
