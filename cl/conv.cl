/* conv.cl: convolution as implicit GEMM, and max pooling, over NHWC floats.
 * im2col lays each output pixel's window out as one row, so Conv2D and both
 * backprops become matrix multiplies (cl/gemm.h); col2im folds rows back.
 * MaxPool's first-maximum rule matches the host's exactly.
 *
 * Written for PoCL's CPU device, where a work-group is a loop over its
 * work-items run by one worker thread. PoCL can vectorize that loop only
 * when the kernel body has no loop of its own, so these kernels, which must
 * loop over a window, get their SIMD from OpenCL vector types instead: each
 * work-item moves whole runs of channels with vload4/vstore4 (which need
 * only float alignment), never one float at a time. And each work-item does
 * enough work (a few hundred bytes) that the per-work-item cost, an index
 * decomposition with divisions, is small beside it. */

/* Everything a window loop needs: src/conv_geometry.h's fl_conv_geometry,
 * field for field (its dimension legend says what each one is). */
typedef struct {
    int batch, h, w, c;    /* N, H, W, C */
    int kh, kw;            /* KH, KW */
    int oh, ow, oc;        /* OH, OW, OC */
    int sh, sw;            /* SH, SW */
    int pad_top, pad_left; /* padding before */
} geom;

/* n floats from src to dst, four at a time. */
void copy_floats(__global const float *restrict src, __global float *restrict dst, int n)
{
    int i = 0;
    for (; i + 4 <= n; i += 4)
        vstore4(vload4(0, src + i), 0, dst + i);
    for (; i < n; i++)
        dst[i] = src[i];
}

void zero_floats(__global float *dst, int n)
{
    int i = 0;
    for (; i + 4 <= n; i += 4)
        vstore4((float4)(0.0f), 0, dst + i);
    for (; i < n; i++)
        dst[i] = 0.0f;
}

/* col[p, k] with p = (b, oy, ox) an output pixel and k = (ky, kx, ci) a tap:
 * the filter's row order, so y[P, Cout] = col[P, K] x filter[K, Cout].
 * Rows p cover the images [b0, b0 + images): the launcher fills col a few
 * images at a time so that it stays in cache for the GEMM that reads it.
 *
 * One work-item fills one window row (p, ky): its KW*C floats are KW
 * neighbouring pixels with all their channels, contiguous in x (NHWC) and
 * in col alike, so the work is one copy with zeros on either side where
 * the window hangs over the image's edge. */
__kernel void im2col(__global const float *restrict x, geom g, int b0, int images,
                     __global float *restrict col)
{
    int i = get_global_id(0);
    if (i >= images * g.oh * g.ow * g.kh)
        return;
    int ky = i % g.kh, p = i / g.kh;
    int ox = p % g.ow, oy = (p / g.ow) % g.oh, b = b0 + p / (g.ow * g.oh);
    int iy = oy * g.sh - g.pad_top + ky, ix0 = ox * g.sw - g.pad_left;
    int row = g.kw * g.c;
    __global float *dst = col + (size_t)i * row; /* i = p * kh + ky: rows in order */
    if (iy < 0 || iy >= g.h) {
        zero_floats(dst, row);
        return;
    }
    int kx_lo = max(0, -ix0), kx_hi = min(g.kw, g.w - ix0); /* taps inside the image */
    if (kx_hi <= kx_lo) {
        zero_floats(dst, row);
        return;
    }
    zero_floats(dst, kx_lo * g.c);
    size_t at = (((size_t)b * g.h + iy) * g.w + ix0 + kx_lo) * g.c;
    copy_floats(x + at, dst + kx_lo * g.c, (kx_hi - kx_lo) * g.c);
    zero_floats(dst + kx_hi * g.c, (g.kw - kx_hi) * g.c);
}

/* First and last output index along one axis whose window covers input i. */
int first_window(int i, int pad, int k, int stride)
{
    int lo = i + pad - k + 1;
    return lo <= 0 ? 0 : (lo + stride - 1) / stride;
}

int last_window(int i, int pad, int stride, int out)
{
    int hi = (i + pad) / stride;
    return hi < out - 1 ? hi : out - 1;
}

/* Up to four floats from p, zeros past n: the channel tail when C is not a
 * multiple of 4. */
float4 load_upto4(__global const float *p, int n)
{
    if (n >= 4)
        return vload4(0, p);
    return (float4)(p[0], n > 1 ? p[1] : 0.0f, n > 2 ? p[2] : 0.0f, 0.0f);
}

void store_upto4(float4 v, __global float *p, int n)
{
    if (n >= 4) {
        vstore4(v, 0, p);
        return;
    }
    p[0] = v.s0;
    if (n > 1)
        p[1] = v.s1;
    if (n > 2)
        p[2] = v.s2;
}

