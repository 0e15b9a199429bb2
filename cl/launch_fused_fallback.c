/* launch_fused_fallback.c: correct but unhurried versions of the kernels
 * the fused ops call on CPU-type devices (launch_fused.c), until the fast
 * ones land: the product, then the epilogue as a pass of its own; the
 * pooling gradient, then the ReLU mask as a pass of its own. The fused op
 * still saves an op, a buffer and a launch, not yet the memory pass.
 * Integrator: delete this file once fl_cl_gemm_epilogue (launch_matmul.c),
 * fl_cl_max_pool_grad_masked (launch_conv.c) and the epilogue-taking
 * fl_cl_conv2d_implicit (launch_conv_gemm.c) are in, and let
 * launch_fused.c's FusedConv2D call, for CPU-type devices,
 * fl_cl_conv2d_winograd where fl_cl_winograd_applies, else
 * fl_cl_conv2d_implicit(d, &g, x, filter, &e, y). */
#include "launch.h"

int fl_cl_gemm_epilogue(fl_cl_device *d, bool ta, bool tb, int m, int n, int k, const void *a,
                        const void *b, void *c, const fl_cl_epilogue *epilogue)
{
    if (fl_cl_gemm_at(d, ta, tb, m, n, k, a, 0, b, 0, c, 0, false) != 0)
        return -1;
    return epilogue ? fl_cl_bias_relu(d, c, m * n, n, epilogue) : 0;
}

/* conv.cl's max_pool_grad, as fl_cl_max_pool_grad enqueues it: windows
 * that tile the image write every pixel they cover, one window per
 * work-item; pixels in no window are zeroed first. */
static int max_pool_grad(fl_cl_device *d, const fl_conv_geometry *g, const void *x, const void *dy, void *dx)
{
    int tiled = g->sh >= g->kh && g->sw >= g->kw;
    bool covered = g->sh == g->kh && g->sw == g->kw && g->oh * g->sh - g->pad_top >= g->h &&
                   g->ow * g->sw - g->pad_left >= g->w;
    size_t bytes = (size_t)g->batch * g->h * g->w * g->c * sizeof(float);
    if (tiled && !covered && fl_cl_fill_bytes(d, dx, 0, bytes) != 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_MAX_POOL_GRAD);
    fl_cl_mem(&c, dy);
    fl_cl_mem(&c, x);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_int(&c, tiled);
    fl_cl_mem(&c, dx);
    int pixels = tiled ? g->batch * g->oh * g->ow : g->batch * g->h * g->w;
    return fl_cl_run(&c, g->c ? (size_t)pixels * (size_t)((g->c + 3) / 4) : 0);
}

int fl_cl_max_pool_grad_masked(fl_cl_device *d, const fl_conv_geometry *g, const void *x,
                               const void *dy, bool relu_mask, void *dx)
{
    if (max_pool_grad(d, g, x, dy, dx) != 0)
        return -1;
    if (!relu_mask)
        return 0;
    int count = g->batch * g->h * g->w * g->c;
    fl_cl_call c = fl_cl_begin(d, K_RELU_GRAD_CHUNKS); /* ReluGrad(dx, x), in place */
    fl_cl_mem(&c, dx);
    fl_cl_mem(&c, x);
    fl_cl_mem(&c, dx);
    fl_cl_int(&c, count);
    fl_cl_int(&c, d->chunk);
    return fl_cl_run_chunks(&c, (size_t)count);
}
