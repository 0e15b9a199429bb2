/* kernels.h: the launchers of the hand-written CUDA kernels (the .cu files here).
 * Plain C prototypes over device pointers and sizes, so the C side of the
 * backend (cuda/launch_*.c) never sees CUDA C++. Each launcher only
 * enqueues on the given stream and returns cudaGetLastError(). Every kernel
 * is reproducible bit for bit: each output element is written by one thread
 * (or summed by one block, reduce.cu) in an order fixed by the sizes, with no
 * atomic accumulation, so FLOWLAB_DETERMINISTIC only has cuDNN to restrain. */
#ifndef FLOWLAB_CUDA_KERNELS_H
#define FLOWLAB_CUDA_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel that finds bad input (a label out of range, an integer division
 * by zero) cannot fail the run() that enqueued it: run() has long returned.
 * It records the first fault here, in device memory, and wait() reports it. */
typedef enum { FL_CUDA_FAULT_NONE = 0, FL_CUDA_FAULT_LABEL = 1, FL_CUDA_FAULT_INT_DIV = 2 } fl_cuda_fault_code;

typedef struct {
    int code;          /* fl_cuda_fault_code; 0 while all is well */
    int label, classes; /* FL_CUDA_FAULT_LABEL */
    long long index;   /* the row (labels) or the element (division) */
} fl_cuda_fault;

#define FL_CUDA_FAULT_SLOTS 16

typedef enum { FL_CU_ADD, FL_CU_SUB, FL_CU_MUL, FL_CU_DIV } fl_cu_arith;
typedef enum { FL_CU_RELU, FL_CU_SIGMOID, FL_CU_TANH, FL_CU_SOFTPLUS } fl_cu_act;

/* ---- elementwise.cu: suffix broadcasting, element i meets a[i % na], b[i % nb] ---- */
cudaError_t fl_cu_arith_f32(fl_cu_arith op, const float *a, int64_t na, const float *b, int64_t nb,
                            float *out, int64_t n, cudaStream_t s);
cudaError_t fl_cu_arith_i32(fl_cu_arith op, const int32_t *a, int64_t na, const int32_t *b,
                            int64_t nb, int32_t *out, int64_t n, fl_cuda_fault *fault,
                            cudaStream_t s);
cudaError_t fl_cu_neg_f32(const float *x, float *out, int64_t n, cudaStream_t s);
cudaError_t fl_cu_neg_i32(const int32_t *x, int32_t *out, int64_t n, cudaStream_t s);
/* out[i] += x[i]: AddN after its first input, and AssignAdd. */
cudaError_t fl_cu_accumulate_f32(float *out, const float *x, int64_t n, cudaStream_t s);
cudaError_t fl_cu_accumulate_i32(int32_t *out, const int32_t *x, int64_t n, cudaStream_t s);
cudaError_t fl_cu_div_grad_b(const float *dy, const float *a, int64_t na, const float *b,
                             int64_t nb, float *out, int64_t n, cudaStream_t s);
cudaError_t fl_cu_fill_f32(float *out, int64_t n, float value, cudaStream_t s);
cudaError_t fl_cu_fill_i32(int32_t *out, int64_t n, int32_t value, cudaStream_t s);
cudaError_t fl_cu_cast_f32_i32(const float *x, int32_t *out, int64_t n, cudaStream_t s);
cudaError_t fl_cu_cast_i32_f32(const int32_t *x, float *out, int64_t n, cudaStream_t s);
/* Equal over float32 or int32 operands (each compared as a double). */
cudaError_t fl_cu_equal(const void *a, bool a_int, int64_t na, const void *b, bool b_int, int64_t nb,
                        int32_t *out, int64_t n, cudaStream_t s);

/* ---- optimizers.cu: TensorFlow's update rules, in place ---- */
cudaError_t fl_cu_apply_gradient_descent(float *var, const float *grad, float lr, int64_t n,
                                         cudaStream_t s);
cudaError_t fl_cu_apply_momentum(float *var, float *accum, const float *grad, float lr, float mu,
                                 bool nesterov, int64_t n, cudaStream_t s);
/* beta1_power and beta2_power are one-element device tensors (variables). */
cudaError_t fl_cu_apply_adam(float *var, float *m, float *v, const float *beta1_power,
                             const float *beta2_power, const float *grad, float lr, float beta1,
                             float beta2, float epsilon, int64_t n, cudaStream_t s);
/* MultiApplyAdam: every variable of the table in one launch, each element
 * as fl_cu_apply_adam updates it. start[k]: where variable k's elements
 * begin in their concatenation (start[0] = 0), total: its length. */
