/* launch_conv.c: Conv2D, its two gradients and MaxPool through cuDNN, the
 * fused FusedConv2D, and MaxPoolGrad and MaxPoolReluGrad through our own
 * kernel (pool_grad.cu). Each cuDNN call finds its
 * shape's descriptors and algorithm in the device's plans (conv_plans.c,
 * made on the shape's first call) and only enqueues. Tensors are NHWC (CUDNN_TENSOR_NHWC). Two things stand between flowlab's
 * ops and cuDNN's calls:
 *  - Filters. flowlab (like TensorFlow) stores [KH,KW,Cin,Cout]; cuDNN's
 *    NHWC filter is [Cout,KH,KW,Cin]. Seen as a matrix [KH*KW*Cin, Cout] the
 *    one is the transpose of the other, so a transpose into scratch goes in,
 *    and one comes back out for the filter gradient.
 *  - Padding. TensorFlow's SAME pads (out-1)*stride + k - in in all, half
 *    before and the rest after: an odd total puts one more row (column)
 *    after the image than before. cuDNN pads both sides alike. So the one
 *    extra row/column is added explicitly, into a scratch copy of the image
 *    (zeros), and cuDNN pads the symmetric rest itself; gradients are
 *    computed for the padded image and cropped back.
 *    Max-pooling pads everything explicitly, with -infinity, so a padded
 *    tap never wins whatever cuDNN's own padding would hold (its gradient,
 *    pool_grad.cu's, skips padding itself).
 * Scratch (and cuDNN's workspace) comes from the pool on every call and goes
 * back right after the enqueue: the stream runs in order, so no later op can
 * touch it before cuDNN is done. */
#include <math.h>
#include <string.h>

#include "conv_plans.h"
#include "launch.h"

/* Whether cuDNN needs rows (columns) it cannot pad: the "after" side's surplus. */
static bool uneven(const fl_conv_geometry *g) { return fl_conv_extra_h(g) > 0 || fl_conv_extra_w(g) > 0; }

/* A convolution over nothing (no batch, channels or pixels) is all zeros. */
static bool empty(const fl_conv_geometry *g)
{
    return g->batch == 0 || g->h == 0 || g->w == 0 || g->c == 0 || g->oc == 0 || g->oh <= 0 || g->ow <= 0;
}

static int zero(fl_cuda_device *d, fl_tensor *t)
{
    size_t bytes = fl_tensor_bytes(t);
    if (bytes == 0)
        return 0;
    return fl_cuda_check(cudaMemsetAsync(t->data, 0, bytes, d->stream), "cudaMemsetAsync");
}

/* ---- scratch: filter transposes and padded images ---- */

/* [KH,KW,Cin,Cout] -> [Cout,KH,KW,Cin] in a pool buffer. */
static float *filter_to_cudnn(fl_cuda_device *d, const fl_conv_geometry *g, const float *hwio)
{
    int64_t taps = (int64_t)g->kh * g->kw * g->c;
    float *ohwi = fl_cuda_pool_get(d, (size_t)(taps * g->oc) * sizeof(float));
    if (!ohwi)
        return NULL;
    if (fl_cuda_launched(fl_cu_transpose(hwio, ohwi, taps, g->oc, d->stream)) != 0) {
        fl_cuda_pool_put(d, ohwi);
        return NULL;
    }
    return ohwi;
}

/* x with `fill` around it: the given rows and columns before and after. */
static float *padded_copy(fl_cuda_device *d, const fl_conv_geometry *g, const float *x, int top, int bottom,
                          int left, int right, float fill)
{
    size_t count = (size_t)g->batch * (size_t)(top + g->h + bottom) * (size_t)(left + g->w + right) *
                   (size_t)g->c;
    float *p = fl_cuda_pool_get(d, count * sizeof(float));
    if (!p)
        return NULL;
    if (fl_cuda_launched(fl_cu_pad_nhwc(x, p, g->batch, g->h, g->w, g->c, top, bottom, left, right,
                                        fill, d->stream)) != 0) {
        fl_cuda_pool_put(d, p);
        return NULL;
    }
    return p;
}

/* The image as the convolution's cuDNN call reads it: x itself, or a copy
 * with the extra bottom row / right column of zeros. Free with release_image. */
