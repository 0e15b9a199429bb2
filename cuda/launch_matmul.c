/* launch_matmul.c: MatMul through cuBLAS, the CUDA launcher of the op
 * (cl/launch_matmul.c is OpenCL's). The convolutions go through cuDNN
 * instead (launch_conv.c). */
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
