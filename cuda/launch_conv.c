/* launch_conv.c: Conv2D, its two gradients, MaxPool and MaxPoolGrad through cuDNN.
 * Tensors are NHWC (CUDNN_TENSOR_NHWC). Two things stand between flowlab's
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
 *    tap never wins whatever cuDNN's own padding would hold.
 * Scratch comes from the pool and goes back right after the enqueue: the
 * stream runs in order, so no later op can touch it before cuDNN is done. */
#include <math.h>
#include <string.h>

#include "conv_geometry.h"
#include "launch.h"

/* Rows (columns) cuDNN cannot pad: the "after" side's surplus. */
static int extra_h(const fl_conv_geometry *g) { return fl_conv_pad_bottom(g) - g->pad_top; }
static int extra_w(const fl_conv_geometry *g) { return fl_conv_pad_right(g) - g->pad_left; }
static bool uneven(const fl_conv_geometry *g) { return extra_h(g) > 0 || extra_w(g) > 0; }
/* The image with all its padding, before and after, as pooling sees it. */
static int padded_h(const fl_conv_geometry *g) { return g->pad_top + g->h + fl_conv_pad_bottom(g); }
static int padded_w(const fl_conv_geometry *g) { return g->pad_left + g->w + fl_conv_pad_right(g); }

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

/* ---- descriptors, made per call (host-side structs, cheap) ---- */

typedef struct {
    cudnnTensorDescriptor_t x, y;     /* image (as cuDNN sees it: maybe padded) and output */
    cudnnFilterDescriptor_t filter;
    cudnnConvolutionDescriptor_t conv;
    cudnnPoolingDescriptor_t pool;
} descriptors;

static void destroy_descriptors(descriptors *ds)
{
    if (ds->x) cudnnDestroyTensorDescriptor(ds->x);
    if (ds->y) cudnnDestroyTensorDescriptor(ds->y);
    if (ds->filter) cudnnDestroyFilterDescriptor(ds->filter);
    if (ds->conv) cudnnDestroyConvolutionDescriptor(ds->conv);
    if (ds->pool) cudnnDestroyPoolingDescriptor(ds->pool);
}

static int nhwc(cudnnTensorDescriptor_t *t, int n, int h, int w, int c)
{
    if (fl_cudnn_check(cudnnCreateTensorDescriptor(t), "cudnnCreateTensorDescriptor") != 0)
        return -1;
    return fl_cudnn_check(cudnnSetTensor4dDescriptor(*t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w),
                          "cudnnSetTensor4dDescriptor");
}

/* The image cuDNN sees has the explicit rows and columns added. Full
 * float32 math (CUDNN_FMA_MATH): no TF32 tensor cores, which would round
 * inputs to 10 bits of mantissa and drift from the host's results. */
