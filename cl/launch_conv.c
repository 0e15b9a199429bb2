/* launch_conv.c: launchers for Conv2D and its backprops, MaxPool and its
 * gradient. On CPU-type devices the convolutions are implicit GEMMs
 * (launch_conv_gemm.c). CLBlast, used on GPU-type devices, multiplies only
 * matrices that exist, so there they are GEMMs (fl_cl_gemm_at in
 * launch_matmul.c) over patch matrices: im2col lays each output pixel's
 * window out as a row of a [P, K] matrix (P output pixels, K = KH*KW*Cin
 * taps), so
 *     Conv2D:           y[P, Cout]  = col[P, K]   x filter[K, Cout]
 *     backprop filter:  df[K, Cout] = col[P, K]^T x dy[P, Cout]
 *     backprop input:   dcol[P, K]  = dy[P, Cout] x filter[K, Cout]^T, then col2im
 * a chunk of images at a time (see CHUNK_BYTES), and MaxPool with its
 * gradient (conv.cl). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

/* The col matrix is big (conv_2 of the chapter 1 model: 25088 x 800 floats,
 * 80 MB), and written by im2col only to be read once by the GEMM. So the
 * convolutions work a few images at a time: each chunk's col rows, about
 * CHUNK_BYTES, are still in the L3 cache (32 MiB, shared, on the machine
 * this was tuned on) when the GEMM reads them, instead of making a round
 * trip through memory. Much smaller chunks make GEMMs too small to run at
 * full speed. */
#define CHUNK_BYTES (12u << 20)

/* How a convolution's batch is cut: `images` per chunk, at most; `pixels`
 * output pixels per image and `taps` columns of col (K = KH*KW*Cin). */
typedef struct {
    int images, pixels, taps;
} chunking;

static int plan_chunks(const fl_conv_geometry *g, chunking *ch)
{
    int64_t pixels = (int64_t)g->oh * g->ow, taps = (int64_t)g->kh * g->kw * g->c;
    int64_t row_bytes = pixels * taps * (int64_t)sizeof(float); /* one image's col rows */
    int64_t images = row_bytes ? (int64_t)CHUNK_BYTES / row_bytes : g->batch;
    images = images < 1 ? 1 : images > g->batch ? g->batch : images;
    if (images * pixels * taps > INT_MAX || pixels * g->batch > INT_MAX) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "a convolution's im2col matrix of %lld x %lld is too large",
                          (long long)(images * pixels), (long long)taps);
        return -1;
    }
    if (images > 0) { /* even chunks: 128 images in 3 chunks of 43, not 56 + 56 + 16 */
        int64_t chunks = (g->batch + images - 1) / images;
        images = (g->batch + chunks - 1) / chunks;
    }
    *ch = (chunking){.images = (int)images, .pixels = (int)pixels, .taps = (int)taps};
    return 0;
}

/* The scratch buffer for one chunk's col matrix. */
static cl_mem chunk_scratch(fl_cl_device *d, const chunking *ch)
{
    return fl_cl_scratch(d, (size_t)ch->images * ch->pixels * ch->taps * sizeof(float));
}

/* col = the im2col rows of images [b0, b0 + images). */
static int im2col(fl_cl_device *d, const fl_conv_geometry *g, const void *x, int b0, int images, cl_mem col)
{
    fl_cl_call c = fl_cl_begin(d, K_IM2COL);
    fl_cl_mem(&c, x);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_int(&c, b0);
    fl_cl_int(&c, images);
    fl_cl_mem(&c, col);
    return fl_cl_run(&c, (size_t)images * g->oh * g->ow * g->kh);
}

FL_CL_OP(fl_cl_conv2d)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[0]->shape, in[1]->shape);
    if (fl_cl_winograd_applies(d, &g))
        return fl_cl_conv2d_winograd(d, &g, in[0]->data, in[1]->data, NULL, out->data);
    if (!fl_cl_use_clblast(d))
        return fl_cl_conv2d_implicit(d, &g, in[0]->data, in[1]->data, NULL, out->data);
    chunking ch;
    if (plan_chunks(&g, &ch) != 0)
        return -1;
    if (ch.pixels == 0 || g.oc == 0 || g.batch == 0)
        return 0;
    cl_mem col = chunk_scratch(d, &ch);
    if (!col)
        return -1;
    for (int b0 = 0; b0 < g.batch; b0 += ch.images) {
        int images = g.batch - b0 < ch.images ? g.batch - b0 : ch.images, rows = images * ch.pixels;
        /* y[rows of this chunk] = col x filter */
        if (im2col(d, &g, in[0]->data, b0, images, col) != 0 ||
            fl_cl_gemm_at(d, false, false, rows, g.oc, ch.taps, col, 0, in[1]->data, 0, out->data,
                    (size_t)b0 * ch.pixels * g.oc, false) != 0)
            return -1;
    }
    return 0;
}

/* dx for images [b0, b0 + images) from their dcol rows. */
static int col2im(fl_cl_device *d, const fl_conv_geometry *g, cl_mem dcol, int b0, int images, void *dx)
{
    fl_cl_call c = fl_cl_begin(d, K_COL2IM);
    fl_cl_mem(&c, dcol);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_int(&c, b0);
    fl_cl_int(&c, images);
    fl_cl_mem(&c, dx);
    return fl_cl_run(&c, (size_t)images * g->h * g->w * ((g->c + 3) / 4));
}

