/* optimizers.cu: SGD, Momentum and Adam updates on the GPU, in place.
 * The rules of src/scalar_rules.h (TensorFlow's ApplyGradientDescent,
 * ApplyMomentum and ApplyAdam), one thread per element; MultiApplyAdam's
 * one launch over every variable of a group, with Adam's own element. */
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

/* One element of ApplyAdam, the code both Adam kernels run, so that each
 * contracts its multiply-adds the same way. */
__device__ static inline void adam_element(float *var, float *m, float *v, const float *grad, int64_t i,
                                           float lr_t, float b1, float b2, float eps)
{
    m[i] = fl_rule_adam_m(m[i], b1, grad[i]);
    v[i] = fl_rule_adam_v(v[i], b2, grad[i]);
    var[i] = fl_rule_adam_var(var[i], lr_t, m[i], v[i], eps);
}

/* The beta powers live on the device (they are variables), so each thread
 * reads them and works out lr_t itself: no copy back to the host mid-step. */
__global__ static void adam_kernel(float *var, float *m, float *v, const float *beta1_power,
                                   const float *beta2_power, const float *grad, float lr, float b1,
                                   float b2, float eps, int64_t n)
{
    float lr_t = fl_rule_adam_lr(lr, *beta1_power, *beta2_power);
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        adam_element(var, m, v, grad, i, lr_t, b1, b2, eps);
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

/* The table's variable that holds element i of the concatenation, from k
 * on: the grid-stride loop only moves forward, so k only grows. */
__device__ static inline int variable_at(const fl_cu_adam_table &t, int64_t i, int k)
{
    while (k + 1 < t.count && i >= t.start[k + 1])
        k++;
    return k;
}

/* Every variable's elements seen as one array (t.start: where each
 * begins); the table comes by value, in the launch's parameters, so a CUDA
 * graph replays it with no copy of its own. */
__global__ static void multi_adam_kernel(fl_cu_adam_table t, const float *beta1_power,
                                         const float *beta2_power, float lr, float b1, float b2, float eps)
{
    float lr_t = fl_rule_adam_lr(lr, *beta1_power, *beta2_power);
    int k = 0;
    for (int64_t i = fl_first_index(); i < t.total; i += fl_grid_stride()) {
        k = variable_at(t, i, k);
        const fl_cu_adam_tensor *a = &t.tensor[k];
        adam_element(a->var, a->m, a->v, a->grad, i - t.start[k], lr_t, b1, b2, eps);
    }
}

extern "C" cudaError_t fl_cu_multi_apply_adam(const fl_cu_adam_table *table, const float *beta1_power,
                                              const float *beta2_power, float lr, float beta1, float beta2,
                                              float epsilon, cudaStream_t s)
{
    multi_adam_kernel<<<fl_blocks(table->total), fl_threads, 0, s>>>(*table, beta1_power, beta2_power, lr,
                                                                     beta1, beta2, epsilon);
    return cudaGetLastError();
}