static int conv_descriptors(const fl_conv_geometry *g, descriptors *ds)
{
    memset(ds, 0, sizeof *ds);
    if (nhwc(&ds->x, g->batch, g->h + extra_h(g), g->w + extra_w(g), g->c) ||
        nhwc(&ds->y, g->batch, g->oh, g->ow, g->oc))
        return -1;
    if (fl_cudnn_check(cudnnCreateFilterDescriptor(&ds->filter), "cudnnCreateFilterDescriptor") ||
        fl_cudnn_check(cudnnSetFilter4dDescriptor(ds->filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC,
                                                  g->oc, g->c, g->kh, g->kw), "cudnnSetFilter4dDescriptor"))
        return -1;
    if (fl_cudnn_check(cudnnCreateConvolutionDescriptor(&ds->conv), "cudnnCreateConvolutionDescriptor") ||
        fl_cudnn_check(cudnnSetConvolution2dDescriptor(ds->conv, g->pad_top, g->pad_left, g->sh, g->sw, 1, 1,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                       "cudnnSetConvolution2dDescriptor") ||
        fl_cudnn_check(cudnnSetConvolutionMathType(ds->conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType"))
        return -1;
    /* The padding arithmetic above must give TensorFlow's output size. */
    int n, c, h, w;
    if (fl_cudnn_check(cudnnGetConvolution2dForwardOutputDim(ds->conv, ds->x, ds->filter, &n, &c, &h, &w),
                       "cudnnGetConvolution2dForwardOutputDim"))
        return -1;
    if (h != g->oh || w != g->ow) {
        fl_set_error("cuDNN would compute a %dx%d output, not %dx%d", h, w, g->oh, g->ow);
        return -1;
    }
    return 0;
}

/* Pooling pads explicitly (with -inf), so cuDNN sees a padded image and no padding. */
static int pool_descriptors(const fl_conv_geometry *g, descriptors *ds)
{
    memset(ds, 0, sizeof *ds);
    if (nhwc(&ds->x, g->batch, padded_h(g), padded_w(g), g->c) ||
        nhwc(&ds->y, g->batch, g->oh, g->ow, g->c))
        return -1;
    if (fl_cudnn_check(cudnnCreatePoolingDescriptor(&ds->pool), "cudnnCreatePoolingDescriptor") != 0)
        return -1;
    return fl_cudnn_check(cudnnSetPooling2dDescriptor(ds->pool, CUDNN_POOLING_MAX_DETERMINISTIC,
                                                      CUDNN_NOT_PROPAGATE_NAN, g->kh, g->kw, 0, 0,
                                                      g->sh, g->sw), "cudnnSetPooling2dDescriptor");
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
    return padded_copy(d, g, x, 0, extra_h(g), 0, extra_w(g), 0.0f);
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

/* ---- algorithms: cuDNN's own first choice that it says will work ---- */

static int forward_algo(fl_cuda_device *d, const descriptors *ds, cudnnConvolutionFwdAlgo_t *algo, size_t *ws)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    if (fl_cudnn_check(cudnnGetConvolutionForwardAlgorithm_v7(d->cudnn, ds->x, ds->filter, ds->conv, ds->y,
                                                              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
                       "cudnnGetConvolutionForwardAlgorithm_v7"))
        return -1;
    for (int i = 0; i < found; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) {
            *algo = perf[i].algo;
            return fl_cudnn_check(cudnnGetConvolutionForwardWorkspaceSize(d->cudnn, ds->x, ds->filter, ds->conv,
                                                                          ds->y, *algo, ws),
                                  "cudnnGetConvolutionForwardWorkspaceSize");
        }
    fl_set_error("cuDNN has no forward convolution algorithm for these shapes");
    return -1;
}

static int backward_data_algo(fl_cuda_device *d, const descriptors *ds, cudnnConvolutionBwdDataAlgo_t *algo,
                              size_t *ws)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int found = 0;
    if (fl_cudnn_check(cudnnGetConvolutionBackwardDataAlgorithm_v7(d->cudnn, ds->filter, ds->y, ds->conv, ds->x,
                                                                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found,
                                                                   perf),
                       "cudnnGetConvolutionBackwardDataAlgorithm_v7"))
        return -1;
    for (int i = 0; i < found; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) {
            *algo = perf[i].algo;
            return fl_cudnn_check(cudnnGetConvolutionBackwardDataWorkspaceSize(d->cudnn, ds->filter, ds->y,
                                                                               ds->conv, ds->x, *algo, ws),
                                  "cudnnGetConvolutionBackwardDataWorkspaceSize");
        }
    fl_set_error("cuDNN has no backward-data convolution algorithm for these shapes");
    return -1;
}

static int backward_filter_algo(fl_cuda_device *d, const descriptors *ds,
                                cudnnConvolutionBwdFilterAlgo_t *algo, size_t *ws)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int found = 0;
    if (fl_cudnn_check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(d->cudnn, ds->x, ds->y, ds->conv,
                                                                     ds->filter,
                                                                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                                     &found, perf),
                       "cudnnGetConvolutionBackwardFilterAlgorithm_v7"))
        return -1;
    for (int i = 0; i < found; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) {
            *algo = perf[i].algo;
            return fl_cudnn_check(cudnnGetConvolutionBackwardFilterWorkspaceSize(d->cudnn, ds->x, ds->y,
                                                                                 ds->conv, ds->filter, *algo, ws),
                                  "cudnnGetConvolutionBackwardFilterWorkspaceSize");
        }
    fl_set_error("cuDNN has no backward-filter convolution algorithm for these shapes");
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

static int conv_forward(fl_cuda_device *d, const descriptors *ds, const float *image, const float *filter,
                        float *y)
{
    cudnnConvolutionFwdAlgo_t algo;
    size_t ws = 0;
    bool failed;
    if (forward_algo(d, ds, &algo, &ws) != 0)
        return -1;
    void *work = workspace(d, ws, &failed);
    if (failed)
        return out_of_memory("convolution workspace");
    int rc = fl_cudnn_check(cudnnConvolutionForward(d->cudnn, &one, ds->x, image, ds->filter, filter, ds->conv,
                                                    algo, work, ws, &zero_f, ds->y, y),
                            "cudnnConvolutionForward");
    fl_cuda_pool_put(d, work);
    return rc;
}

FL_CUDA_OP(fl_cuda_conv2d)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[0]->shape, in[1]->shape);
    if (empty(&g))
        return zero(d, out);
    descriptors ds;
    int rc = conv_descriptors(&g, &ds);
    float *filter = rc == 0 ? filter_to_cudnn(d, &g, in[1]->data) : NULL;
    const float *image = filter ? conv_image(d, &g, in[0]->data) : NULL;
    if (rc == 0 && (!filter || !image))
        rc = out_of_memory("convolution");
    if (rc == 0)
        rc = conv_forward(d, &ds, image, filter, out->data);
    if (image)
        release_image(d, image, in[0]->data);
    fl_cuda_pool_put(d, filter);
    destroy_descriptors(&ds);
    return rc;
}

/* ---- Conv2DBackpropInput(dy, filter, input): dx shaped like the input ---- */

static int conv_backward_data(fl_cuda_device *d, const descriptors *ds, const float *filter, const float *dy,
                              float *dx)
{
    cudnnConvolutionBwdDataAlgo_t algo;
    size_t ws = 0;
    bool failed;
    if (backward_data_algo(d, ds, &algo, &ws) != 0)
        return -1;
    void *work = workspace(d, ws, &failed);
    if (failed)
        return out_of_memory("convolution workspace");
    int rc = fl_cudnn_check(cudnnConvolutionBackwardData(d->cudnn, &one, ds->filter, filter, ds->y, dy, ds->conv,
                                                         algo, work, ws, &zero_f, ds->x, dx),
                            "cudnnConvolutionBackwardData");
    fl_cuda_pool_put(d, work);
    return rc;
}

/* With uneven padding cuDNN computes the gradient of the padded image; the
 * extra row/column is padding, so its gradient is dropped by the crop. */
FL_CUDA_OP(fl_cuda_conv2d_backprop_input)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[2]->shape, in[1]->shape);
    if (empty(&g))
        return zero(d, out);
    descriptors ds;
    int rc = conv_descriptors(&g, &ds);
    float *filter = rc == 0 ? filter_to_cudnn(d, &g, in[1]->data) : NULL;
    size_t padded = (size_t)g.batch * (size_t)(g.h + extra_h(&g)) * (size_t)(g.w + extra_w(&g)) * (size_t)g.c;
    float *dx = filter && uneven(&g) ? fl_cuda_pool_get(d, padded * sizeof(float)) : out->data;
    if (rc == 0 && (!filter || !dx))
        rc = out_of_memory("convolution gradient");
    if (rc == 0)
        rc = conv_backward_data(d, &ds, filter, in[0]->data, dx);
    if (rc == 0 && dx != out->data)
        rc = fl_cuda_launched(fl_cu_crop_nhwc(dx, out->data, g.batch, g.h, g.w, g.c, 0, extra_h(&g), 0,
                                              extra_w(&g), d->stream));
    if (dx != out->data)
        fl_cuda_pool_put(d, dx);
    fl_cuda_pool_put(d, filter);
    destroy_descriptors(&ds);
    return rc;
}

