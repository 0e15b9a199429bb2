/* launch_matmul.c: MatMul through cuBLAS, the CUDA launcher of the op
 * (cl/launch_matmul.c is OpenCL's), and FusedMatMul: the product, then the
 * bias and ReLU in one kernel, in place (host_fused.c's semantics). The
 * convolutions go through cuDNN instead (launch_conv.c). */
#include "launch.h"

/* ---- MatMul through cuBLAS ----
 * cuBLAS is column-major; flowlab is row-major. A row-major [r,c] buffer
 * read column-major is its transpose [c,r]. So instead of C = op(A) op(B)
 * we ask cuBLAS for C^T = op(B)^T op(A)^T, which it writes column-major:
 * exactly row-major C. That swaps the operands (B first) and M with N; each
 * operand keeps its own transpose flag, and its leading dimension is the
 * number of columns it has as stored (row-major). */
FL_CUDA_OP(fl_cuda_matmul)
{
    (void)ctx;
    fl_matmul_dims mm = fl_matmul_dims_of(n, in[0]->shape, out->shape);
    if (mm.m == 0 || mm.n == 0)
        return 0;
    if (mm.k == 0) /* a sum of nothing; cuBLAS would need valid strides for empty operands */
        return fl_cuda_check(cudaMemsetAsync(out->data, 0, fl_tensor_bytes(out), d->stream), "cudaMemsetAsync");
    const float one = 1.0f, zero = 0.0f;
    return fl_cublas_check(cublasSgemm(d->cublas, mm.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                       mm.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, mm.n, mm.m, mm.k, &one,
                                       in[1]->data, mm.ldb, in[0]->data, mm.lda, &zero, out->data, mm.n),
                           "cublasSgemm");
}

int fl_cuda_bias_relu(fl_cuda_device *d, bool relu, const fl_tensor *bias, fl_tensor *out)
{
    int64_t count = fl_shape_size(out->shape), columns = fl_shape_size(bias->shape);
    if (columns <= 0 || count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_bias_relu(out->data, bias->data, columns, count, relu, d->stream));
}

/* FusedMatMul(a, b, bias): a ReLU'd dense layer in two launches, not three. */
FL_CUDA_OP(fl_cuda_fused_matmul)
{
    if (fl_cuda_matmul(d, n, in, out, ctx) != 0)
        return -1;
    return fl_cuda_bias_relu(d, n->attrs.fused_relu, in[2], out);
}
