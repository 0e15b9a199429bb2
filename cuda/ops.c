/* ops.c: each op's CUDA kernel, picked from one table as on the host.
 * These functions read the node's attrs and the run-time shapes and enqueue
 * the work: a cuBLAS GEMM, a launcher from the .cu files, or a copy. Arrays
 * and reductions are in ops_array.c, convolution and pooling in conv.c. */
#include <stdlib.h>
#include <string.h>

#include "cuda_device.h"

int fl_cuda_launched(cudaError_t e) { return fl_cuda_check(e, "launching a CUDA kernel"); }

static int64_t count_of(const fl_tensor *t) { return fl_shape_size(t->shape); }

static int copy_on_device(fl_cuda_device *d, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src)
        return 0;
    return fl_cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, d->stream),
                         "cudaMemcpyAsync on the device");
}

/* ---- MatMul through cuBLAS ----
 * cuBLAS is column-major; flowlab is row-major. A row-major [r,c] buffer
 * read column-major is its transpose [c,r]. So instead of C = op(A) op(B)
 * we ask cuBLAS for C^T = op(B)^T op(A)^T, which it writes column-major:
 * exactly row-major C. That swaps the operands (B first) and M with N; each
 * operand keeps its own transpose flag, and its leading dimension is the
 * number of columns it has as stored (row-major). */
static FL_CUDA_KERNEL(matmul)
{
    (void)ctx;
    bool ta = n->attrs.transpose_a, tb = n->attrs.transpose_b;
    int M = out->shape.dims[0], N = out->shape.dims[1];
    int K = ta ? in[0]->shape.dims[0] : in[0]->shape.dims[1];
    if (M == 0 || N == 0)
        return 0;
    if (K == 0) /* a sum of nothing; cuBLAS would need valid strides for empty operands */
        return fl_cuda_check(cudaMemsetAsync(out->data, 0, fl_tensor_bytes(out), d->stream), "cudaMemsetAsync");
    int lda = in[0]->shape.dims[1], ldb = in[1]->shape.dims[1];
    const float one = 1.0f, zero = 0.0f;
    return fl_cublas_check(cublasSgemm(d->cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                       ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &one, in[1]->data,
                                       ldb, in[0]->data, lda, &zero, out->data, N),
                           "cublasSgemm");
}

/* ---- element-wise arithmetic, suffix broadcasting ---- */

static int arith(fl_cuda_device *d, fl_cu_arith op, fl_tensor *const *in, fl_tensor *out)
{
    int64_t count = count_of(out), na = count_of(in[0]), nb = count_of(in[1]);
    if (count == 0)
        return 0;
    if (out->dtype == FL_FLOAT32)
        return fl_cuda_launched(fl_cu_arith_f32(op, in[0]->data, na, in[1]->data, nb, out->data,
                                                count, d->stream));
    return fl_cuda_launched(fl_cu_arith_i32(op, in[0]->data, na, in[1]->data, nb, out->data, count,
                                            d->fault, d->stream));
}

static FL_CUDA_KERNEL(add) { (void)n; (void)ctx; return arith(d, FL_CU_ADD, in, out); }
static FL_CUDA_KERNEL(sub) { (void)n; (void)ctx; return arith(d, FL_CU_SUB, in, out); }
static FL_CUDA_KERNEL(mul) { (void)n; (void)ctx; return arith(d, FL_CU_MUL, in, out); }
static FL_CUDA_KERNEL(divide) { (void)n; (void)ctx; return arith(d, FL_CU_DIV, in, out); }

static FL_CUDA_KERNEL(neg)
{
    (void)n;
    (void)ctx;
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    if (out->dtype == FL_INT32)
        return fl_cuda_launched(fl_cu_neg_i32(in[0]->data, out->data, count, d->stream));
    return fl_cuda_launched(fl_cu_neg_f32(in[0]->data, out->data, count, d->stream));
}