static const float *conv_image(fl_cuda_device *d, const fl_conv_geometry *g, const float *x)
{
    if (!uneven(g))
        return x;
    return padded_copy(d, g, x, 0, fl_conv_extra_h(g), 0, fl_conv_extra_w(g), 0.0f);
}

static void release_image(fl_cuda_device *d, const float *image, const float *x)
{
    if (image != x)
        fl_cuda_pool_put(d, (void *)image);
}

static int out_of_memory(const char *what)
{
    fl_set_error("no GPU memory for %s scratch (%s)", what, fl_last_error());
    return -1;
}

/* Workspace of ws bytes (NULL when none is needed); *failed on no memory. */
static void *workspace(fl_cuda_device *d, size_t ws, bool *failed)
{
    void *p = fl_cuda_pool_get(d, ws);
    *failed = ws > 0 && !p;
    return p;
}

static const float one = 1.0f, zero_f = 0.0f;

/* ---- Conv2D(input, filter) ---- */

/* One convolution of plan p, its workspace from the pool; the tensors by
 * role as fl_conv_plan_run takes them. */
static int run_plan(fl_cuda_device *d, const fl_conv_plan *p, const void *x, const void *w, const void *y)
{
    bool failed;
    void *work = workspace(d, p->workspace_bytes, &failed);
    if (failed)
        return out_of_memory("convolution workspace");
    int rc = fl_conv_plan_run(d, p, x, w, y, work);
    fl_cuda_pool_put(d, work);
    return rc;
}

FL_CUDA_OP(fl_cuda_conv2d)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[0]->shape, in[1]->shape);
    if (empty(&g))
        return zero(d, out);
    const fl_conv_plan *plan = fl_conv_plan_for(d, FL_PLAN_CONV_FORWARD, &g);
    if (!plan)
        return -1;
    float *filter = filter_to_cudnn(d, &g, in[1]->data);
    const float *image = filter ? conv_image(d, &g, in[0]->data) : NULL;
    int rc = image ? run_plan(d, plan, image, filter, out->data) : out_of_memory("convolution");
    if (image)
        release_image(d, image, in[0]->data);
    fl_cuda_pool_put(d, filter);
    return rc;
}

/* FusedConv2D(input, filter, bias): the convolution, then the bias (and
 * ReLU) in place, as host_fused.c does after its own convolution. */
FL_CUDA_OP(fl_cuda_fused_conv2d)
{
    if (fl_cuda_conv2d(d, n, in, out, ctx) != 0)
        return -1;
    return fl_cuda_bias_relu(d, n->attrs.fused_relu, in[2], out);
}

/* ---- Conv2DBackpropInput(dy, filter, input): dx shaped like the input ---- */

/* With uneven padding cuDNN computes the gradient of the padded image; the
 * extra row/column is padding, so its gradient is dropped by the crop. */
FL_CUDA_OP(fl_cuda_conv2d_backprop_input)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[2]->shape, in[1]->shape);
    if (empty(&g))
        return zero(d, out);
    const fl_conv_plan *plan = fl_conv_plan_for(d, FL_PLAN_CONV_BACKWARD_DATA, &g);
    if (!plan)
        return -1;
    int eh = fl_conv_extra_h(&g), ew = fl_conv_extra_w(&g);
    float *filter = filter_to_cudnn(d, &g, in[1]->data);
    size_t padded = (size_t)g.batch * (size_t)(g.h + eh) * (size_t)(g.w + ew) * (size_t)g.c;
    float *dx = filter && uneven(&g) ? fl_cuda_pool_get(d, padded * sizeof(float)) : out->data;
    int rc = filter && dx ? run_plan(d, plan, dx, filter, in[0]->data)
                          : out_of_memory("convolution gradient");
    if (rc == 0 && dx != out->data)
        rc = fl_cuda_launched(fl_cu_crop_nhwc(dx, out->data, g.batch, g.h, g.w, g.c, 0, eh, 0, ew, d->stream));
    if (dx != out->data)
        fl_cuda_pool_put(d, dx);
    fl_cuda_pool_put(d, filter);
    return rc;
}