#define FL_CU_ADAM_TABLE 32 /* src/runtime.h's FL_MULTI_ADAM_VARIABLES */
typedef struct {
    float *var, *m, *v;
    const float *grad;
} fl_cu_adam_tensor;
typedef struct {
    fl_cu_adam_tensor tensor[FL_CU_ADAM_TABLE];
    int64_t start[FL_CU_ADAM_TABLE];
    int64_t total;
    int count;
} fl_cu_adam_table;
cudaError_t fl_cu_multi_apply_adam(const fl_cu_adam_table *table, const float *beta1_power,
                                   const float *beta2_power, float lr, float beta1, float beta2, float epsilon,
                                   cudaStream_t s);

/* ---- nn.cu: activations, softmax and the sparse cross-entropy ---- */
cudaError_t fl_cu_activation(fl_cu_act f, const float *x, float *out, int64_t n,
                             cudaStream_t s);
/* ReluGrad and SoftplusGrad take x; SigmoidGrad and TanhGrad take y, the forward output. */
cudaError_t fl_cu_activation_grad(fl_cu_act f, const float *dy, const float *x_or_y,
                                  float *out, int64_t n, cudaStream_t s);
/* y[i] = y[i] + bias[i % columns], then max(0, .) when relu: the fused ops' tail. */
cudaError_t fl_cu_bias_relu(float *y, const float *bias, int64_t columns, int64_t n, bool relu,
                            cudaStream_t s);
cudaError_t fl_cu_softmax(const float *x, float *y, int64_t rows, int classes, cudaStream_t s);
cudaError_t fl_cu_softmax_grad(const float *dy, const float *y, float *out, int64_t rows,
                               int classes, cudaStream_t s);
cudaError_t fl_cu_sparse_xent(const int32_t *labels, const float *logits, float *loss, int64_t rows,
                              int classes, fl_cuda_fault *fault, cudaStream_t s);
cudaError_t fl_cu_sparse_xent_grad(const float *dy, const int32_t *labels, const float *logits,
                                   float *out, int64_t rows, int classes, fl_cuda_fault *fault,
                                   cudaStream_t s);

/* ---- reduce.cu: Sum, Mean, their gradient, SumToShape, ArgMax ---- */
typedef struct {
    int rank;
    int dims[4];
    bool reduce[4]; /* which axes are summed away */
} fl_cu_reduction;

cudaError_t fl_cu_reduce_f32(fl_cu_reduction r, const float *x, float *out, int64_t nout, bool mean,
                             cudaStream_t s);
cudaError_t fl_cu_reduce_i32(fl_cu_reduction r, const int32_t *x, int32_t *out, int64_t nout,
                             bool mean, cudaStream_t s);
cudaError_t fl_cu_reduce_grad(fl_cu_reduction r, const float *dy, float *out, int64_t nx,
                              float scale, cudaStream_t s);
/* out[j] = sum of x[i] over every i with i % size == j, in two stages
 * through `partials`: fl_cu_sum_to_shape_chunks(count, size) * size doubles
 * of scratch. */
int64_t fl_cu_sum_to_shape_chunks(int64_t count, int64_t size);
cudaError_t fl_cu_sum_to_shape(const float *x, int64_t count, float *out, int64_t size, double *partials,
                               cudaStream_t s);
/* x seen as [outer, dim, inner]; out [outer, inner]. */
cudaError_t fl_cu_argmax(const void *x, bool x_int, int64_t outer, int64_t dim, int64_t inner,
                         int32_t *out, cudaStream_t s);

/* ---- pool_grad.cu: MaxPoolGrad and MaxPoolReluGrad ---- */
/* A pooling window's geometry (src/conv_geometry.h's, without OC). */
typedef struct {
    int batch, h, w, c;
    int kh, kw, oh, ow, sh, sw;
    int pad_top, pad_left;
} fl_cu_pool_window;

/* dx for x [batch,h,w,c] from dy [batch,oh,ow,c], the first maximum of each
 * window taking its dy; relu: also zero where x <= 0 (MaxPoolReluGrad). */
cudaError_t fl_cu_max_pool_grad(fl_cu_pool_window g, const float *dy, const float *x, float *dx, bool relu,
                                cudaStream_t s);

/* ---- conv_kernels.cu: what cuDNN needs around it ---- */
/* NHWC [n,h,w,c] -> [n, top+h+bottom, left+w+right, c], the border set to fill. */
cudaError_t fl_cu_pad_nhwc(const float *x, float *out, int n, int h, int w, int c, int top,
                           int bottom, int left, int right, float fill, cudaStream_t s);
/* The inverse: the [n,h,w,c] window at (top, left) of a padded tensor. */
cudaError_t fl_cu_crop_nhwc(const float *padded, float *out, int n, int h, int w, int c, int top,
                            int bottom, int left, int right, cudaStream_t s);
/* out[c][r] = x[r][c] for x [rows, cols]: HWIO filters to cuDNN's OHWI and back. */
cudaError_t fl_cu_transpose(const float *x, float *out, int64_t rows, int64_t cols, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