/* The first input is copied, each later one added in its own launch. */
static FL_CUDA_KERNEL(add_n)
{
    (void)ctx;
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    if (copy_on_device(d, out->data, in[0]->data, fl_tensor_bytes(out)) != 0)
        return -1;
    for (int k = 1; k < n->ninputs; k++) {
        cudaError_t e = out->dtype == FL_INT32
                            ? fl_cu_accumulate_i32(out->data, in[k]->data, count, d->stream)
                            : fl_cu_accumulate_f32(out->data, in[k]->data, count, d->stream);
        if (fl_cuda_launched(e) != 0)
            return -1;
    }
    return 0;
}

static FL_CUDA_KERNEL(div_grad_b)
{
    (void)n;
    (void)ctx;
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_div_grad_b(in[0]->data, in[1]->data, count_of(in[1]), in[2]->data,
                                             count_of(in[2]), out->data, count, d->stream));
}

/* ---- activations, softmax, the loss ---- */

static int activation(fl_cuda_device *d, fl_cu_act f, fl_tensor *const *in, fl_tensor *out)
{
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_activation(f, in[0]->data, out->data, count, d->stream));
}

static int activation_grad(fl_cuda_device *d, fl_cu_act f, fl_tensor *const *in, fl_tensor *out)
{
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_activation_grad(f, in[0]->data, in[1]->data, out->data, count, d->stream));
}

static FL_CUDA_KERNEL(relu) { (void)n; (void)ctx; return activation(d, FL_CU_RELU, in, out); }
static FL_CUDA_KERNEL(sigmoid) { (void)n; (void)ctx; return activation(d, FL_CU_SIGMOID, in, out); }
static FL_CUDA_KERNEL(tanh_activation) { (void)n; (void)ctx; return activation(d, FL_CU_TANH, in, out); }
static FL_CUDA_KERNEL(relu_grad) { (void)n; (void)ctx; return activation_grad(d, FL_CU_RELU, in, out); }
static FL_CUDA_KERNEL(sigmoid_grad) { (void)n; (void)ctx; return activation_grad(d, FL_CU_SIGMOID, in, out); }
static FL_CUDA_KERNEL(tanh_grad) { (void)n; (void)ctx; return activation_grad(d, FL_CU_TANH, in, out); }

static int last_axis(const fl_tensor *t) { return t->shape.rank ? t->shape.dims[t->shape.rank - 1] : 1; }

static FL_CUDA_KERNEL(softmax)
{
    (void)n;
    (void)ctx;
    int classes = last_axis(out);
    int64_t rows = classes ? count_of(out) / classes : 0;
    if (rows == 0)
        return 0;
    return fl_cuda_launched(fl_cu_softmax(in[0]->data, out->data, rows, classes, d->stream));
}

static FL_CUDA_KERNEL(softmax_grad)
{
    (void)n;
    (void)ctx;
    int classes = last_axis(out);
    int64_t rows = classes ? count_of(out) / classes : 0;
    if (rows == 0)
        return 0;
    return fl_cuda_launched(fl_cu_softmax_grad(in[0]->data, in[1]->data, out->data, rows, classes, d->stream));
}

/* Labels are checked on the device; a bad one fails the run at wait(). */
static FL_CUDA_KERNEL(sparse_xent)
{
    (void)n;
    (void)ctx;
    int64_t rows = in[1]->shape.dims[0];
    int classes = in[1]->shape.dims[1];
    if (rows == 0)
        return 0;
    return fl_cuda_launched(fl_cu_sparse_xent(in[0]->data, in[1]->data, out->data, rows, classes,
                                              d->fault, d->stream));
}

static FL_CUDA_KERNEL(sparse_xent_grad)
{
    (void)n;
    (void)ctx;
    int64_t rows = in[2]->shape.dims[0];
    int classes = in[2]->shape.dims[1];
    if (rows == 0)
        return 0;
    return fl_cuda_launched(fl_cu_sparse_xent_grad(in[0]->data, in[1]->data, in[2]->data, out->data,
                                                   rows, classes, d->fault, d->stream));
}

