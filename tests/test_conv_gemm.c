/* test_conv_gemm.c: the implicit-GEMM convolutions of cl/conv_gemm.cl,
 * called directly on an OpenCL CPU device (PoCL) and compared with a plain
 * C convolution: the paths a graph cannot reach yet (Conv2D's bias+relu
 * epilogue) and the shapes that pick each kernel (one input channel, odd
 * widths, strides, VALID, batch 1, Cout not a multiple of 16; up to four
 * input channels Conv2D takes conv_forward_narrow when the image is narrow
 * enough, conv_gemm otherwise), with the kernels built for each tile width
 * a device may get (FLOWLAB_CONV_WIDTH). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "../cl/launch.h"

/* A convolution's geometry from its sizes, as fl_conv_geometry_of would
 * compute it for a square window and stride. */
static fl_conv_geometry geometry(int batch, int h, int w, int c, int k, int oc, int stride,
                                 fl_padding padding)
{
    fl_conv_geometry g = {.batch = batch, .h = h, .w = w, .c = c, .kh = k, .kw = k, .oc = oc,
                          .sh = stride, .sw = stride};
    g.oh = fl_conv_output_size(h, k, stride, padding);
    g.ow = fl_conv_output_size(w, k, stride, padding);
    g.pad_top = fl_conv_pad_before(h, k, stride, padding);
    g.pad_left = fl_conv_pad_before(w, k, stride, padding);
    return g;
}

typedef struct {
    size_t x, filter, y; /* element counts */
} sizes;

static sizes sizes_of(const fl_conv_geometry *g)
{
    return (sizes){(size_t)g->batch * g->h * g->w * g->c, (size_t)g->kh * g->kw * g->c * g->oc,
                   (size_t)g->batch * g->oh * g->ow * g->oc};
}

static float *random_floats(size_t n, uint32_t seed)
{
    float *p = malloc((n + 1) * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    return p;
}

/* The plain convolution: y (with the bias, NULL for none, and relu), the
 * filter gradient df and the data gradient dx for the output gradient dy. */
static void reference(const fl_conv_geometry *g, const float *x, const float *f, const float *dy,
                      const float *bias, bool relu, float *y, float *df, float *dx)
{
    sizes n = sizes_of(g);
    memset(df, 0, n.filter * sizeof *df);
    memset(dx, 0, n.x * sizeof *dx);
    for (size_t p = 0; p < n.y / g->oc; p++) {
        int ox = p % g->ow, oy = p / g->ow % g->oh, b = p / ((size_t)g->ow * g->oh);
        for (int o = 0; o < g->oc; o++) {
            double sum = bias ? bias[o] : 0;
            for (int ky = 0; ky < g->kh; ky++)
                for (int kx = 0; kx < g->kw; kx++) {
                    int iy = oy * g->sh - g->pad_top + ky, ix = ox * g->sw - g->pad_left + kx;
                    if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
                        continue;
                    for (int c = 0; c < g->c; c++) {
                        size_t xi = (((size_t)b * g->h + iy) * g->w + ix) * g->c + c;
                        size_t fi = ((size_t)(ky * g->kw + kx) * g->c + c) * g->oc + o;
                        sum += x[xi] * f[fi];
                        df[fi] += x[xi] * dy[p * g->oc + o];
                        dx[xi] += f[fi] * dy[p * g->oc + o];
                    }
                }
            y[p * g->oc + o] = relu && sum < 0 ? 0.0f : (float)sum;
        }
    }
}

static cl_mem upload(fl_cl_device *d, const float *p, size_t n)
{
    return clCreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof *p, (void *)p,
                          NULL);
}

/* The largest difference between the device's buffer and want, relative to
 * want's largest magnitude (at least 1). */
static double difference(fl_cl_device *d, cl_mem got_buffer, const float *want, size_t n)
{
    float *got = malloc((n + 1) * sizeof *got);
    if (clEnqueueReadBuffer(d->queue, got_buffer, CL_TRUE, 0, n * sizeof *got, got, 0, NULL, NULL)) {
        free(got);
        return INFINITY;
    }
    double worst = 0, scale = 1;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(got[i] - want[i]));
        scale = fmax(scale, fabs(want[i]));
    }
    free(got);
    return worst / scale;
}

/* Runs Conv2D (with the epilogue: a bias or not, relu or not) and both
 * gradients on the device and checks all three against the reference. */
