/* test_winograd.c: the Winograd F(4x4, 5x5) convolutions of
 * cl/conv_winograd.cl against a direct convolution summed in doubles:
 * Conv2D (plain, and with the bias + ReLU epilogue), Conv2DBackpropInput and
 * Conv2DBackpropFilter (conv_winograd_filter_grad.cl) on chapter 1's shapes
 * and on odd ones; when they apply; and that Conv2D
 * nodes take them unless FLOWLAB_WINOGRAD=0. Skipped without OpenCL. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device.h" /* fl_accelerator */
#include "tap.h"
#include "../cl/launch.h"

/* The largest error allowed, relative to the largest value of the result.
 * A direct float sum of a few thousand products is good to about 1e-6;
 * the transforms, whose entries reach 21/4 (B^T) and 32/45 (G), lose a few
 * bits more: up to 9e-6 on these cases, 6e-6 on conv_2's shape. The
 * filter gradient sums over the whole batch (25088 products a value at
 * conv_2's batch 128) and its transforms mix in A's 8 and G's 32/45: 1.1e-5
 * at batch 128 (measured), within the same bound. */
#define TOLERANCE 2e-5

typedef struct {
    const char *name;
    int batch, h, w, c, oc;
    fl_padding padding;
} conv_case;

static const conv_case cases[] = {
    {"chapter 1's conv_2, batch 8", 8, 14, 14, 32, 64, FL_SAME},
    {"13x13, 20 -> 24 channels", 2, 13, 13, 20, 24, FL_SAME},
    {"a 1x1 image, batch 1", 1, 1, 1, 16, 16, FL_SAME},
    {"batch 1, 9x7, 40 -> 17 channels", 1, 9, 7, 40, 17, FL_SAME},
    {"batch 2, 7x7, 72 -> 20 channels (two chunks of 64)", 2, 7, 7, 72, 20, FL_SAME},
    {"VALID, 11x10, 16 -> 33 channels", 3, 11, 10, 16, 33, FL_VALID},
    {"batch 3, 6x10, 9 -> 8 channels (the fewest it takes)", 3, 6, 10, 9, 8, FL_SAME},
    {"VALID, a 5x5 image to 1x1, 70 -> 16 channels", 2, 5, 5, 70, 16, FL_VALID},
};

static fl_conv_geometry geometry_of(const conv_case *k, int kernel, int stride)
{
    int oh = fl_conv_output_size(k->h, kernel, stride, k->padding);
    int ow = fl_conv_output_size(k->w, kernel, stride, k->padding);
    return (fl_conv_geometry){k->batch, k->h, k->w, k->c, kernel, kernel, oh, ow, k->oc,
                              stride, stride, fl_conv_pad_before(k->h, kernel, stride, k->padding),
                              fl_conv_pad_before(k->w, kernel, stride, k->padding)};
}

static float *random_floats(size_t n, uint32_t seed)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)(seed >> 8) / 16777216.0f * 2 - 1;
    }
    return v;
}

/* The direct sum for output pixel (n, oy, ox), channel o, in doubles. */
static double direct(const fl_conv_geometry *g, const float *x, const float *w, int n, int oy, int ox, int o)
{
    double sum = 0;
    for (int ky = 0; ky < g->kh; ky++)
        for (int kx = 0; kx < g->kw; kx++) {
            int y = oy - g->pad_top + ky, xx = ox - g->pad_left + kx;
            if (y < 0 || y >= g->h || xx < 0 || xx >= g->w)
                continue;
            for (int c = 0; c < g->c; c++)
                sum += (double)x[(((size_t)n * g->h + y) * g->w + xx) * g->c + c] *
                       w[((size_t)(ky * g->kw + kx) * g->c + c) * g->oc + o];
        }
    return sum;
}

