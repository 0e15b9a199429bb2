/* launch_fused.c: launchers for the ops the session fuses
 * (src/session_fusion.c). On a CPU-type device the product's own kernel
 * applies the bias and ReLU as it stores each result, so the values make
 * one trip through memory instead of three; on a GPU-type device, where
 * CLBlast multiplies and cannot, the epilogue is one pass after it
 * (bias_relu_chunks) instead of two ops. */
#include "launch.h"

/* What FusedConv2D and FusedMatMul do after the product: input 2 is the bias. */
static fl_cl_epilogue epilogue_of(const fl_node *n, fl_tensor *const *in)
{
    return (fl_cl_epilogue){in[2]->data, n->attrs.fused_relu};
}

/* The epilogue as a pass over out, whose last axis is the bias's. */
static int epilogue_pass(fl_cl_device *d, fl_tensor *out, const fl_cl_epilogue *e)
{
    int count = fl_cl_count(out);
    if (count < 0)
        return -1;
    return fl_cl_bias_relu(d, out->data, count, (int)out->shape.dims[out->shape.rank - 1], e);
}

/* FusedConv2D(x, filter, bias) */
FL_CL_OP(fl_cl_fused_conv2d)
{
    fl_cl_epilogue e = epilogue_of(n, in);
    if (fl_cl_count(out) < 0)
        return -1;
    if (fl_cl_use_clblast(d)) /* im2col and CLBlast, then the pass */
        return fl_cl_conv2d(d, n, in, out, ctx) != 0 ? -1 : epilogue_pass(d, out, &e);
    fl_conv_geometry g = fl_conv_geometry_of(n, in[0]->shape, in[1]->shape);
    if (fl_cl_winograd_applies(d, &g))
        return fl_cl_conv2d_winograd(d, &g, in[0]->data, in[1]->data, &e, out->data);
    return fl_cl_conv2d_implicit(d, &g, in[0]->data, in[1]->data, &e, out->data);
}

/* FusedMatMul(a, b, bias), MatMul's transposes kept. */
FL_CL_OP(fl_cl_fused_matmul)
{
    (void)ctx;
    fl_cl_epilogue e = epilogue_of(n, in);
    return fl_cl_matmul_epilogue(d, n, in, out, &e);
}

/* MaxPoolReluGrad(dy, x, y): MaxPoolGrad's dx, zero where x <= 0. */
FL_CL_OP(fl_cl_max_pool_relu_grad)
{
    (void)ctx;
    if (fl_cl_count(out) < 0)
        return -1;
    fl_conv_geometry g = fl_pool_geometry_of(n, in[1]->shape);
    return fl_cl_max_pool_grad_masked(d, &g, in[1]->data, in[0]->data, true, out->data);
}
