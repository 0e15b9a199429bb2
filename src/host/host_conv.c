/* host_conv.c: reference convolution and max-pooling kernels for /cpu:0.
 * Direct loops over NHWC float32. The innermost loop always walks a
 * contiguous channel axis, which keeps a batch-128 CNN trainable here. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conv_geometry.h"
#include "host_kernels.h"

/* Offset of pixel (b, y, x) in an NHWC tensor of height h, width w, c channels. */
static int64_t pixel_at(int b, int y, int x, int h, int w, int c)
{
    return (((int64_t)b * h + y) * w + x) * c;
}

/* Where window tap (ky, kx) of output (oy, ox) lands in the image; false in padding. */
static bool tap(const fl_conv_geometry *g, int oy, int ox, int ky, int kx, int *iy, int *ix)
{
    *iy = oy * g->sh - g->pad_top + ky;
    *ix = ox * g->sw - g->pad_left + kx;
    return *iy >= 0 && *iy < g->h && *ix >= 0 && *ix < g->w;
}

/* Offset of filter row [ky, kx, ci, :]. */
static int64_t filter_at(const fl_conv_geometry *g, int ky, int kx, int ci)
{
    return (((int64_t)ky * g->kw + kx) * g->c + ci) * g->oc;
}

/* Gradient kernels accumulate, and the session hands out unzeroed memory. */
static void zero_output(fl_tensor *out)
{
    size_t bytes = fl_tensor_bytes(out);
    if (bytes > 0) /* an empty tensor may have no buffer at all */
        memset(out->data, 0, bytes);
}

/* ---- Conv2D: y[b,oy,ox,co] = sum over ky,kx,ci of x[b,iy,ix,ci] * f[ky,kx,ci,co] ---- */

static void conv_pixel(const fl_conv_geometry *g, const float *x, const float *f, int b, int oy,
                       int ox, float *y)
{
    for (int co = 0; co < g->oc; co++)
        y[co] = 0.0f;
    for (int ky = 0; ky < g->kh; ky++)
        for (int kx = 0; kx < g->kw; kx++) {
            int iy, ix;
            if (!tap(g, oy, ox, ky, kx, &iy, &ix))
                continue; /* zero padding adds nothing */
            const float *xp = x + pixel_at(b, iy, ix, g->h, g->w, g->c);
            for (int ci = 0; ci < g->c; ci++) {
                const float *fp = f + filter_at(g, ky, kx, ci);
                float xv = xp[ci];
                for (int co = 0; co < g->oc; co++)
                    y[co] += xv * fp[co];
            }
        }
}

FL_HOST_KERNEL(fl_host_conv2d)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[0]->shape, in[1]->shape);
    const float *x = in[0]->data, *f = in[1]->data;
    float *y = out->data;
    for (int b = 0; b < g.batch; b++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++)
                conv_pixel(&g, x, f, b, oy, ox, y + pixel_at(b, oy, ox, g.oh, g.ow, g.oc));
    return 0;
}

/* ---- Conv2DBackpropInput(dy, filter, input): each output pixel's dy flows
 * back through the filter to the input pixels its window read. ---- */

/* The filter with its channel axes swapped, [KH,KW,Cout,Cin], so the inner
 * loop below runs along Cin contiguously instead of summing along Cout. */
static float *swap_filter_channels(const fl_conv_geometry *g, const float *f)
{
    int64_t taps = (int64_t)g->kh * g->kw;
    float *t = fl_try_malloc((size_t)(taps * g->c * g->oc) * sizeof *t); /* the filter's size: allocated already */
    if (!t)
        return NULL;
    for (int64_t k = 0; k < taps; k++)
        for (int ci = 0; ci < g->c; ci++)
            for (int co = 0; co < g->oc; co++)
                t[(k * g->oc + co) * g->c + ci] = f[(k * g->c + ci) * g->oc + co];
    return t;
}

static void backprop_input_pixel(const fl_conv_geometry *g, const float *dyp, const float *ft, int b,
                                 int oy, int ox, float *dx)
{
    for (int ky = 0; ky < g->kh; ky++)
        for (int kx = 0; kx < g->kw; kx++) {
            int iy, ix;
            if (!tap(g, oy, ox, ky, kx, &iy, &ix))
                continue;
            float *dxp = dx + pixel_at(b, iy, ix, g->h, g->w, g->c);
            const float *fp = ft + ((int64_t)ky * g->kw + kx) * g->oc * g->c;
            for (int co = 0; co < g->oc; co++) {
                float d = dyp[co];
                for (int ci = 0; ci < g->c; ci++)
                    dxp[ci] += d * fp[co * g->c + ci];
            }
        }
}

FL_HOST_KERNEL(fl_host_conv2d_backprop_input)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[2]->shape, in[1]->shape);
    const float *dy = in[0]->data;
    float *ft = swap_filter_channels(&g, in[1]->data);
    if (!ft)
        return -1;
    float *dx = out->data;
    zero_output(out); /* windows overlap, so accumulate */
    for (int b = 0; b < g.batch; b++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++)
                backprop_input_pixel(&g, dy + pixel_at(b, oy, ox, g.oh, g.ow, g.oc), ft, b, oy, ox,
                                     dx);
    free(ft);
    return 0;
}

/* ---- Conv2DBackpropFilter(dy, input, filter): df[ky,kx,ci,co] sums
 * x[b,iy,ix,ci] * dy[b,oy,ox,co] over the batch and every output pixel.
 * float accumulation, as TensorFlow's CPU kernel; plenty for training. ---- */