/* y = conv(x, w) + bias, clamped at zero with relu (bias NULL: none). */
static double *reference_conv(const fl_conv_geometry *g, const float *x, const float *w,
                              const float *bias, bool relu)
{
    double *y = malloc((size_t)g->batch * g->oh * g->ow * g->oc * sizeof *y), *at = y;
    for (int n = 0; n < g->batch; n++)
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++)
                for (int o = 0; o < g->oc; o++, at++) {
                    *at = direct(g, x, w, n, oy, ox, o) + (bias ? bias[o] : 0);
                    *at = relu && *at < 0 ? 0 : *at;
                }
    return y;
}

/* dx = the gradient of sum(y * dy) with respect to x: each product of the
 * forward sum sends dy times its weight back to its input pixel. */
static double *reference_backprop_input(const fl_conv_geometry *g, const float *dy, const float *w)
{
    size_t count = (size_t)g->batch * g->h * g->w * g->c;
    double *dx = calloc(count, sizeof *dx);
    for (int n = 0; n < g->batch; n++)
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++)
                for (int ky = 0; ky < g->kh; ky++)
                    for (int kx = 0; kx < g->kw; kx++) {
                        int y = oy - g->pad_top + ky, x = ox - g->pad_left + kx;
                        if (y < 0 || y >= g->h || x < 0 || x >= g->w)
                            continue;
                        const float *d = dy + (((size_t)n * g->oh + oy) * g->ow + ox) * g->oc;
                        double *out = dx + (((size_t)n * g->h + y) * g->w + x) * g->c;
                        for (int c = 0; c < g->c; c++)
                            for (int o = 0; o < g->oc; o++)
                                out[c] += (double)d[o] * w[((size_t)(ky * g->kw + kx) * g->c + c) * g->oc + o];
                    }
    return dx;
}

/* dW = the gradient of sum(y * dy) with respect to w: each product of the
 * forward sum adds x times dy to its tap. */
static double *reference_backprop_filter(const fl_conv_geometry *g, const float *x, const float *dy)
{
    double *dw = calloc((size_t)25 * g->c * g->oc, sizeof *dw);
    for (int n = 0; n < g->batch; n++)
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++)
                for (int tap = 0; tap < 25; tap++) {
                    int y = oy - g->pad_top + tap / 5, xx = ox - g->pad_left + tap % 5;
                    if (y < 0 || y >= g->h || xx < 0 || xx >= g->w)
                        continue;
                    const float *d = dy + (((size_t)n * g->oh + oy) * g->ow + ox) * g->oc;
                    const float *in = x + (((size_t)n * g->h + y) * g->w + xx) * g->c;
                    for (int c = 0; c < g->c; c++)
                        for (int o = 0; o < g->oc; o++)
                            dw[((size_t)tap * g->c + c) * g->oc + o] += (double)in[c] * d[o];
                }
    return dw;
}

/* max |got - want| / max |want|. */
static double relative_error(const float *got, const double *want, size_t n)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(got[i] - want[i]));
        scale = fmax(scale, fabs(want[i]));
    }
    return scale > 0 ? worst / scale : worst;
}

/* Device buffers holding a copy of host floats (or count uninitialised). */
static void *upload(fl_device *dev, const float *host, size_t count)
{
    void *buffer = fl_device_alloc(dev, count * sizeof(float));
    if (buffer && host && dev->backend->copy_in(dev->impl, buffer, host, count * sizeof(float)) != 0)
        return NULL;
    return buffer;
}

static float *download(fl_device *dev, const void *buffer, size_t count)
{
    float *host = malloc(count * sizeof *host);
    /* copy_out only enqueues the read: the values are there after wait */
    if (dev->backend->copy_out(dev->impl, host, buffer, count * sizeof(float)) != 0 ||
        dev->backend->wait(dev->impl) != 0) {
        diag("reading the result back: %s", fl_last_error());
        memset(host, 0xff, count * sizeof *host); /* NaNs: the check fails */
    }
    return host;
}

