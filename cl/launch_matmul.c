/* launch_matmul.c: MatMul, and the GEMM every matrix product of this backend
 * goes through (the convolutions' too, on GPU-type devices): CLBlast's, or
 * flowlab's own kernel (cl/gemm.c, cl/matmul.cl). */
#include <clblast_c.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

/* Which GEMM: CLBlast is tuned for GPUs, so a GPU-type OpenCL device uses
 * it; on a CPU device (PoCL) flowlab's own kernel (cl/gemm.c) is about ten
 * times faster (make bench). FLOWLAB_CL_GEMM=clblast|flowlab overrides. */
bool fl_cl_use_clblast(const fl_cl_device *d)
{
    const char *forced = getenv("FLOWLAB_CL_GEMM");
    if (forced && strcmp(forced, "clblast") == 0)
        return true;
    if (forced && strcmp(forced, "flowlab") == 0)
        return false;
    cl_device_type type = 0;
    clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    return (type & CL_DEVICE_TYPE_GPU) != 0;
}

static int clblast_gemm_at(fl_cl_device *d, bool ta, bool tb, int m, int n, int k, const void *a,
                           size_t a_at, const void *b, size_t b_at, void *c, size_t c_at, bool accumulate)
{
    cl_command_queue queue = d->queue;
    CLBlastStatusCode status = CLBlastSgemm(
        CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
        tb ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t)m, (size_t)n, (size_t)k, 1.0f, (cl_mem)a, a_at,
        (size_t)(ta ? m : k), (cl_mem)b, b_at, (size_t)(tb ? k : n), accumulate ? 1.0f : 0.0f, (cl_mem)c, c_at,
        (size_t)n, &queue, NULL);
    if (status != CLBlastSuccess) {
        fl_set_error_code(FL_INTERNAL, "GEMM (CLBlastSgemm %dx%dx%d) failed with status %d", m, n, k, (int)status);
        return -1;
    }
    return 0;
}

int fl_cl_gemm_at(fl_cl_device *d, bool ta, bool tb, int m, int n, int k, const void *a,
                   size_t a_at, const void *b, size_t b_at, void *c, size_t c_at, bool accumulate)
{
    if (fl_cl_use_clblast(d))
        return clblast_gemm_at(d, ta, tb, m, n, k, a, a_at, b, b_at, c, c_at, accumulate);
    if (fl_cl_gemm_enqueue(d->gemm, d->queue, ta, tb, m, n, k, (cl_mem)a, a_at, (cl_mem)b, b_at,
                           (cl_mem)c, c_at, accumulate ? 1.0f : 0.0f, 0, NULL, NULL) != 0) {
        fl_set_error_code(FL_INTERNAL, "GEMM (cl/gemm.c): %s", fl_cl_gemm_error(d->gemm));
        return -1;
    }
    return 0;
}

int fl_cl_gemm_epilogue(fl_cl_device *d, bool ta, bool tb, int m, int n, int k, const void *a,
                        const void *b, void *c, const fl_cl_epilogue *epilogue)
{
    cl_mem bias = epilogue ? (cl_mem)epilogue->bias : NULL;
    int relu = epilogue && epilogue->relu;
    if (fl_cl_use_clblast(d)) {
        if (clblast_gemm_at(d, ta, tb, m, n, k, a, 0, b, 0, c, 0, false) != 0)
            return -1;
        /* CLBlast has no epilogue: one pass over C */
        return epilogue ? fl_cl_bias_relu(d, c, m * n, n, epilogue) : 0;
    }
    if (fl_cl_gemm_enqueue_epilogue(d->gemm, d->queue, ta, tb, m, n, k, (cl_mem)a, 0, (cl_mem)b, 0,
                                    (cl_mem)c, 0, 0.0f, bias, relu, 0, NULL, NULL) == 0)
        return 0;
    fl_set_error_code(FL_INTERNAL, "GEMM %dx%dx%d with its bias/ReLU epilogue (cl/gemm.c): %s", m, n, k,
                      fl_cl_gemm_error(d->gemm));
    return -1;
}

int fl_cl_matmul_epilogue(fl_cl_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                          const fl_cl_epilogue *epilogue)
{
    fl_matmul_dims dims = fl_matmul_dims_of(n, in[0]->shape, out->shape);
    if (fl_cl_count(in[0]) < 0 || fl_cl_count(in[1]) < 0 || fl_cl_count(out) < 0)
        return -1;
    return fl_cl_gemm_epilogue(d, dims.transpose_a, dims.transpose_b, dims.m, dims.n, dims.k, in[0]->data,
                               in[1]->data, out->data, epilogue);
}

/* C[M,N] = op(A) op(B). */
FL_CL_OP(fl_cl_matmul)
{
    (void)ctx;
    return fl_cl_matmul_epilogue(d, n, in, out, NULL);
}
