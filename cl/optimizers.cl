/* optimizers.cl: the update rules of SGD, Momentum and Adam, one element per
 * work-item, in place on the variable and its slots. The formulas are the
 * host's (src/host_optimizers.c), which are TensorFlow's. */

/* var -= lr * grad */
__kernel void apply_gradient_descent(__global float *var, __global const float *grad, float lr,
                                     int n)
{
    int i = get_global_id(0);
    if (i < n)
        var[i] -= lr * grad[i];
}

/* accum = momentum * accum + grad; var -= lr * accum, or with Nesterov
 * var -= lr * (grad + momentum * accum). */
__kernel void apply_momentum(__global float *var, __global float *accum,
                             __global const float *grad, float lr, float mu, int nesterov, int n)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    float a = mu * accum[i] + grad[i];
    accum[i] = a;
    var[i] -= nesterov ? lr * (grad[i] + mu * a) : lr * a;
}

/* lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t), from the beta powers the
 * graph keeps as variables (read here, so nothing goes back to the host). */
__kernel void apply_adam(__global float *var, __global float *m, __global float *v,
                         __global const float *beta1_power, __global const float *beta2_power,
                         __global const float *grad, float lr, float b1, float b2, float eps,
                         int n)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    float lr_t = lr * sqrt(1.0f - beta2_power[0]) / (1.0f - beta1_power[0]);
    float g = grad[i];
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    var[i] -= lr_t * m[i] / (sqrt(v[i]) + eps);
}