static void check(fl_cl_device *d, const char *what, fl_conv_geometry g, bool with_bias, bool relu)
{
    sizes n = sizes_of(&g);
    float *x = random_floats(n.x, 1), *f = random_floats(n.filter, 2), *dy = random_floats(n.y, 3);
    float *bias = random_floats(g.oc, 4), *y = random_floats(n.y, 5), *df = random_floats(n.filter, 6),
          *dx = random_floats(n.x, 7);
    reference(&g, x, f, dy, with_bias ? bias : NULL, relu, y, df, dx);
    cl_mem mx = upload(d, x, n.x), mf = upload(d, f, n.filter), mdy = upload(d, dy, n.y);
    cl_mem mbias = upload(d, bias, g.oc), my = upload(d, dy, n.y), mdf = upload(d, f, n.filter),
           mdx = upload(d, x, n.x);
    fl_cl_epilogue epilogue = {with_bias ? mbias : NULL, relu};
    int rc = fl_cl_conv2d_implicit(d, &g, mx, mf, with_bias || relu ? &epilogue : NULL, my);
    rc = rc || fl_cl_conv2d_backprop_filter_implicit(d, &g, mx, mdy, mdf);
    rc = rc || fl_cl_conv2d_backprop_input_implicit(d, &g, mdy, mf, mdx);
    rc = rc || fl_cl_device_wait(d);
    if (!ok(rc == 0, "%s: the kernels run", what))
        diag("%s", fl_last_error());
    double tolerance = 1e-5 * g.kh * g.kw * g.c;
    double ey = difference(d, my, y, n.y), edf = difference(d, mdf, df, n.filter);
    double edx = difference(d, mdx, dx, n.x);
    ok(ey <= tolerance, "%s%s%s: Conv2D matches (relative difference %.2g)", what,
       with_bias ? " + bias" : "", relu ? " + relu" : "", ey);
    if (!with_bias && !relu) {
        ok(edf <= tolerance * g.batch * g.oh * g.ow / 16, "%s: filter gradient matches (%.2g)", what, edf);
        ok(edx <= tolerance, "%s: data gradient matches (%.2g)", what, edx);
    }
    cl_mem buffers[] = {mx, mf, mdy, mbias, my, mdf, mdx};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++)
        clReleaseMemObject(buffers[i]);
    free(x), free(f), free(dy), free(bias), free(y), free(df), free(dx);
}

/* The first CPU-type OpenCL device, or NULL. */
static cl_device_id cpu_device(void)
{
    cl_platform_id platforms[8];
    cl_uint count = 0;
    if (clGetPlatformIDs(8, platforms, &count) != CL_SUCCESS)
        return NULL;
    for (cl_uint i = 0; i < count && i < 8; i++) {
        cl_device_id id;
        if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_CPU, 1, &id, NULL) == CL_SUCCESS)
            return id;
    }
    return NULL;
}

typedef struct {
    const char *what;
    int batch, h, w, c, k, oc, stride;
    fl_padding padding;
} conv_case;

static const conv_case cases[] = {
    {"chapter 1's conv_1, batch 2", 2, 28, 28, 1, 5, 32, 1, FL_SAME},
    {"Cin 1, odd width, Cout 17", 3, 9, 7, 1, 5, 17, 1, FL_SAME},
    {"Cin 1, 31x29 image (rows of several strips)", 2, 31, 29, 1, 5, 32, 1, FL_SAME},
    {"Cin 1, stride 2", 1, 9, 7, 1, 3, 5, 2, FL_SAME},
    {"Cin 1, VALID", 2, 11, 13, 1, 5, 20, 1, FL_VALID},
    {"Cin 1, VALID stride 2, batch 1", 1, 8, 9, 1, 3, 16, 2, FL_VALID},
    {"Cin 1, window larger than the image", 1, 3, 2, 1, 5, 3, 1, FL_SAME},
    {"Cin 1, batch 19 (uneven splits)", 19, 6, 5, 1, 5, 17, 1, FL_SAME},
    {"Cin 1, 120 wide (too wide for conv_forward_narrow)", 1, 6, 120, 1, 5, 20, 1, FL_SAME},
    {"Cin 2, Cout 33", 2, 10, 9, 2, 3, 33, 1, FL_SAME},
    {"Cin 4, VALID stride 2", 2, 9, 11, 4, 3, 19, 2, FL_VALID},
    {"Cin 3, Cout 17", 3, 6, 5, 3, 5, 17, 1, FL_SAME},
    {"Cin 7, stride 2", 2, 7, 9, 7, 3, 5, 2, FL_SAME},
    {"Cin 20, Cout 24, stride 2", 2, 9, 9, 20, 3, 24, 2, FL_SAME},
    {"chapter 1's conv_2, batch 2", 2, 14, 14, 32, 5, 64, 1, FL_SAME},
    {"Cin 40, Cout 70, VALID", 1, 8, 7, 40, 3, 70, 1, FL_VALID},
};

/* Every case on device id, its kernels built for vectors of `width` floats. */
static void check_all(cl_device_id id, const char *width)
{
    setenv("FLOWLAB_CONV_WIDTH", width, 1);
    fl_cl_device *d = fl_cl_device_open(id);
    if (!ok(d != NULL, "the kernels build with FLOWLAB_CONV_WIDTH=%s", width)) {
        diag("%s", fl_last_error());
        return;
    }
    ok(d->conv_width == atoi(width), "conv_gemm.cl is built for %s-float vectors (got %d)", width,
       d->conv_width);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const conv_case *c = &cases[i];
        fl_conv_geometry g = geometry(c->batch, c->h, c->w, c->c, c->k, c->oc, c->stride, c->padding);
        check(d, c->what, g, false, false);
        check(d, c->what, g, true, false);
        check(d, c->what, g, true, true);
        check(d, c->what, g, false, true);
    }
    fl_cl_device_close(d);
}

int main(void)
{
    cl_device_id id = cpu_device();
    if (!id)
        skip_all("no OpenCL CPU device (PoCL) on this machine");
    /* Both tile widths, whichever the device would pick: 6 x 16 tiles of
     * float8 (AVX2) and 6 x 32 of float16 (AVX-512). */
    check_all(id, "8");
    check_all(id, "16");
    return done_testing();
}