/* Conv2DBackpropInput(dy, filter, input) */
FL_CL_OP(fl_cl_conv2d_backprop_input)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[2]->shape, in[1]->shape);
    if (fl_cl_count(out) < 0)
        return -1;
    if (fl_cl_winograd_applies(d, &g))
        return fl_cl_conv2d_backprop_input_winograd(d, &g, in[0]->data, in[1]->data, out->data);
    if (!fl_cl_use_clblast(d))
        return fl_cl_conv2d_backprop_input_implicit(d, &g, in[0]->data, in[1]->data, out->data);
    chunking ch;
    if (plan_chunks(&g, &ch) != 0)
        return -1;
    if (ch.pixels == 0 || g.batch == 0)
        return fl_cl_fill_bytes(d, out->data, 0, fl_tensor_bytes(out));
    cl_mem dcol = chunk_scratch(d, &ch);
    if (!dcol)
        return -1;
    for (int b0 = 0; b0 < g.batch; b0 += ch.images) {
        int images = g.batch - b0 < ch.images ? g.batch - b0 : ch.images, rows = images * ch.pixels;
        /* dcol = dy[rows of this chunk] x filter^T, folded back into dx */
        if (fl_cl_gemm_at(d, false, true, rows, ch.taps, g.oc, in[0]->data, (size_t)b0 * ch.pixels * g.oc,
                    in[1]->data, 0, dcol, 0, false) != 0 ||
            col2im(d, &g, dcol, b0, images, out->data) != 0)
            return -1;
    }
    return 0;
}

/* Conv2DBackpropFilter(dy, input, filter): df = sum over chunks of
 * col^T x dy, the GEMM accumulating into df from the second chunk on. */
FL_CL_OP(fl_cl_conv2d_backprop_filter)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[1]->shape, in[2]->shape);
    if (fl_cl_winograd_applies(d, &g))
        return fl_cl_conv2d_backprop_filter_winograd(d, &g, in[1]->data, in[0]->data, out->data);
    if (!fl_cl_use_clblast(d))
        return fl_cl_conv2d_backprop_filter_implicit(d, &g, in[1]->data, in[0]->data, out->data);
    chunking ch;
    if (plan_chunks(&g, &ch) != 0)
        return -1;
    if (ch.pixels == 0 || g.batch == 0)
        return fl_cl_fill_bytes(d, out->data, 0, fl_tensor_bytes(out));
    cl_mem col = chunk_scratch(d, &ch);
    if (!col)
        return -1;
    for (int b0 = 0; b0 < g.batch; b0 += ch.images) {
        int images = g.batch - b0 < ch.images ? g.batch - b0 : ch.images, rows = images * ch.pixels;
        if (im2col(d, &g, in[1]->data, b0, images, col) != 0 ||
            fl_cl_gemm_at(d, true, false, ch.taps, g.oc, rows, col, 0, in[0]->data,
                    (size_t)b0 * ch.pixels * g.oc, out->data, 0, b0 > 0) != 0)
            return -1;
    }
    return 0;
}

/* Pooling's work-items: one per pixel and group of four channels. */
static size_t pool_items(int count, int channels)
{
    return channels ? (size_t)(count / channels) * (size_t)((channels + 3) / 4) : 0;
}

FL_CL_OP(fl_cl_max_pool)
{
    (void)ctx;
    fl_conv_geometry g = fl_pool_geometry_of(n, in[0]->shape);
    int count = fl_cl_count(out);
    if (count < 0 || fl_cl_count(in[0]) < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_MAX_POOL);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_value(&c, sizeof g, &g);
    fl_cl_mem(&c, out->data);
    return fl_cl_run(&c, (size_t)g.batch * (size_t)g.oh); /* one work-item per output row (conv.cl) */
}

/* MaxPoolGrad's dx (conv.cl), with ReluGrad folded in when relu_mask.
 * Windows that do not overlap are handled one output row per work-item,
 * which leaves pixels in no window unwritten: zero dx first unless the
 * windows tile it. Overlapping ones gather, one work-item per pixel and
 * four channels. */
int fl_cl_max_pool_grad_masked(fl_cl_device *d, const fl_conv_geometry *g, const void *x, const void *dy,
                               bool relu_mask, void *dx)
{
    int tiled = g->sh >= g->kh && g->sw >= g->kw;
    bool covered = g->sh == g->kh && g->sw == g->kw && g->oh * g->sh - g->pad_top >= g->h &&
                   g->ow * g->sw - g->pad_left >= g->w;
    size_t dx_bytes = (size_t)g->batch * g->h * g->w * g->c * sizeof(float);
    if (tiled && !covered && fl_cl_fill_bytes(d, dx, 0, dx_bytes) != 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_MAX_POOL_GRAD);
    fl_cl_mem(&c, dy);
    fl_cl_mem(&c, x);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_int(&c, tiled);
    fl_cl_int(&c, relu_mask);
    fl_cl_mem(&c, dx);
    if (tiled)
        return fl_cl_run(&c, (size_t)g->batch * g->oh);
    return fl_cl_run(&c, pool_items(g->batch * g->h * g->w * g->c, g->c));
}

/* MaxPoolGrad(dy, x, y): y only gave the shape. */
FL_CL_OP(fl_cl_max_pool_grad)
{
    (void)ctx;
    fl_conv_geometry g = fl_pool_geometry_of(n, in[1]->shape);
    if (fl_cl_count(out) < 0 || fl_cl_count(in[1]) < 0)
        return -1;
    return fl_cl_max_pool_grad_masked(d, &g, in[1]->data, in[0]->data, false, out->data);
}
