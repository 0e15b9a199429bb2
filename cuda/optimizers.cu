/* optimizers.cu: SGD, Momentum and Adam updates on the GPU, in place.
 * The same formulas as src/host/host_optimizers.c (TensorFlow's ApplyGradientDescent,
 * ApplyMomentum and ApplyAdam), one thread per element. */
#include <math.h>

#include "launch.cuh"

__global__ static void gradient_descent_kernel(float *var, const float *grad, float lr, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        var[i] -= lr * grad[i];
}

extern "C" cudaError_t fl_cu_apply_gradient_descent(float *var, const float *grad, float lr,
                                                    int64_t n, cudaStream_t s)
{
    gradient_descent_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(var, grad, lr, n);
    return cudaGetLastError();
}

/* accum = mu * accum + grad; var -= lr * accum, or lr * (grad + mu * accum) (Nesterov). */
__global__ static void momentum_kernel(float *var, float *accum, const float *grad, float lr,
                                       float mu, bool nesterov, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride()) {
        accum[i] = mu * accum[i] + grad[i];
        var[i] -= nesterov ? lr * (grad[i] + mu * accum[i]) : lr * accum[i];
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
    float lr_t = lr * sqrtf(1.0f - *beta2_power) / (1.0f - *beta1_power);
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride()) {
        float g = grad[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        var[i] -= lr_t * m[i] / (sqrtf(v[i]) + eps);
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
