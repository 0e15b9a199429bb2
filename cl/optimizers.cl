/* optimizers.cl: the update rules of SGD, Momentum and Adam, in place on the
 * variable and its slots. The formulas are the host's
 * (src/host/host_optimizers.c), which are TensorFlow's.
 *
 * These kernels do a few flops per element and move 12 to 28 bytes for it,
 * so they are bound by memory bandwidth, and the shape that reaches it is
 * the plainest: each work-item updates one run of OPT_CHUNK consecutive
 * elements, eight at a time (vload8/vstore8: one 256-bit AVX register per
 * operand), in one pass over each array. A work-item per element would
 * leave PoCL to find the vectors itself, and would pay the work-item's own
 * bookkeeping (and Adam's bias correction) per element. The last work-item
 * finishes the elements past the last multiple of 8 one by one.
 *
 * Each rule is written once, as a macro on a type-generic expression, so the
 * float8 path and the scalar tail are the same arithmetic in the same order. */

#define OPT_CHUNK 256 /* elements per work-item; as in cl/launch_state.c */

/* The work-item's run [*i, *end); false when it has none. */
bool opt_run(int n, int *i, int *end)
{
    *i = get_global_id(0) * OPT_CHUNK;
    *end = min(n, *i + OPT_CHUNK);
    return *i < n;
}

/* var -= lr * grad */
#define SGD(var, g) var -= lr * (g)

__kernel void apply_gradient_descent(__global float *restrict var,
                                     __global const float *restrict grad, float lr, int n)
{
    int i, end;
    if (!opt_run(n, &i, &end))
        return;
    for (; i + 8 <= end; i += 8) {
        float8 w = vload8(0, var + i);
        SGD(w, vload8(0, grad + i));
        vstore8(w, 0, var + i);
    }
    for (; i < end; i++)
        SGD(var[i], grad[i]);
}

/* accum = momentum * accum + grad; var -= lr * accum, or with Nesterov
 * var -= lr * (grad + momentum * accum). */
#define MOMENTUM(var, a, g)                            \
    {                                                  \
        a = mu * a + (g);                              \
        var -= nesterov ? lr * ((g) + mu * a) : lr * a; \
    }

__kernel void apply_momentum(__global float *restrict var, __global float *restrict accum,
                             __global const float *restrict grad, float lr, float mu, int nesterov,
                             int n)
{
    int i, end;
    if (!opt_run(n, &i, &end))
        return;
    for (; i + 8 <= end; i += 8) {
        float8 w = vload8(0, var + i), a = vload8(0, accum + i), g = vload8(0, grad + i);
        MOMENTUM(w, a, g);
        vstore8(a, 0, accum + i);
        vstore8(w, 0, var + i);
    }
    for (; i < end; i++) {
        float w = var[i], a = accum[i], g = grad[i];
        MOMENTUM(w, a, g);
        accum[i] = a;
        var[i] = w;
    }
}

/* m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; var -= lr_t m / (sqrt(v) + eps) */
#define ADAM(w, m, v, g)                              \
    {                                                 \
        m = b1 * m + (1.0f - b1) * (g);               \
        v = b2 * v + (1.0f - b2) * (g) * (g);         \
        w -= lr_t * m / (sqrt(v) + eps);              \
    }

/* lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t), from the beta powers the
 * graph keeps as variables (read here, so nothing goes back to the host),
 * once per work-item. */
__kernel void apply_adam(__global float *restrict var, __global float *restrict m,
                         __global float *restrict v, __global const float *beta1_power,
                         __global const float *beta2_power, __global const float *restrict grad,
                         float lr, float b1, float b2, float eps, int n)
{
    int i, end;
    if (!opt_run(n, &i, &end))
        return;
    float lr_t = lr * sqrt(1.0f - beta2_power[0]) / (1.0f - beta1_power[0]);
    for (; i + 8 <= end; i += 8) {
        float8 w = vload8(0, var + i), mm = vload8(0, m + i), vv = vload8(0, v + i);
        float8 g = vload8(0, grad + i);
        ADAM(w, mm, vv, g);
        vstore8(mm, 0, m + i);
        vstore8(vv, 0, v + i);
        vstore8(w, 0, var + i);
    }
    for (; i < end; i++) {
        float w = var[i], mm = m[i], vv = v[i], g = grad[i];
        ADAM(w, mm, vv, g);
        m[i] = mm;
        v[i] = vv;
        var[i] = w;
    }
}
