/* optimizers.cu: SGD, Momentum and Adam updates on the GPU, in place.
 * The rules of src/scalar_rules.h (TensorFlow's ApplyGradientDescent,
 * ApplyMomentum and ApplyAdam), one thread per element; MultiApplyAdam's
 * one launch over every variable of a group, with Adam's own element. */
#include <math.h>
#include <string.h>

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

/* One element of ApplyAdam, the code every Adam kernel runs, so that each
 * contracts its multiply-adds the same way. */
__device__ static inline void adam_values(float &var, float &m, float &v, float grad, float lr_t, float b1, float b2,
                                          float eps)
{
    m = fl_rule_adam_m(m, b1, grad);
    v = fl_rule_adam_v(v, b2, grad);
    var = fl_rule_adam_var(var, lr_t, m, v, eps);
}

__device__ static inline void adam_element(float *var, float *m, float *v, const float *grad, int64_t i,
                                           float lr_t, float b1, float b2, float eps)
{
    float x = var[i], mi = m[i], vi = v[i];
    adam_values(x, mi, vi, grad[i], lr_t, b1, b2, eps);
    m[i] = mi, v[i] = vi, var[i] = x;
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

/* MultiApplyAdam's launch works in quads, four elements a thread: a
 * variable whose size is a multiple of four and whose four tensors are
 * 16-byte aligned (every pool buffer is) moves them as float4s, the rest
 * one element at a time. quad[k]: where variable k's quads begin in the
 * concatenation (its last may hold fewer than four elements). */
typedef struct {
    fl_cu_adam_table t;
    int64_t quad[FL_CU_ADAM_TABLE + 1];
    bool vector[FL_CU_ADAM_TABLE];
} quad_table;

/* The table's variable that holds quad q, from k on: the grid-stride loop
 * only moves forward, so k only grows. */
__device__ static inline int variable_at(const quad_table &qt, int64_t q, int k)
{
    while (k + 1 < qt.t.count && q >= qt.quad[k + 1])
        k++;
    return k;
}

__device__ static inline void adam_quad(const fl_cu_adam_tensor *a, int64_t j, bool vector, int64_t n, float lr_t,
                                        float b1, float b2, float eps)
{
    if (!vector) {
        for (int64_t i = 4 * j; i < 4 * j + 4 && i < n; i++)
            adam_element(a->var, a->m, a->v, a->grad, i, lr_t, b1, b2, eps);
        return;
    }
    float4 x = ((float4 *)a->var)[j], m = ((float4 *)a->m)[j], v = ((float4 *)a->v)[j];
    float4 g = ((const float4 *)a->grad)[j];
    adam_values(x.x, m.x, v.x, g.x, lr_t, b1, b2, eps);
    adam_values(x.y, m.y, v.y, g.y, lr_t, b1, b2, eps);
    adam_values(x.z, m.z, v.z, g.z, lr_t, b1, b2, eps);
    adam_values(x.w, m.w, v.w, g.w, lr_t, b1, b2, eps);
    ((float4 *)a->m)[j] = m, ((float4 *)a->v)[j] = v, ((float4 *)a->var)[j] = x;
}

/* The table comes by value, in the launch's parameters, so a CUDA graph
 * replays it with no copy of its own. */
__global__ static void multi_adam_kernel(quad_table qt, const float *beta1_power, const float *beta2_power, float lr,
                                         float b1, float b2, float eps)
{
    float lr_t = fl_rule_adam_lr(lr, *beta1_power, *beta2_power);
    int k = 0;
    for (int64_t q = fl_first_index(); q < qt.quad[qt.t.count]; q += fl_grid_stride()) {
        k = variable_at(qt, q, k);
        int64_t n = (k + 1 < qt.t.count ? qt.t.start[k + 1] : qt.t.total) - qt.t.start[k];
        adam_quad(&qt.t.tensor[k], q - qt.quad[k], qt.vector[k], n, lr_t, b1, b2, eps);
    }
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

extern "C" cudaError_t fl_cu_multi_apply_adam(const fl_cu_adam_table *table, const float *beta1_power,
                                              const float *beta2_power, float lr, float beta1, float beta2,
                                              float epsilon, cudaStream_t s)
{
    quad_table qt;
    memset(&qt, 0, sizeof qt);
    qt.t = *table;
    for (int k = 0; k < table->count; k++) {
        const fl_cu_adam_tensor *a = &table->tensor[k];
        int64_t n = (k + 1 < table->count ? table->start[k + 1] : table->total) - table->start[k];
        qt.vector[k] = n % 4 == 0 && aligned16(a->var) && aligned16(a->m) && aligned16(a->v) && aligned16(a->grad);
        qt.quad[k + 1] = qt.quad[k] + (n + 3) / 4;
    }
    multi_adam_kernel<<<fl_blocks(qt.quad[table->count]), fl_threads, 0, s>>>(qt, beta1_power, beta2_power, lr,
                                                                             beta1, beta2, epsilon);
    return cudaGetLastError();
}