/* Channel groups of four: the unit of work of the gathers below. */
int channel_groups(int c) { return (c + 3) / 4; }

/* dx[b, iy, ix, ci..ci+3] sums the col entries of every window tap that
 * read it: a gather, so each output is written once and no atomics are
 * needed. col holds the rows of images [b0, b0 + images) only. */
__kernel void col2im(__global const float *restrict col, geom g, int b0, int images,
                     __global float *restrict dx)
{
    int groups = channel_groups(g.c), i = get_global_id(0);
    if (i >= images * g.h * g.w * groups)
        return;
    int c0 = i % groups * 4, pix = i / groups;
    int ix = pix % g.w, iy = pix / g.w % g.h, b = pix / (g.w * g.h); /* b: in the chunk */
    int taps = g.kh * g.kw * g.c, n = g.c - c0;
    float4 sum = 0.0f;
    for (int oy = first_window(iy, g.pad_top, g.kh, g.sh);
         oy <= last_window(iy, g.pad_top, g.sh, g.oh); oy++)
        for (int ox = first_window(ix, g.pad_left, g.kw, g.sw);
             ox <= last_window(ix, g.pad_left, g.sw, g.ow); ox++) {
            int ky = iy + g.pad_top - oy * g.sh, kx = ix + g.pad_left - ox * g.sw;
            size_t p = ((size_t)b * g.oh + oy) * g.ow + ox;
            sum += load_upto4(col + p * taps + (ky * g.kw + kx) * g.c + c0, n);
        }
    store_upto4(sum, dx + ((size_t)(b0 + b) * g.h * g.w + (size_t)iy * g.w + ix) * g.c + c0, n);
}

/* Window (b, oy, ox)'s maximum for four channels at once, and in *tap the
 * index ky * kw + kx where each lane found it: row-major scan, strict '>',
 * so the first maximum wins, as on the host. tap -1: all padding. */
float4 window_max4(__global const float *x, geom g, int b, int oy, int ox, int c0, int4 *tap)
{
    float4 best = 0.0f;
    int4 best_tap = -1;
    int n = g.c - c0;
    for (int ky = 0; ky < g.kh; ky++) {
        int iy = oy * g.sh - g.pad_top + ky;
        if (iy < 0 || iy >= g.h)
            continue;
        for (int kx = 0; kx < g.kw; kx++) {
            int ix = ox * g.sw - g.pad_left + kx;
            if (ix < 0 || ix >= g.w)
                continue;
            float4 v = load_upto4(x + (((size_t)b * g.h + iy) * g.w + ix) * g.c + c0, n);
            int4 take = (best_tap < 0) | (v > best); /* lanes: -1 (true) or 0 */
            best = select(best, v, take);
            best_tap = select(best_tap, (int4)(ky * g.kw + kx), take);
        }
    }
    *tap = best_tap;
    return best;
}

/* The same for eight channels (C a multiple of 8): one 256-bit register per
 * load, half the loop trips of window_max4. Same scan, same first-maximum
 * rule. */
float8 window_max8(__global const float *x, geom g, int b, int oy, int ox, int c0, int8 *tap)
{
    float8 best = 0.0f;
    int8 best_tap = -1;
    for (int ky = 0; ky < g.kh; ky++) {
        int iy = oy * g.sh - g.pad_top + ky;
        if (iy < 0 || iy >= g.h)
            continue;
        __global const float *row = x + ((size_t)b * g.h + iy) * g.w * g.c + c0;
        for (int kx = 0; kx < g.kw; kx++) {
            int ix = ox * g.sw - g.pad_left + kx;
            if (ix < 0 || ix >= g.w)
                continue;
            float8 v = vload8(0, row + (size_t)ix * g.c);
            int8 take = (best_tap < 0) | (v > best);
            best = select(best, v, take);
            best_tap = select(best_tap, (int8)(ky * g.kw + kx), take);
        }
    }
    *tap = best_tap;
    return best;
}

/* Whether window (oy, ox) is a 2x2, stride 2 window wholly inside the image. */
bool inside_2x2(geom g, int oy, int ox)
{
    int iy = oy * 2 - g.pad_top, ix = ox * 2 - g.pad_left;
    return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && iy >= 0 && iy + 2 <= g.h && ix >= 0 &&
           ix + 2 <= g.w;
}

/* The maximum of that window for channels c0..c0+7, taken in row-major
 * order with strict '>' (the first maximum wins, as on the host); its tap
 * (0-3) into *tap. */