enum { FORWARD, FORWARD_BIAS_RELU, BACKPROP_INPUT, BACKPROP_FILTER };
static const char *const kinds[] = {"Conv2D", "Conv2D + bias + ReLU", "Conv2DBackpropInput",
                                    "Conv2DBackpropFilter"};

/* A batch whose 320 tiles make two partials of the filter gradient. */
static const conv_case two_partials = {"conv_2's shape, batch 20 (two partials)", 20, 14, 14, 32, 64, FL_SAME};

/* Runs one kind of convolution of case k through Winograd and checks it. */
static void check_kind(fl_device *dev, const conv_case *k, int kind)
{
    fl_conv_geometry g = geometry_of(k, 5, 1);
    size_t xs = (size_t)g.batch * g.h * g.w * g.c, ys = (size_t)g.batch * g.oh * g.ow * g.oc;
    size_t ws = (size_t)25 * g.c * g.oc, in_count = kind == BACKPROP_INPUT ? ys : xs;
    size_t out_count = kind == BACKPROP_INPUT ? xs : kind == BACKPROP_FILTER ? ws : ys;
    size_t w_count = kind == BACKPROP_FILTER ? ys : ws; /* the filter, or dy */
    float *in = random_floats(in_count, 11), *w = random_floats(w_count, 23), *bias = random_floats(g.oc, 37);
    void *d_in = upload(dev, in, in_count), *d_w = upload(dev, w, w_count), *d_bias = upload(dev, bias, g.oc);
    void *d_out = upload(dev, NULL, out_count);
    fl_cl_epilogue epilogue = {d_bias, true};
    int rc = !d_in || !d_w || !d_bias || !d_out ? -1
           : kind == BACKPROP_INPUT ? fl_cl_conv2d_backprop_input_winograd(dev->impl, &g, d_in, d_w, d_out)
           : kind == BACKPROP_FILTER ? fl_cl_conv2d_backprop_filter_winograd(dev->impl, &g, d_in, d_w, d_out)
           : fl_cl_conv2d_winograd(dev->impl, &g, d_in, d_w, kind == FORWARD ? NULL : &epilogue, d_out);
    float *got = download(dev, d_out, out_count);
    double *want = kind == BACKPROP_INPUT ? reference_backprop_input(&g, in, w)
                 : kind == BACKPROP_FILTER ? reference_backprop_filter(&g, in, w)
                 : reference_conv(&g, in, w, kind == FORWARD ? NULL : bias, kind != FORWARD);
    double err = rc == 0 ? relative_error(got, want, out_count) : INFINITY;
    ok(err <= TOLERANCE, "%s, %s: within %.0e of the direct sum (relative to its largest value)",
       kinds[kind], k->name, TOLERANCE);
    diag("worst relative error %.2g%s%s", err, rc == 0 ? "" : ": ", rc == 0 ? "" : fl_last_error());
    void *buffers[4] = {d_in, d_w, d_bias, d_out};
    for (int i = 0; i < 4; i++)
        if (buffers[i])
            dev->backend->release(dev->impl, buffers[i]);
    free(in), free(w), free(bias), free(got), free(want);
}

static void check_applies(fl_device *dev)
{
    conv_case conv_2 = {"", 128, 14, 14, 32, 64, FL_SAME}, conv_1 = {"", 128, 28, 28, 1, 32, FL_SAME};
    conv_case narrow = {"", 128, 14, 14, 4, 64, FL_SAME};
    fl_conv_geometry g2 = geometry_of(&conv_2, 5, 1), g1 = geometry_of(&conv_1, 5, 1);
    fl_conv_geometry strided = geometry_of(&conv_2, 5, 2), three = geometry_of(&conv_2, 3, 1);
    fl_conv_geometry few = geometry_of(&narrow, 5, 1);
    ok(fl_cl_winograd_applies(dev->impl, &g2), "Winograd applies to chapter 1's conv_2 (5x5, 32 -> 64)");
    ok(!fl_cl_winograd_applies(dev->impl, &g1), "... not to conv_1 (one input channel)");
    ok(!fl_cl_winograd_applies(dev->impl, &few), "... not to 4 input channels (too few to pay)");
    ok(!fl_cl_winograd_applies(dev->impl, &strided), "... not to stride 2");
    ok(!fl_cl_winograd_applies(dev->impl, &three), "... not to a 3x3 filter");
    setenv("FLOWLAB_WINOGRAD", "0", 1);
    ok(!fl_cl_winograd_applies(dev->impl, &g2), "... nor to conv_2 with FLOWLAB_WINOGRAD=0");
    unsetenv("FLOWLAB_WINOGRAD");
}

