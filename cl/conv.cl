/* conv.cl: convolution as implicit GEMM, and max pooling, over NHWC floats.
 * im2col lays each output pixel's window out as one row, so Conv2D and both
 * backprops become matrix multiplies (cl/gemm.h); col2im folds rows back.
 * MaxPool's first-maximum rule matches the host's exactly. */

/* Everything a window loop needs; the same struct as cl/launch_conv.c's. */
typedef struct {
    int batch, h, w, c; /* the image */
    int kh, kw;         /* the window */
    int oh, ow, oc;     /* the output; oc is Cout for a convolution, c for pooling */
    int sh, sw;
    int pad_top, pad_left;
} geom;

/* col[p, k] with p = (b, oy, ox) an output pixel and k = (ky, kx, ci) a tap:
 * the filter's row order, so y[P, Cout] = col[P, K] x filter[K, Cout]. */
__kernel void im2col(__global const float *x, geom g, __global float *col)
{
    int k = get_global_id(0), p = get_global_id(1);
    int taps = g.kh * g.kw * g.c;
    if (k >= taps || p >= g.batch * g.oh * g.ow)
        return;
    int ci = k % g.c, kx = (k / g.c) % g.kw, ky = k / (g.c * g.kw);
    int ox = p % g.ow, oy = (p / g.ow) % g.oh, b = p / (g.ow * g.oh);
    int iy = oy * g.sh - g.pad_top + ky, ix = ox * g.sw - g.pad_left + kx;
    bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
    size_t at = (((size_t)b * g.h + iy) * g.w + ix) * g.c + ci;
    col[(size_t)p * taps + k] = inside ? x[at] : 0.0f;
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

/* dx[b, iy, ix, ci] sums the col rows of every window tap that read it. */
__kernel void col2im(__global const float *col, geom g, __global float *dx)
{
    int i = get_global_id(0);
    if (i >= g.batch * g.h * g.w * g.c)
        return;
    int ci = i % g.c, ix = (i / g.c) % g.w, iy = (i / (g.c * g.w)) % g.h;
    int b = i / (g.c * g.w * g.h);
    int taps = g.kh * g.kw * g.c;
    float sum = 0.0f;
    for (int oy = first_window(iy, g.pad_top, g.kh, g.sh);
         oy <= last_window(iy, g.pad_top, g.sh, g.oh); oy++)
        for (int ox = first_window(ix, g.pad_left, g.kw, g.sw);
             ox <= last_window(ix, g.pad_left, g.sw, g.ow); ox++) {
            int ky = iy + g.pad_top - oy * g.sh, kx = ix + g.pad_left - ox * g.sw;
            size_t p = ((size_t)b * g.oh + oy) * g.ow + ox;
            sum += col[p * taps + (ky * g.kw + kx) * g.c + ci];
        }
    dx[i] = sum;
}

/* The offset in x of window (b, oy, ox)'s maximum in channel c, scanning
 * taps in row-major order with a strict '>': -1 if the window is all padding. */
long window_argmax(__global const float *x, geom g, int b, int oy, int ox, int c)
{
    long best_at = -1;
    float best = 0.0f;
    for (int ky = 0; ky < g.kh; ky++)
        for (int kx = 0; kx < g.kw; kx++) {
            int iy = oy * g.sh - g.pad_top + ky, ix = ox * g.sw - g.pad_left + kx;
            if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
                continue;
            long at = (((long)b * g.h + iy) * g.w + ix) * g.c + c;
            if (best_at < 0 || x[at] > best) {
                best = x[at];
                best_at = at;
            }
        }
    return best_at;
}

__kernel void max_pool(__global const float *x, geom g, __global float *y)
{
    int i = get_global_id(0);
    if (i >= g.batch * g.oh * g.ow * g.c)
        return;
    int c = i % g.c, ox = (i / g.c) % g.ow, oy = (i / (g.c * g.ow)) % g.oh;
    int b = i / (g.c * g.ow * g.oh);
    long at = window_argmax(x, g, b, oy, ox, c);
    y[i] = at >= 0 ? x[at] : -INFINITY;
}

/* A gather: each input element sums dy over the windows whose maximum it
 * is, in the host's (oy, ox) order, so no atomics are needed. */
__kernel void max_pool_grad(__global const float *dy, __global const float *x, geom g,
                            __global float *dx)
{
    int i = get_global_id(0);
    if (i >= g.batch * g.h * g.w * g.c)
        return;
    int c = i % g.c, ix = (i / g.c) % g.w, iy = (i / (g.c * g.w)) % g.h;
    int b = i / (g.c * g.w * g.h);
    float sum = 0.0f;
    for (int oy = first_window(iy, g.pad_top, g.kh, g.sh);
         oy <= last_window(iy, g.pad_top, g.sh, g.oh); oy++)
        for (int ox = first_window(ix, g.pad_left, g.kw, g.sw);
             ox <= last_window(ix, g.pad_left, g.sw, g.ow); ox++)
            if (window_argmax(x, g, b, oy, ox, c) == i)
                sum += dy[(((size_t)b * g.oh + oy) * g.ow + ox) * g.c + c];
    dx[i] = sum;
}