/* ---- Conv2DBackpropFilter(dy, input, filter): df shaped like the filter ---- */

static int conv_backward_filter(fl_cuda_device *d, const descriptors *ds, const float *image, const float *dy,
                                float *df)
{
    cudnnConvolutionBwdFilterAlgo_t algo;
    size_t ws = 0;
    bool failed;
    if (backward_filter_algo(d, ds, &algo, &ws) != 0)
        return -1;
    void *work = workspace(d, ws, &failed);
    if (failed)
        return out_of_memory("convolution workspace");
    int rc = fl_cudnn_check(cudnnConvolutionBackwardFilter(d->cudnn, &one, ds->x, image, ds->y, dy, ds->conv,
                                                           algo, work, ws, &zero_f, ds->filter, df),
                            "cudnnConvolutionBackwardFilter");
    fl_cuda_pool_put(d, work);
    return rc;
}

/* cuDNN writes [Cout,KH,KW,Cin]; transposed back to [KH,KW,Cin,Cout]. */
FL_CUDA_OP(fl_cuda_conv2d_backprop_filter)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[1]->shape, in[2]->shape);
    if (empty(&g))
        return zero(d, out);
    descriptors ds;
    int rc = conv_descriptors(&g, &ds);
    int64_t taps = (int64_t)g.kh * g.kw * g.c;
    float *df = rc == 0 ? fl_cuda_pool_get(d, (size_t)(taps * g.oc) * sizeof(float)) : NULL;
    const float *image = df ? conv_image(d, &g, in[1]->data) : NULL;
    if (rc == 0 && (!df || !image))
        rc = out_of_memory("filter gradient");
    if (rc == 0)
        rc = conv_backward_filter(d, &ds, image, in[0]->data, df);
    if (rc == 0)
        rc = fl_cuda_launched(fl_cu_transpose(df, out->data, g.oc, taps, d->stream));
    if (image)
        release_image(d, image, in[1]->data);
    fl_cuda_pool_put(d, df);
    destroy_descriptors(&ds);
    return rc;
}