static void backprop_filter_pixel(const fl_conv_geometry *g, const float *x, const float *dyp, int b,
                                  int oy, int ox, float *df)
{
    for (int ky = 0; ky < g->kh; ky++)
        for (int kx = 0; kx < g->kw; kx++) {
            int iy, ix;
            if (!tap(g, oy, ox, ky, kx, &iy, &ix))
                continue;
            const float *xp = x + pixel_at(b, iy, ix, g->h, g->w, g->c);
            for (int ci = 0; ci < g->c; ci++) {
                float *dfp = df + filter_at(g, ky, kx, ci);
                float xv = xp[ci];
                for (int co = 0; co < g->oc; co++)
                    dfp[co] += xv * dyp[co];
            }
        }
}

FL_HOST_KERNEL(fl_host_conv2d_backprop_filter)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[1]->shape, in[2]->shape);
    const float *dy = in[0]->data, *x = in[1]->data;
    float *df = out->data;
    zero_output(out);
    for (int b = 0; b < g.batch; b++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++)
                backprop_filter_pixel(&g, x, dy + pixel_at(b, oy, ox, g.oh, g.ow, g.oc), b, oy,
                                      ox, df);
    return 0;
}

/* ---- MaxPool and MaxPoolGrad ----
 * Both scan a window tap by tap in row-major order with a strict '>', so
 * the first maximum wins: the forward value and the pixel the gradient
 * goes to always agree. Padding is never a candidate. */

/* For one output pixel: best[c] and the offset in x where it was found. */
static void window_max(const fl_conv_geometry *g, const float *x, int b, int oy, int ox, float *best,
                       int64_t *best_at)
{
    for (int c = 0; c < g->c; c++)
        best_at[c] = -1;
    /* Only the window's taps inside the image: a SAME window may be far
     * larger than the image (a ksize of 65536 from the wire). */
    int64_t base_y = (int64_t)oy * g->sh - g->pad_top, base_x = (int64_t)ox * g->sw - g->pad_left;
    int ky0 = base_y < 0 ? (int)-base_y : 0, kx0 = base_x < 0 ? (int)-base_x : 0;
    int ky1 = g->h - base_y < g->kh ? (int)(g->h - base_y) : g->kh;
    int kx1 = g->w - base_x < g->kw ? (int)(g->w - base_x) : g->kw;
    for (int ky = ky0; ky < ky1; ky++)
        for (int kx = kx0; kx < kx1; kx++) {
            int iy, ix;
            if (!tap(g, oy, ox, ky, kx, &iy, &ix))
                continue;
            int64_t at = pixel_at(b, iy, ix, g->h, g->w, g->c);
            for (int c = 0; c < g->c; c++)
                if (best_at[c] < 0 || x[at + c] > best[c]) {
                    best[c] = x[at + c];
                    best_at[c] = at + c;
                }
        }
}

/* Scratch of one float and one offset per channel. */
typedef struct {
    float *best;
    int64_t *best_at;
} pool_scratch;

static void scratch_free(pool_scratch s)
{
    free(s.best);
    free(s.best_at);
}

/* 12 bytes a channel, on a run's thread: -1 with RESOURCE_EXHAUSTED when it fails. */
static int scratch_new(int channels, pool_scratch *s)
{
    size_t n = channels > 0 ? (size_t)channels : 1;
    *s = (pool_scratch){fl_try_malloc(n * sizeof(float)), fl_try_malloc(n * sizeof(int64_t))};
    if (s->best && s->best_at)
        return 0;
    scratch_free(*s);
    return -1;
}

FL_HOST_KERNEL(fl_host_max_pool)
{
    (void)ctx;
    fl_conv_geometry g = fl_pool_geometry_of(n, in[0]->shape);
    const float *x = in[0]->data;
    float *y = out->data;
    pool_scratch s;
    if (scratch_new(g.c, &s) != 0)
        return -1;
    for (int b = 0; b < g.batch; b++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++) {
                window_max(&g, x, b, oy, ox, s.best, s.best_at);
                float *yp = y + pixel_at(b, oy, ox, g.oh, g.ow, g.c);
                for (int c = 0; c < g.c; c++) /* SAME windows always hold a real pixel */
                    yp[c] = s.best_at[c] >= 0 ? s.best[c] : -INFINITY;
            }
    scratch_free(s);
    return 0;
}

/* MaxPoolGrad(dy, x, y): y is read only for its shape; the maxima are found
 * again in x so that ties go to the first, as in TensorFlow. */
FL_HOST_KERNEL(fl_host_max_pool_grad)
{
    (void)ctx;
    fl_conv_geometry g = fl_pool_geometry_of(n, in[1]->shape);
    const float *dy = in[0]->data, *x = in[1]->data;
    float *dx = out->data;
    zero_output(out);
    pool_scratch s;
    if (scratch_new(g.c, &s) != 0)
        return -1;
    for (int b = 0; b < g.batch; b++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++) {
                window_max(&g, x, b, oy, ox, s.best, s.best_at);
                const float *dyp = dy + pixel_at(b, oy, ox, g.oh, g.ow, g.c);
                for (int c = 0; c < g.c; c++)
                    if (s.best_at[c] >= 0)
                        dx[s.best_at[c]] += dyp[c];
            }
    scratch_free(s);
    return 0;
}
