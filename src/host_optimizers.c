/* host_optimizers.c: the update rules of SGD, Momentum and Adam on the host.
 * Each kernel updates the variable (in[0]) and its slots in place, with the
 * same formulas as TensorFlow's ApplyGradientDescent/ApplyMomentum/ApplyAdam. */
#include <math.h>

#include "host_kernels.h"

/* var -= lr * grad */
FL_HOST_KERNEL(fl_host_apply_gradient_descent)
{
    (void)out;
    (void)ctx;
    float *var = in[0]->data;
    const float *grad = in[1]->data;
    float lr = n->attrs.learning_rate;
    int64_t count = fl_shape_size(in[0]->shape);
    for (int64_t i = 0; i < count; i++)
        var[i] -= lr * grad[i];
    return 0;
}

/* accum = momentum * accum + grad
 * var  -= lr * accum                          (classic)
 * var  -= lr * (grad + momentum * accum)      (Nesterov) */
FL_HOST_KERNEL(fl_host_apply_momentum)
{
    (void)out;
    (void)ctx;
    float *var = in[0]->data, *accum = in[1]->data;
    const float *grad = in[2]->data;
    float lr = n->attrs.learning_rate, mu = n->attrs.momentum;
    int64_t count = fl_shape_size(in[0]->shape);
    for (int64_t i = 0; i < count; i++) {
        accum[i] = mu * accum[i] + grad[i];
        var[i] -= n->attrs.use_nesterov ? lr * (grad[i] + mu * accum[i]) : lr * accum[i];
    }
    return 0;
}

/* Inputs: var, m, v, beta1_power, beta2_power, grad.
 * lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
 * m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
 * var -= lr_t * m / (sqrt(v) + epsilon) */
FL_HOST_KERNEL(fl_host_apply_adam)
{
    (void)out;
    (void)ctx;
    float *var = in[0]->data, *m = in[1]->data, *v = in[2]->data;
    float beta1_power = ((float *)in[3]->data)[0], beta2_power = ((float *)in[4]->data)[0];
    const float *grad = in[5]->data;
    float b1 = n->attrs.beta1, b2 = n->attrs.beta2, eps = n->attrs.epsilon;
    float lr_t = n->attrs.learning_rate * sqrtf(1.0f - beta2_power) / (1.0f - beta1_power);
    int64_t count = fl_shape_size(in[0]->shape);
    for (int64_t i = 0; i < count; i++) {
        m[i] = b1 * m[i] + (1.0f - b1) * grad[i];
        v[i] = b2 * v[i] + (1.0f - b2) * grad[i] * grad[i];
        var[i] -= lr_t * m[i] / (sqrtf(v[i]) + eps);
    }
    return 0;
}
