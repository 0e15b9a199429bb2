/* optimizers.cu: SGD, Momentum and Adam updates on the GPU, in place.
 * The rules of src/scalar_rules.h (TensorFlow's ApplyGradientDescent,
 * ApplyMomentum and ApplyAdam), one thread per element. */
#include <math.h>

#include "launch.cuh"
#include "scalar_rules.h" /* the rules, the host's and OpenCL's own */

__global__ static void gradient_descent_kernel(float *var, const float *grad, float lr, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        var[i] = fl_rule_gradient_descent(var[i], lr, grad[i]);
}

extern "C" cudaError_t fl_cu_apply_gradient_descent(float *var, const float *grad, float lr,
                                                    int64_t n, cudaStream_t s)
{
    gradient_descent_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(var, grad, lr, n);
    return cudaGetLastError();
}

__global__ static void momentum_kernel(float *var, float *accum, const float *grad, float lr,
                                       float mu, bool nesterov, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride()) {
        accum[i] = fl_rule_momentum_accum(accum[i], mu, grad[i]);
        var[i] = fl_rule_momentum_var(var[i], lr, mu, accum[i], grad[i], nesterov);
    }
}

extern "C" cudaError_t fl_cu_apply_momentum(float *var, float *accum, const float *grad, float lr,
                                            float mu, bool nesterov, int64_t n, cudaStream_t s)
{
    momentum_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(var, accum, grad, lr, mu, nesterov, n);
    return cudaGetLastError();
}

/* The beta powers live on the device (they are variables), so each thread
 * reads them and works out lr_t itself: no copy back to the host mid-step. */
__global__ static void adam_kernel(float *var, float *m, float *v, const float *beta1_power,
                                   const float *beta2_power, const float *grad, float lr, float b1,
                                   float b2, float eps, int64_t n)
{
    float lr_t = fl_rule_adam_lr(lr, *beta1_power, *beta2_power);
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride()) {
        m[i] = fl_rule_adam_m(m[i], b1, grad[i]);
        v[i] = fl_rule_adam_v(v[i], b2, grad[i]);
        var[i] = fl_rule_adam_var(var[i], lr_t, m[i], v[i], eps);
    }
}

extern "C" cudaError_t fl_cu_apply_adam(float *var, float *m, float *v, const float *beta1_power,
                                        const float *beta2_power, const float *grad, float lr,
                                        float beta1, float beta2, float epsilon, int64_t n,
                                        cudaStream_t s)
{
    adam_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(var, m, v, beta1_power, beta2_power, grad, lr,
                                                    beta1, beta2, epsilon, n);
    return cudaGetLastError();
}