float8 max_2x2_8(__global const float *x, geom g, int b, int oy, int ox, int c0, int8 *tap)
{
    size_t top = (((size_t)b * g.h + oy * 2 - g.pad_top) * g.w + ox * 2 - g.pad_left) * g.c + c0;
    size_t bottom = top + (size_t)g.w * g.c;
    float8 best = vload8(0, x + top), v;
    int8 at = 0, take;
    v = vload8(0, x + top + g.c);
    take = v > best;
    best = select(best, v, take);
    at = select(at, (int8)1, take);
    v = vload8(0, x + bottom);
    take = v > best;
    best = select(best, v, take);
    at = select(at, (int8)2, take);
    v = vload8(0, x + bottom + g.c);
    take = v > best;
    best = select(best, v, take);
    *tap = select(at, (int8)3, take);
    return best;
}

/* Pooling by rows: one work-item per output row (b, oy), every pixel and
 * channel group of it. With one work-item per window and four channels
 * (64 bytes read for a 2x2 window), PoCL's per-work-item cost, not the
 * reads, set the time: chapter 1's first MaxPool took 88-92 ms a step,
 * longer than the convolution before it; by rows, 9-18 ms; with eight
 * channels per load where C allows and the 2x2 window in straight-line
 * code, 0.47 ms (chapter 5). */
__kernel void max_pool(__global const float *restrict x, geom g, __global float *restrict y)
{
    int row = get_global_id(0);
    if (row >= g.batch * g.oh)
        return;
    int b = row / g.oh, oy = row % g.oh;
    __global float *out = y + (size_t)row * g.ow * g.c;
    if (g.c % 8 == 0) {
        for (int ox = 0; ox < g.ow; ox++)
            for (int c0 = 0; c0 < g.c; c0 += 8) {
                int8 tap;
                float8 best = inside_2x2(g, oy, ox) ? max_2x2_8(x, g, b, oy, ox, c0, &tap)
                                                    : window_max8(x, g, b, oy, ox, c0, &tap);
                vstore8(select(best, (float8)(-INFINITY), tap < 0), 0, out + (size_t)ox * g.c + c0);
            }
        return;
    }
    for (int ox = 0; ox < g.ow; ox++)
        for (int c0 = 0; c0 < g.c; c0 += 4) {
            int4 tap;
            float4 best = window_max4(x, g, b, oy, ox, c0, &tap);
            best = select(best, (float4)(-INFINITY), tap < 0);
            store_upto4(best, out + (size_t)ox * g.c + c0, g.c - c0);
        }
}

/* MaxPoolGrad in two ways. When windows overlap (stride < window), a
 * gather: each input pixel sums dy over the windows whose maximum it is, in
 * the host's (oy, ox) order, so no atomics are needed; but each window's
 * maximum is then found once per pixel it covers. When they do not overlap
 * (tiled, as in the usual 2x2 stride 2 pooling), each input pixel is in one
 * window at most, so a work-item finds each maximum once and writes its
 * whole window of dx: dy at the maximum, 0 elsewhere (the launcher zeroes
 * dx first if some pixels are in no window); one work-item per output row,
 * as in max_pool.
 * relu_mask: the ReluGrad that follows, when x is a Relu's output, done
 * here: dx is 0 where x <= 0 (or NaN), so a step skips one pass over dx.
 * In a window only the maximum gets dy, so that is a test of the maximum. */
void max_pool_grad_gather(__global const float *dy, __global const float *x, geom g,
                          int relu_mask, __global float *dx, int i)
{
    int groups = channel_groups(g.c);
    if (i >= g.batch * g.h * g.w * groups)
        return;
    int c0 = i % groups * 4, pix = i / groups, n = g.c - c0;
    int ix = pix % g.w, iy = pix / g.w % g.h, b = pix / (g.w * g.h);
    float4 sum = 0.0f;
    for (int oy = first_window(iy, g.pad_top, g.kh, g.sh);
         oy <= last_window(iy, g.pad_top, g.sh, g.oh); oy++)
        for (int ox = first_window(ix, g.pad_left, g.kw, g.sw);
             ox <= last_window(ix, g.pad_left, g.sw, g.ow); ox++) {
            int4 tap;
            window_max4(x, g, b, oy, ox, c0, &tap);
            int mine = (iy + g.pad_top - oy * g.sh) * g.kw + (ix + g.pad_left - ox * g.sw);
            float4 d = load_upto4(dy + (((size_t)b * g.oh + oy) * g.ow + ox) * g.c + c0, n);
            sum += select((float4)(0.0f), d, tap == mine);
        }
    if (relu_mask)
        sum = select((float4)(0.0f), sum, load_upto4(x + (size_t)pix * g.c + c0, n) > 0.0f);
    store_upto4(sum, dx + (size_t)pix * g.c + c0, n);
}