/* Conv2D's output on /gpu:0 as a graph runs it, Winograd on or off; or,
 * with filter_gradient, the gradient of mean(y * x) with respect to w (so
 * w must keep x's channel count): its dy, x / size, is the same either way
 * and only the Conv2DBackpropFilter node's own arithmetic can differ. */
static fl_tensor *graph_conv(const fl_tensor *x, const fl_tensor *w, const char *winograd, bool filter_gradient)
{
    setenv("FLOWLAB_WINOGRAD", winograd, 1);
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/gpu:0");
    fl_node *x_node = fl_constant(g, x, "x"), *w_node = fl_constant(g, w, "w");
    fl_node *y = fl_conv2d(g, x_node, w_node, 1, 1, FL_SAME, NULL);
    if (filter_gradient &&
        fl_gradients(g, fl_reduce_mean(g, fl_mul(g, y, x_node, NULL), NULL, 0, false, NULL), &w_node, 1, &y) != 0)
        diag("the filter's gradient: %s", fl_graph_error(g));
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    if (fl_session_run(s, NULL, 0, &y, 1, &out, NULL, 0) != 0)
        diag("%s on /gpu:0: %s", filter_gradient ? "Conv2DBackpropFilter" : "Conv2D", fl_session_error(s));
    fl_session_free(s);
    fl_graph_free(g);
    unsetenv("FLOWLAB_WINOGRAD");
    return out;
}

/* The Conv2D node (or, with filter_gradient, Conv2DBackpropFilter) takes
 * the Winograd kernels: its result differs, in the last bits, from the
 * implicit GEMM's that FLOWLAB_WINOGRAD=0 gives. */
static void check_dispatch(bool filter_gradient)
{
    fl_tensor *x = fl_tensor_new(FL_FLOAT32, fl_shape_make(4, 2, 14, 14, 32));
    fl_tensor *w = fl_tensor_new(FL_FLOAT32, fl_shape_make(4, 5, 5, 32, filter_gradient ? 32 : 64));
    float *xv = random_floats((size_t)fl_shape_size(x->shape), 5), *wv = random_floats((size_t)fl_shape_size(w->shape), 7);
    memcpy(fl_tensor_floats(x), xv, (size_t)fl_shape_size(x->shape) * sizeof(float));
    memcpy(fl_tensor_floats(w), wv, (size_t)fl_shape_size(w->shape) * sizeof(float));
    fl_tensor *on = graph_conv(x, w, "1", filter_gradient), *off = graph_conv(x, w, "0", filter_gradient);
    bool differ = on && off && memcmp(fl_tensor_floats(on), fl_tensor_floats(off), fl_tensor_bytes(on)) != 0;
    ok(differ, "a %s node runs Winograd unless FLOWLAB_WINOGRAD=0 (the two results' last bits differ)",
       filter_gradient ? "Conv2DBackpropFilter" : "Conv2D");
    fl_tensor_free(x), fl_tensor_free(w), fl_tensor_free(on), fl_tensor_free(off);
    free(xv), free(wv);
}

/* The loss after `steps` steps of gradient descent on a two-layer 5x5
 * convolution net on /gpu:0 (8 -> 8 -> 16 channels, so both its Conv2Ds and
 * the second one's input gradient take Winograd unless turned off). */
