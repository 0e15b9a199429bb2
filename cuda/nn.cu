/* nn.cu: activations, softmax and the sparse softmax cross-entropy on the GPU.
 * The same formulas as src/host/host_nn.c. Softmax and the loss give one row to
 * one thread: rows are short (10 classes for MNIST), and the kernel then
 * reads exactly like the host loop, maximum first so exp() never overflows. */
#include <math.h>

#include "launch.cuh"
#include "scalar_rules.h"

/* The rules are src/scalar_rules.h's, the host's and OpenCL's own. */
__device__ static float activate(fl_cu_act f, float x)
{
    switch (f) {
    case FL_CU_RELU: return fl_rule_relu(x);
    case FL_CU_SIGMOID: return fl_rule_sigmoid(x);
    case FL_CU_SOFTPLUS: return fl_rule_softplus(x);
    default: return fl_rule_tanh(x);
    }
}

/* Inputs (dy, x) for ReluGrad and SoftplusGrad; (dy, y) for SigmoidGrad and TanhGrad. */
__device__ static float activation_grad(fl_cu_act f, float dy, float v)
{
    switch (f) {
    case FL_CU_RELU: return fl_rule_relu_grad(dy, v);
    case FL_CU_SIGMOID: return fl_rule_sigmoid_grad(dy, v);
    case FL_CU_SOFTPLUS: return fl_rule_softplus_grad(dy, v);
    default: return fl_rule_tanh_grad(dy, v);
    }
}

__global__ static void activation_kernel(fl_cu_act f, const float *x, float *out, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = activate(f, x[i]);
}

__global__ static void activation_grad_kernel(fl_cu_act f, const float *dy, const float *v,
                                              float *out, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = activation_grad(f, dy[i], v[i]);
}

extern "C" cudaError_t fl_cu_activation(fl_cu_act f, const float *x, float *out, int64_t n,
                                        cudaStream_t s)
{
    activation_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(f, x, out, n);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_activation_grad(fl_cu_act f, const float *dy,
                                             const float *x_or_y, float *out, int64_t n,
                                             cudaStream_t s)
{
    activation_grad_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(f, dy, x_or_y, out, n);
    return cudaGetLastError();
}

/* FusedConv2D's and FusedMatMul's tail, in place after the product:
 * y[i] = relu(y[i] + bias[i % columns]), the relu only when asked; the
 * same float add and compare as the unfused Add and Relu kernels. */
__global__ static void bias_relu_kernel(float *y, const float *bias, int64_t columns, int64_t n, bool relu)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride()) {
        float v = y[i] + bias[i % columns];
        y[i] = relu ? fl_rule_relu(v) : v;
    }
}

/* The same, four values a thread where the columns come in fours: one
 * 16-byte load and store, and a 32-bit index. A convolution's output is
 * 13 MB here, and the general kernel's 64-bit modulo per element made it
 * slower than the copy bandwidth allows. */
__global__ static void bias_relu4_kernel(float4 *y, const float4 *bias, unsigned column_quads, unsigned quads,
                                         bool relu)
{
    for (unsigned q = blockIdx.x * blockDim.x + threadIdx.x; q < quads; q += gridDim.x * blockDim.x) {
        float4 v = y[q], b = bias[q % column_quads];
        v.x += b.x, v.y += b.y, v.z += b.z, v.w += b.w;
        if (relu)
            v = make_float4(fl_rule_relu(v.x), fl_rule_relu(v.y), fl_rule_relu(v.z), fl_rule_relu(v.w));
        y[q] = v;
    }
}

static bool quad_aligned(const void *p) { return ((uintptr_t)p & 15) == 0; }

extern "C" cudaError_t fl_cu_bias_relu(float *y, const float *bias, int64_t columns, int64_t n, bool relu,
                                       cudaStream_t s)
{
    if (columns % 4 == 0 && n / 4 < UINT32_MAX / 2 && quad_aligned(y) && quad_aligned(bias)) {
        int64_t quads = n / 4; /* n is a whole number of rows, so of quads */
        bias_relu4_kernel<<<fl_blocks(quads), fl_threads, 0, s>>>((float4 *)y, (const float4 *)bias,
                                                                  (unsigned)(columns / 4), (unsigned)quads, relu);
        return cudaGetLastError();
    }
    bias_relu_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(y, bias, columns, n, relu);
    return cudaGetLastError();
}

__device__ static float row_max(const float *x, int classes)
{
    float max = x[0];
    for (int j = 1; j < classes; j++)
        max = x[j] > max ? x[j] : max;
    return max;
}