/* Window (b, oy, ox) of dx, channels c0..c0+7 (C a multiple of 8). */
void scatter_window8(__global const float *dy, __global const float *x, geom g, int relu_mask,
                     __global float *dx, int b, int oy, int ox, int c0)
{
    int8 tap;
    float8 best = window_max8(x, g, b, oy, ox, c0, &tap);
    float8 d = vload8(0, dy + (((size_t)b * g.oh + oy) * g.ow + ox) * g.c + c0);
    if (relu_mask)
        d = select((float8)(0.0f), d, best > 0.0f);
    for (int ky = 0; ky < g.kh; ky++) {
        int iy = oy * g.sh - g.pad_top + ky;
        if (iy < 0 || iy >= g.h)
            continue;
        __global float *row = dx + ((size_t)b * g.h + iy) * g.w * g.c + c0;
        for (int kx = 0; kx < g.kw; kx++) {
            int ix = ox * g.sw - g.pad_left + kx;
            if (ix >= 0 && ix < g.w)
                vstore8(select((float8)(0.0f), d, tap == ky * g.kw + kx), 0, row + (size_t)ix * g.c);
        }
    }
}

/* The same for channels c0..c0+3 (fewer at C's tail). */
void scatter_window4(__global const float *dy, __global const float *x, geom g, int relu_mask,
                     __global float *dx, int b, int oy, int ox, int c0)
{
    int4 tap;
    int n = g.c - c0;
    float4 best = window_max4(x, g, b, oy, ox, c0, &tap);
    float4 d = load_upto4(dy + (((size_t)b * g.oh + oy) * g.ow + ox) * g.c + c0, n);
    if (relu_mask)
        d = select((float4)(0.0f), d, best > 0.0f);
    for (int ky = 0; ky < g.kh; ky++) {
        int iy = oy * g.sh - g.pad_top + ky;
        if (iy < 0 || iy >= g.h)
            continue;
        for (int kx = 0; kx < g.kw; kx++) {
            int ix = ox * g.sw - g.pad_left + kx;
            if (ix >= 0 && ix < g.w)
                store_upto4(select((float4)(0.0f), d, tap == ky * g.kw + kx),
                            dx + (((size_t)b * g.h + iy) * g.w + ix) * g.c + c0, n);
        }
    }
}

/* MaxPoolGrad of the usual window (inside_2x2), channels c0..c0+7:
 * straight-line code. */
void scatter_2x2_8(__global const float *dy, __global const float *x, geom g, int relu_mask,
                   __global float *dx, int b, int oy, int ox, int c0)
{
    size_t top = (((size_t)b * g.h + oy * 2 - g.pad_top) * g.w + ox * 2 - g.pad_left) * g.c + c0;
    size_t bottom = top + (size_t)g.w * g.c;
    int8 tap;
    float8 best = max_2x2_8(x, g, b, oy, ox, c0, &tap);
    float8 d = vload8(0, dy + (((size_t)b * g.oh + oy) * g.ow + ox) * g.c + c0);
    if (relu_mask)
        d = select((float8)(0.0f), d, best > 0.0f);
    vstore8(select((float8)(0.0f), d, tap == 0), 0, dx + top);
    vstore8(select((float8)(0.0f), d, tap == 1), 0, dx + top + g.c);
    vstore8(select((float8)(0.0f), d, tap == 2), 0, dx + bottom);
    vstore8(select((float8)(0.0f), d, tap == 3), 0, dx + bottom + g.c);
}

void max_pool_grad_tiled(__global const float *dy, __global const float *x, geom g, int relu_mask,
                         __global float *dx, int row)
{
    if (row >= g.batch * g.oh)
        return;
    int b = row / g.oh, oy = row % g.oh;
    for (int ox = 0; ox < g.ow; ox++) {
        if (g.c % 8 == 0 && inside_2x2(g, oy, ox)) {
            for (int c0 = 0; c0 < g.c; c0 += 8)
                scatter_2x2_8(dy, x, g, relu_mask, dx, b, oy, ox, c0);
        } else if (g.c % 8 == 0) {
            for (int c0 = 0; c0 < g.c; c0 += 8)
                scatter_window8(dy, x, g, relu_mask, dx, b, oy, ox, c0);
        } else {
            for (int c0 = 0; c0 < g.c; c0 += 4)
                scatter_window4(dy, x, g, relu_mask, dx, b, oy, ox, c0);
        }
    }
}

__kernel void max_pool_grad(__global const float *restrict dy, __global const float *restrict x,
                            geom g, int tiled, int relu_mask, __global float *restrict dx)
{
    if (tiled)
        max_pool_grad_tiled(dy, x, g, relu_mask, dx, get_global_id(0));
    else
        max_pool_grad_gather(dy, x, g, relu_mask, dx, get_global_id(0));
}