static double train_loss(const char *winograd, int steps)
{
    setenv("FLOWLAB_WINOGRAD", winograd, 1);
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/gpu:0");
    fl_tensor *x_value = fl_tensor_new(FL_FLOAT32, fl_shape_make(4, 4, 14, 14, 8));
    float *xv = random_floats((size_t)fl_shape_size(x_value->shape), 3);
    memcpy(fl_tensor_floats(x_value), xv, fl_tensor_bytes(x_value));
    fl_node *x = fl_constant(g, x_value, "x");
    fl_node *w1 = fl_get_variable(g, "w1", fl_shape_make(4, 5, 5, 8, 8), fl_random_uniform_initializer(-0.1f, 0.1f, 1));
    fl_node *w2 = fl_get_variable(g, "w2", fl_shape_make(4, 5, 5, 8, 16), fl_random_uniform_initializer(-0.1f, 0.1f, 2));
    fl_node *h = fl_relu(g, fl_conv2d(g, x, w1, 1, 1, FL_SAME, NULL), NULL);
    fl_node *y = fl_slice(g, fl_conv2d(g, h, w2, 1, 1, FL_SAME, NULL), 3, 0, 8, NULL);
    fl_node *error = fl_sub(g, y, x, NULL); /* learn to give back x in 8 of the 16 channels */
    fl_node *loss = fl_reduce_mean(g, fl_mul(g, error, error, NULL), NULL, 0, false, "loss");
    fl_optimizer *opt = fl_gradient_descent_optimizer(0.5f);
    fl_node *train = fl_minimize(opt, g, loss, fl_get_or_create_global_step(g), NULL);
    fl_node *init = fl_global_variables_initializer(g);
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    int rc = fl_graph_error(g) ? -1 : fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    for (int i = 0; i < steps && rc == 0; i++)
        rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &train, 1);
    fl_tensor *value = NULL;
    if (rc == 0)
        rc = fl_session_run(s, NULL, 0, &loss, 1, &value, NULL, 0);
    if (rc != 0)
        diag("training with FLOWLAB_WINOGRAD=%s: %s", winograd, fl_graph_error(g) ? fl_graph_error(g) : fl_session_error(s));
    double result = rc == 0 ? fl_tensor_scalar(value) : NAN;
    fl_tensor_free(value), fl_tensor_free(x_value), free(xv);
    fl_session_free(s), fl_optimizer_free(opt), fl_graph_free(g);
    unsetenv("FLOWLAB_WINOGRAD");
    return result;
}

/* Training sees no difference: the same loss after a few steps. */
static void check_training(void)
{
    double first = train_loss("1", 0), on = train_loss("1", 8), off = train_loss("0", 8);
    ok(on < 0.9 * first, "8 steps with Winograd bring the loss down (%.5f -> %.5f)", first, on);
    ok(fabs(on - off) <= 1e-4 * fabs(off), "... to the loss they reach with FLOWLAB_WINOGRAD=0 (%.6f), within 1e-4 of it", off);
}

int main(void)
{
    setenv("FLOWLAB_BACKEND", "opencl", 1); /* before the first flowlab call */
    if (fl_accelerator_count() == 0)
        skip_all("no OpenCL device");
    /* A device that exists but does not open (a kernel that does not
     * compile, say) is a failure, not a reason to skip. */
    fl_device *dev = fl_accelerator(0);
    if (!ok(dev != NULL && dev->backend == &fl_opencl_backend, "/gpu:0 opens on OpenCL (%s)",
            dev ? dev->backend->name : fl_last_error()))
        return done_testing();
    if (fl_cl_use_clblast(dev->impl))
        skip_all("the OpenCL device is a GPU: Winograd is for CPU-type devices");
    check_applies(dev);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int kind = FORWARD; kind <= BACKPROP_FILTER; kind++)
            check_kind(dev, &cases[i], kind);
    check_kind(dev, &two_partials, BACKPROP_FILTER);
    check_dispatch(false);
    check_dispatch(true);
    check_training();
    return done_testing();
}
