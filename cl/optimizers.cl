/* optimizers.cl: the update rules of SGD, Momentum and Adam, in place on the
 * variable and its slots: the rules of src/scalar_rules.h, the host's and
 * CUDA's own (TensorFlow's).
 *
 * These kernels do a few flops per element and move 12 to 28 bytes for it,
 * so they are bound by memory bandwidth, and the shape that reaches it is
 * the plainest: each work-item updates one run of `chunk` consecutive
 * elements in one pass over each array, a loop over restrict pointers that
 * the compiler turns into vector instructions (each lane computes the scalar
 * rule, so the vectors change no result). A work-item per element would pay
 * the work-item's own bookkeeping (and Adam's bias correction) per element. */

/* `chunk` is the device's run of elements per work-item (cl/opencl_device.c:
 * 4096 on a CPU, 8 elsewhere), as for the element-wise kernels. These took a
 * fixed 256 once: dense_1's 3.2M elements made 12,500 work-items, and
 * chapter 6's rank spent 5.1 ms a step on that one update on its PoCL
 * thread; with 4096, 2.6 to 2.7 ms in groups of 64, 2.0 to 2.1 in groups
 * of one (fl_cl_run_chunks). */
#define OPT_BLOCK 256 /* a fused update makes its mean this many elements at a time, in L1 */

/* The work-item's run [*i, *end); false when it has none. */
bool opt_run(int n, int chunk, int *i, int *end)
{
    *i = get_global_id(0) * chunk;
    *end = min(n, *i + chunk);
    return *i < n;
}

__kernel void apply_gradient_descent(__global float *restrict var,
                                     __global const float *restrict grad, float lr, int n, int chunk)
{
    int i, end;
    if (!opt_run(n, chunk, &i, &end))
        return;
    for (; i < end; i++)
        var[i] = fl_rule_gradient_descent(var[i], lr, grad[i]);
}

__kernel void apply_momentum(__global float *restrict var, __global float *restrict accum,
                             __global const float *restrict grad, float lr, float mu, int nesterov,
                             int n, int chunk)
{
    int i, end;
    if (!opt_run(n, chunk, &i, &end))
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
                         float lr, float b1, float b2, float eps, int n, int chunk)
{
    int i, end;
    if (!opt_run(n, chunk, &i, &end))
        return;
    float lr_t = fl_rule_adam_lr(lr, beta1_power[0], beta2_power[0]);
    for (; i < end; i++) {
        float mm = fl_rule_adam_m(m[i], b1, grad[i]), vv = fl_rule_adam_v(v[i], b2, grad[i]);
        m[i] = mm;
        v[i] = vv;
        var[i] = fl_rule_adam_var(var[i], lr_t, mm, vv, eps);
    }
}

/* The fused updates (an update of the towers' mean, src/ops_fused.c): the
 * gradient at i is its parts added in order, as AddN's kernels add them,
 * then divided once, as Div's, so fusing changes no bit. Parts past nparts
 * repeat p0 and are never read. OpenCL C passes no array of buffers, so the
 * eight are parameters, named once here for the three kernels. Every
 * pointer is restrict, as in the plain kernels above: without it the
 * compiler must assume a part may alias the variable, and gives up
 * vectorizing (26 times slower on PoCL when this was written). */
#define GRADIENT_PARTS __global const float *restrict p0, __global const float *restrict p1, \
    __global const float *restrict p2, __global const float *restrict p3, __global const float *restrict p4, \
    __global const float *restrict p5, __global const float *restrict p6, __global const float *restrict p7, \
    int nparts, __global const float *restrict divisor

/* The mean of elements [i, i + count) into g, a loop per part: each loop
 * is one the compiler vectorizes, where a branch per part per element was
 * three times slower. */
inline void mean_into(float *g, int i, int count, GRADIENT_PARTS)
{
    __global const float *const parts[8] = {p0, p1, p2, p3, p4, p5, p6, p7};
    for (int j = 0; j < count; j++)
        g[j] = p0[i + j];
    for (int k = 1; k < nparts; k++)
        for (int j = 0; j < count; j++)
            g[j] += parts[k][i + j];
    float d = divisor[0];
    for (int j = 0; j < count; j++)
        g[j] = g[j] / d;
}

#define MEAN_INTO(g, i, count) mean_into(g, i, count, p0, p1, p2, p3, p4, p5, p6, p7, nparts, divisor)

__kernel void fused_apply_gradient_descent(__global float *restrict var, GRADIENT_PARTS, float lr, int n, int chunk)
{
    int i, end;
    if (!opt_run(n, chunk, &i, &end))
        return;
    float g[OPT_BLOCK];
    for (; i < end; i += OPT_BLOCK) {
        int count = min(OPT_BLOCK, end - i);
        MEAN_INTO(g, i, count);
        for (int j = 0; j < count; j++)
            var[i + j] = fl_rule_gradient_descent(var[i + j], lr, g[j]);
    }
}

__kernel void fused_apply_momentum(__global float *restrict var, __global float *restrict accum, GRADIENT_PARTS,
                                   float lr, float mu, int nesterov, int n, int chunk)
{
    int i, end;
    if (!opt_run(n, chunk, &i, &end))
        return;
    float g[OPT_BLOCK];
    for (; i < end; i += OPT_BLOCK) {
        int count = min(OPT_BLOCK, end - i);
        MEAN_INTO(g, i, count);
        for (int j = 0; j < count; j++) {
            float a = fl_rule_momentum_accum(accum[i + j], mu, g[j]);
            accum[i + j] = a;
            var[i + j] = fl_rule_momentum_var(var[i + j], lr, mu, a, g[j], nesterov);
        }
    }
}

__kernel void fused_apply_adam(__global float *restrict var, __global float *restrict m,
                               __global float *restrict v, __global const float *beta1_power,
                               __global const float *beta2_power, GRADIENT_PARTS,
                               float lr, float b1, float b2, float eps, int n, int chunk)
{
    int i, end;
    if (!opt_run(n, chunk, &i, &end))
        return;
    float lr_t = fl_rule_adam_lr(lr, beta1_power[0], beta2_power[0]);
    float g[OPT_BLOCK];
    for (; i < end; i += OPT_BLOCK) {
        int count = min(OPT_BLOCK, end - i);
        MEAN_INTO(g, i, count);
        for (int j = 0; j < count; j++) {
            int k = i + j;
            float mm = fl_rule_adam_m(m[k], b1, g[j]), vv = fl_rule_adam_v(v[k], b2, g[j]);
            m[k] = mm;
            v[k] = vv;
            var[k] = fl_rule_adam_var(var[k], lr_t, mm, vv, eps);
        }
    }
}