/* ---- MaxPool(x) and MaxPoolGrad(dy, x, y) ---- */

static bool padded(const fl_conv_geometry *g) { return padded_h(g) > g->h || padded_w(g) > g->w; }

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
    descriptors ds;
    int rc = pool_descriptors(&g, &ds);
    const float *image = rc == 0 ? pool_image(d, &g, in[0]->data) : NULL;
    if (rc == 0 && !image)
        rc = out_of_memory("max-pool");
    if (rc == 0)
        rc = fl_cudnn_check(cudnnPoolingForward(d->cudnn, ds.pool, &one, ds.x, image, &zero_f, ds.y, out->data),
                            "cudnnPoolingForward");
    if (image)
        release_image(d, image, in[0]->data);
    destroy_descriptors(&ds);
    return rc;
}

/* cuDNN sends each window's dy to the tap holding its maximum. Where two
 * taps tie, the host picks the first; cuDNN does not promise which. Random
 * inputs tie almost never; inputs built with equal values may differ. */
FL_CUDA_OP(fl_cuda_max_pool_grad)
{
    (void)ctx;
    if (fl_shape_size(out->shape) == 0)
        return 0;
    if (fl_shape_size(in[0]->shape) == 0)
        return zero(d, out);
    fl_conv_geometry g = fl_pool_geometry_of(n, in[1]->shape);
    descriptors ds;
    int rc = pool_descriptors(&g, &ds);
    const float *image = rc == 0 ? pool_image(d, &g, in[1]->data) : NULL;
    size_t count = (size_t)g.batch * (size_t)padded_h(&g) * (size_t)padded_w(&g) * (size_t)g.c;
    float *dx = image && padded(&g) ? fl_cuda_pool_get(d, count * sizeof(float)) : out->data;
    if (rc == 0 && (!image || !dx))
        rc = out_of_memory("max-pool gradient");
    if (rc == 0)
        rc = fl_cudnn_check(cudnnPoolingBackward(d->cudnn, ds.pool, &one, ds.y, in[2]->data, ds.y, in[0]->data,
                                                 ds.x, image, &zero_f, ds.x, dx),
                            "cudnnPoolingBackward");
    if (rc == 0 && dx != out->data)
        rc = fl_cuda_launched(fl_cu_crop_nhwc(dx, out->data, g.batch, g.h, g.w, g.c, g.pad_top,
                                              fl_conv_pad_bottom(&g), g.pad_left, fl_conv_pad_right(&g),
                                              d->stream));
    if (dx != out->data)
        fl_cuda_pool_put(d, dx);
    if (image)
        release_image(d, image, in[1]->data);
    destroy_descriptors(&ds);
    return rc;
}