/* ---- making values and writing variables ---- */

static FL_CUDA_KERNEL(fill)
{
    (void)in;
    (void)ctx;
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    if (out->dtype == FL_INT32)
        return fl_cuda_launched(fl_cu_fill_i32(out->data, count, (int32_t)n->attrs.value, d->stream));
    return fl_cuda_launched(fl_cu_fill_f32(out->data, count, n->attrs.value, d->stream));
}

/* Random initializers are made on the host by src/random.c, so /gpu:0 gets
 * the very numbers /cpu:0 would (truncated normal redraws sequentially and
 * does not split across threads). They run once, at initialization. The
 * host buffer must outlive the asynchronous copy: it is freed at wait(). */
static int random_values(fl_cuda_device *d, const fl_node *n, fl_tensor *out, const fl_kernel_ctx *ctx)
{
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    float *host = fl_xmalloc((size_t)count * sizeof *host);
    uint64_t seed = fl_mix_seed(ctx->seed, n->attrs.seed);
    if (n->op == FL_OP_RANDOM_UNIFORM)
        fl_fill_random_uniform(host, count, n->attrs.minval, n->attrs.maxval, seed);
    else
        fl_fill_truncated_normal(host, count, n->attrs.mean_value, n->attrs.stddev, seed);
    fl_cuda_free_after_wait(d, host);
    return fl_cuda_check(cudaMemcpyAsync(out->data, host, (size_t)count * sizeof *host,
                                         cudaMemcpyHostToDevice, d->stream), "cudaMemcpyAsync");
}

static FL_CUDA_KERNEL(random_uniform) { (void)in; return random_values(d, n, out, ctx); }
static FL_CUDA_KERNEL(truncated_normal) { (void)in; return random_values(d, n, out, ctx); }

/* Assign's output is the variable itself (the executor aliases it). */
static FL_CUDA_KERNEL(assign)
{
    (void)n;
    (void)out;
    (void)ctx;
    return copy_on_device(d, in[0]->data, in[1]->data, fl_tensor_bytes(in[0]));
}

static FL_CUDA_KERNEL(assign_add)
{
    (void)n;
    (void)out;
    (void)ctx;
    int64_t count = count_of(in[0]);
    if (count == 0)
        return 0;
    if (in[0]->dtype == FL_INT32)
        return fl_cuda_launched(fl_cu_accumulate_i32(in[0]->data, in[1]->data, count, d->stream));
    return fl_cuda_launched(fl_cu_accumulate_f32(in[0]->data, in[1]->data, count, d->stream));
}

/* ---- optimizer updates, in place on the variable and its slots ---- */

static FL_CUDA_KERNEL(apply_gradient_descent)
{
    (void)out;
    (void)ctx;
    int64_t count = count_of(in[0]);
    if (count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_apply_gradient_descent(in[0]->data, in[1]->data,
                                                         n->attrs.learning_rate, count, d->stream));
}

static FL_CUDA_KERNEL(apply_momentum)
{
    (void)out;
    (void)ctx;
    int64_t count = count_of(in[0]);
    if (count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_apply_momentum(in[0]->data, in[1]->data, in[2]->data,
                                                 n->attrs.learning_rate, n->attrs.momentum,
                                                 n->attrs.use_nesterov, count, d->stream));
}

/* Inputs: var, m, v, beta1_power, beta2_power, grad. */
static FL_CUDA_KERNEL(apply_adam)
{
    (void)out;
    (void)ctx;
    int64_t count = count_of(in[0]);
    if (count == 0)
        return 0;
    const fl_attrs *a = &n->attrs;
    return fl_cuda_launched(fl_cu_apply_adam(in[0]->data, in[1]->data, in[2]->data, in[3]->data,
                                             in[4]->data, in[5]->data, a->learning_rate, a->beta1,
                                             a->beta2, a->epsilon, count, d->stream));
}

