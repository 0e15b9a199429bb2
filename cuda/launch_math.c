/* launch_math.c: CUDA launchers for element-wise arithmetic (suffix
 * broadcasting), activations, softmax and the loss; the kernels are in
 * elementwise.cu and nn.cu. Each reads the node's attrs and the run-time
 * shapes and enqueues on the device's stream. */
#include "launch.h"

static int64_t count_of(const fl_tensor *t) { return fl_shape_size(t->shape); }

/* ---- element-wise arithmetic, suffix broadcasting ---- */

static int arith(fl_cuda_device *d, const fl_node *n, fl_cu_arith op, fl_tensor *const *in,
                 fl_tensor *out)
{
    int64_t count = count_of(out), na = count_of(in[0]), nb = count_of(in[1]);
    if (count == 0)
        return 0;
    if (out->dtype == FL_FLOAT32)
        return fl_cuda_launched(fl_cu_arith_f32(op, in[0]->data, na, in[1]->data, nb, out->data,
                                                count, d->stream));
    return fl_cuda_launched(fl_cu_arith_i32(op, in[0]->data, na, in[1]->data, nb, out->data, count,
                                            fl_cuda_fault_slot(d, n), d->stream));
}

FL_CUDA_OP(fl_cuda_add) { (void)ctx; return arith(d, n, FL_CU_ADD, in, out); }
FL_CUDA_OP(fl_cuda_sub) { (void)ctx; return arith(d, n, FL_CU_SUB, in, out); }
FL_CUDA_OP(fl_cuda_mul) { (void)ctx; return arith(d, n, FL_CU_MUL, in, out); }
FL_CUDA_OP(fl_cuda_div) { (void)ctx; return arith(d, n, FL_CU_DIV, in, out); }

FL_CUDA_OP(fl_cuda_neg)
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
FL_CUDA_OP(fl_cuda_add_n)
{
    (void)ctx;
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    if (fl_cuda_copy(d, out->data, in[0]->data, fl_tensor_bytes(out)) != 0)
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

FL_CUDA_OP(fl_cuda_div_grad_b)
{
    (void)n;
    (void)ctx;
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_div_grad_b(in[0]->data, in[1]->data, count_of(in[1]), in[2]->data,
                                             count_of(in[2]), out->data, count, d->stream));
}

/* SumToShape: the gradient of a broadcast, summed back to the operand's shape. */
FL_CUDA_OP(fl_cuda_sum_to_shape)
{
    (void)n;
    (void)ctx;
    int64_t size = count_of(out), count = count_of(in[0]);
    if (size == 0)
        return 0;
    /* The partial sums' scratch goes back at once: the stream runs in order. */
    size_t bytes = (size_t)(fl_cu_sum_to_shape_chunks(count, size) * size) * sizeof(double);
    double *partials = fl_cuda_pool_get(d, bytes);
    if (!partials) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "no GPU memory for SumToShape's %zu bytes of partial sums (%s)",
                          bytes, fl_last_error());
        return -1;
    }
    int rc = fl_cuda_launched(fl_cu_sum_to_shape(in[0]->data, count, out->data, size, partials, d->stream));
    fl_cuda_pool_put(d, partials);
    return rc;
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

FL_CUDA_OP(fl_cuda_relu) { (void)n; (void)ctx; return activation(d, FL_CU_RELU, in, out); }
FL_CUDA_OP(fl_cuda_sigmoid) { (void)n; (void)ctx; return activation(d, FL_CU_SIGMOID, in, out); }
FL_CUDA_OP(fl_cuda_tanh) { (void)n; (void)ctx; return activation(d, FL_CU_TANH, in, out); }
FL_CUDA_OP(fl_cuda_relu_grad) { (void)n; (void)ctx; return activation_grad(d, FL_CU_RELU, in, out); }
FL_CUDA_OP(fl_cuda_sigmoid_grad) { (void)n; (void)ctx; return activation_grad(d, FL_CU_SIGMOID, in, out); }
FL_CUDA_OP(fl_cuda_tanh_grad) { (void)n; (void)ctx; return activation_grad(d, FL_CU_TANH, in, out); }
FL_CUDA_OP(fl_cuda_softplus) { (void)n; (void)ctx; return activation(d, FL_CU_SOFTPLUS, in, out); }
FL_CUDA_OP(fl_cuda_softplus_grad) { (void)n; (void)ctx; return activation_grad(d, FL_CU_SOFTPLUS, in, out); }

static int last_axis(const fl_tensor *t) { return t->shape.rank ? t->shape.dims[t->shape.rank - 1] : 1; }

FL_CUDA_OP(fl_cuda_softmax)
{
    (void)n;
    (void)ctx;
    int classes = last_axis(out);
    int64_t rows = classes ? count_of(out) / classes : 0;
    if (rows == 0)
        return 0;
    return fl_cuda_launched(fl_cu_softmax(in[0]->data, out->data, rows, classes, d->stream));
}

FL_CUDA_OP(fl_cuda_softmax_grad)
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
FL_CUDA_OP(fl_cuda_sparse_xent)
{
    (void)ctx;
    int64_t rows = in[1]->shape.dims[0];
    int classes = in[1]->shape.dims[1];
    if (rows == 0)
        return 0;
    return fl_cuda_launched(fl_cu_sparse_xent(in[0]->data, in[1]->data, out->data, rows, classes,
                                              fl_cuda_fault_slot(d, n), d->stream));
}

FL_CUDA_OP(fl_cuda_sparse_xent_grad)
{
    (void)ctx;
    int64_t rows = in[2]->shape.dims[0];
    int classes = in[2]->shape.dims[1];
    if (rows == 0)
        return 0;
    return fl_cuda_launched(fl_cu_sparse_xent_grad(in[0]->data, in[1]->data, in[2]->data, out->data,
                                                   rows, classes, fl_cuda_fault_slot(d, n), d->stream));
}