/* ---- Conv2DBackpropFilter(dy, input, filter): df shaped like the filter ---- */

/* cuDNN writes [Cout,KH,KW,Cin]; transposed back to [KH,KW,Cin,Cout]. */
FL_CUDA_OP(fl_cuda_conv2d_backprop_filter)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[1]->shape, in[2]->shape);
    if (empty(&g))
        return zero(d, out);
    const fl_conv_plan *plan = fl_conv_plan_for(d, FL_PLAN_CONV_BACKWARD_FILTER, &g);
    if (!plan)
        return -1;
    int64_t taps = (int64_t)g.kh * g.kw * g.c;
    float *df = fl_cuda_pool_get(d, (size_t)(taps * g.oc) * sizeof(float));
    const float *image = df ? conv_image(d, &g, in[1]->data) : NULL;
    int rc = image ? run_plan(d, plan, image, df, in[0]->data) : out_of_memory("filter gradient");
    if (rc == 0)
        rc = fl_cuda_launched(fl_cu_transpose(df, out->data, g.oc, taps, d->stream));
    if (image)
        release_image(d, image, in[1]->data);
    fl_cuda_pool_put(d, df);
    return rc;
}

/* ---- MaxPool(x), MaxPoolGrad(dy, x, y) and MaxPoolReluGrad(dy, x, y) ---- */

static bool padded(const fl_conv_geometry *g) { return fl_pool_padded_h(g) > g->h || fl_pool_padded_w(g) > g->w; }

/* x, or a copy with -inf all around (SAME windows always hold a real pixel,
 * so the -inf never reaches the output). */
static const float *pool_image(fl_cuda_device *d, const fl_conv_geometry *g, const float *x)
{
    if (!padded(g))
        return x;
    return padded_copy(d, g, x, g->pad_top, fl_conv_pad_bottom(g), g->pad_left, fl_conv_pad_right(g),
                       -INFINITY);
}

FL_CUDA_OP(fl_cuda_max_pool)
{
    (void)ctx;
    if (fl_shape_size(out->shape) == 0)
        return 0;
    fl_conv_geometry g = fl_pool_geometry_of(n, in[0]->shape);
    const fl_conv_plan *plan = fl_conv_plan_for(d, FL_PLAN_MAX_POOL, &g);
    if (!plan)
        return -1;
    const float *image = pool_image(d, &g, in[0]->data);
    if (!image)
        return out_of_memory("max-pool");
    int rc = fl_cudnn_check(cudnnPoolingForward(d->cudnn, plan->pool, &one, plan->x, image, &zero_f, plan->y,
                                                out->data),
                            "cudnnPoolingForward");
    release_image(d, image, in[0]->data);
    return rc;
}

/* MaxPoolGrad(dy, x, y) and MaxPoolReluGrad(dy, x, y): one gather kernel of
 * our own (pool_grad.cu), not cuDNN's pooling backward. cuDNN needed a
 * padded copy of x, a crop and, fused, a ReLU pass, and does not promise
 * which of two equal taps gets the gradient; the kernel reads each tensor
 * once and gives the host's answer, ties included. y is not read. */
static int max_pool_grad(fl_cuda_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out, bool relu)
{
    if (fl_shape_size(out->shape) == 0)
        return 0;
    if (fl_shape_size(in[0]->shape) == 0)
        return zero(d, out);
    fl_conv_geometry g = fl_pool_geometry_of(n, in[1]->shape);
    fl_cu_pool_window w = {g.batch, g.h, g.w, g.c, g.kh, g.kw, g.oh, g.ow, g.sh, g.sw, g.pad_top, g.pad_left};
    return fl_cuda_launched(fl_cu_max_pool_grad(w, in[0]->data, in[1]->data, out->data, relu, d->stream));
}

FL_CUDA_OP(fl_cuda_max_pool_grad)
{
    (void)ctx;
    return max_pool_grad(d, n, in, out, false);
}

/* MaxPoolGrad, then dx zeroed where x, the ReLU's output that was pooled,
 * is not positive (host_fused.c), in the same pass. */
FL_CUDA_OP(fl_cuda_max_pool_relu_grad)
{
    (void)ctx;
    return max_pool_grad(d, n, in, out, true);
}