/* Identity, StopGradient and Reshape alias their input (the session gives
 * them input 0's buffer), so fl_cuda_copy_input0 has nothing to do for
 * them; Copy gets a buffer of its own and copies. */
static const fl_cuda_kernel kernels[FL_OP_COUNT] = {
    [FL_OP_FILL] = fill,
    [FL_OP_RANDOM_UNIFORM] = random_uniform,
    [FL_OP_TRUNCATED_NORMAL] = truncated_normal,
    [FL_OP_ASSIGN] = assign,
    [FL_OP_ASSIGN_ADD] = assign_add,
    [FL_OP_MATMUL] = matmul,
    [FL_OP_ADD] = add,
    [FL_OP_SUB] = sub,
    [FL_OP_MUL] = mul,
    [FL_OP_DIV] = divide,
    [FL_OP_NEG] = neg,
    [FL_OP_ADD_N] = add_n,
    [FL_OP_SUM_TO_SHAPE] = fl_cuda_sum_to_shape,
    [FL_OP_DIV_GRAD_B] = div_grad_b,
    [FL_OP_RELU] = relu,
    [FL_OP_RELU_GRAD] = relu_grad,
    [FL_OP_SIGMOID] = sigmoid,
    [FL_OP_SIGMOID_GRAD] = sigmoid_grad,
    [FL_OP_TANH] = tanh_activation,
    [FL_OP_TANH_GRAD] = tanh_grad,
    [FL_OP_SOFTMAX] = softmax,
    [FL_OP_SOFTMAX_GRAD] = softmax_grad,
    [FL_OP_SPARSE_XENT] = sparse_xent,
    [FL_OP_SPARSE_XENT_GRAD] = sparse_xent_grad,
    [FL_OP_REDUCE_SUM] = fl_cuda_reduce_sum,
    [FL_OP_REDUCE_MEAN] = fl_cuda_reduce_mean,
    [FL_OP_REDUCE_GRAD] = fl_cuda_reduce_grad,
    [FL_OP_RESHAPE] = fl_cuda_copy_input0,
    [FL_OP_CONCAT] = fl_cuda_concat,
    [FL_OP_SLICE] = fl_cuda_slice,
    [FL_OP_SLICE_GRAD] = fl_cuda_slice_grad,
    [FL_OP_IDENTITY] = fl_cuda_copy_input0,
    [FL_OP_STOP_GRADIENT] = fl_cuda_copy_input0,
    [FL_OP_CAST] = fl_cuda_cast,
    [FL_OP_ARGMAX] = fl_cuda_argmax,
    [FL_OP_EQUAL] = fl_cuda_equal,
    [FL_OP_CONV2D] = fl_cuda_conv2d,
    [FL_OP_CONV2D_BACKPROP_INPUT] = fl_cuda_conv2d_backprop_input,
    [FL_OP_CONV2D_BACKPROP_FILTER] = fl_cuda_conv2d_backprop_filter,
    [FL_OP_MAX_POOL] = fl_cuda_max_pool,
    [FL_OP_MAX_POOL_GRAD] = fl_cuda_max_pool_grad,
    [FL_OP_APPLY_GRADIENT_DESCENT] = apply_gradient_descent,
    [FL_OP_APPLY_MOMENTUM] = apply_momentum,
    [FL_OP_APPLY_ADAM] = apply_adam,
};

bool fl_cuda_has_kernel(fl_op_kind op) { return op >= 0 && op < FL_OP_COUNT && kernels[op] != NULL; }

int fl_cuda_run_op(fl_cuda_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                   const fl_kernel_ctx *ctx)
{
    if (!fl_cuda_has_kernel(n->op)) {
        fl_set_error("the CUDA backend has no kernel for %s", fl_op_def_of(n->op)->type);
        return -1;
    }
    return kernels[n->op](d, n, in, out, ctx);
}