/* host_nn.c's softmax_row, float throughout. */
__device__ static void softmax_row(const float *x, float *y, int classes)
{
    float max = row_max(x, classes), sum = 0.0f;
    for (int j = 0; j < classes; j++) {
        y[j] = expf(x[j] - max);
        sum += y[j];
    }
    for (int j = 0; j < classes; j++)
        y[j] /= sum;
}

__global__ static void softmax_kernel(const float *x, float *y, int64_t rows, int classes)
{
    for (int64_t r = fl_first_index(); r < rows; r += fl_grid_stride())
        softmax_row(x + r * classes, y + r * classes, classes);
}

/* dx = y * (dy - sum_j dy_j y_j), row by row. */
__global__ static void softmax_grad_kernel(const float *dy, const float *y, float *out,
                                           int64_t rows, int classes)
{
    for (int64_t r = fl_first_index(); r < rows; r += fl_grid_stride()) {
        const float *d = dy + r * classes, *yr = y + r * classes;
        float dot = 0.0f;
        for (int j = 0; j < classes; j++)
            dot += d[j] * yr[j];
        for (int j = 0; j < classes; j++)
            out[r * classes + j] = yr[j] * (d[j] - dot);
    }
}

extern "C" cudaError_t fl_cu_softmax(const float *x, float *y, int64_t rows, int classes,
                                     cudaStream_t s)
{
    softmax_kernel<<<fl_blocks(rows), fl_threads, 0, s>>>(x, y, rows, classes);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_softmax_grad(const float *dy, const float *y, float *out, int64_t rows,
                                          int classes, cudaStream_t s)
{
    softmax_grad_kernel<<<fl_blocks(rows), fl_threads, 0, s>>>(dy, y, out, rows, classes);
    return cudaGetLastError();
}

/* A label outside [0, classes) is the caller's error, found only here, on
 * the device: the row gets NaN, the fault is recorded, and wait() fails the
 * run with the same message as the host ("label 12 in row 3 is outside ..."). */
__device__ static bool label_ok(int32_t label, int classes, int64_t row, fl_cuda_fault *fault)
{
    if (label >= 0 && label < classes)
        return true;
    fl_report_fault(fault, FL_CUDA_FAULT_LABEL, row, label, classes);
    return false;
}

/* loss_r = logsumexp(logits_r) - logits_r[label_r], the sum in double as on the host. */
__global__ static void sparse_xent_kernel(const int32_t *labels, const float *logits, float *loss,
                                          int64_t rows, int classes, fl_cuda_fault *fault)
{
    for (int64_t r = fl_first_index(); r < rows; r += fl_grid_stride()) {
        if (!label_ok(labels[r], classes, r, fault)) {
            loss[r] = NAN;
            continue;
        }
        const float *x = logits + r * classes;
        float max = row_max(x, classes);
        double sum = 0.0;
        for (int j = 0; j < classes; j++)
            sum += exp((double)(x[j] - max));
        loss[r] = (float)(log(sum) + max - x[labels[r]]);
    }
}

/* (softmax - onehot) * dy, row by row. */
__global__ static void sparse_xent_grad_kernel(const float *dy, const int32_t *labels,
                                               const float *logits, float *out, int64_t rows,
                                               int classes, fl_cuda_fault *fault)
{
    for (int64_t r = fl_first_index(); r < rows; r += fl_grid_stride()) {
        float *o = out + r * classes;
        if (!label_ok(labels[r], classes, r, fault)) {
            for (int j = 0; j < classes; j++)
                o[j] = NAN;
            continue;
        }
        softmax_row(logits + r * classes, o, classes);
        o[labels[r]] -= 1.0f;
        for (int j = 0; j < classes; j++)
            o[j] *= dy[r];
    }
}

extern "C" cudaError_t fl_cu_sparse_xent(const int32_t *labels, const float *logits, float *loss,
                                         int64_t rows, int classes, fl_cuda_fault *fault,
                                         cudaStream_t s)
{
    sparse_xent_kernel<<<fl_blocks(rows), fl_threads, 0, s>>>(labels, logits, loss, rows, classes,
                                                              fault);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_sparse_xent_grad(const float *dy, const int32_t *labels,
                                              const float *logits, float *out, int64_t rows,
                                              int classes, fl_cuda_fault *fault, cudaStream_t s)
{
    sparse_xent_grad_kernel<<<fl_blocks(rows), fl_threads, 0, s>>>(dy, labels, logits, out, rows,
                                                                   classes, fault);
    return cudaGetLastError();
}
