/* conv_gemm_filter_grad.cl: Conv2DBackpropFilter as an implicit GEMM over
 * the batch, in partial sums that conv_sum_splits adds up. Uses
 * conv_gemm.cl's tile helpers (joined before this file); host side:
 * cl/launch_conv_gemm.c. */

/* The output coordinates o in [.x, .y) whose tap k lands inside an image
 * axis of `size`: 0 <= o * stride - pad + k < size. */
int2 tap_range(int k, int pad, int stride, int size, int out)
{
    int first = pad - k, last = size - 1 + pad - k; /* bounds on o * stride */
    int lo = first > 0 ? (first + stride - 1) / stride : 0;
    int hi = last < 0 ? 0 : min(out, last / stride + 1);
    return (int2)(lo, max(lo, hi));
}

/* ------------------------------------------------------------------------
 * conv_filter_grad: the filter gradient, in `splits` partial sums.
 *
 * For one row ky of the window, the filter's rows (kx, ci) are kw * Cin
 * values that lie side by side in the input: the window row under output
 * pixel (oy, ox) starts at input pixel (oy*sh - pad + ky, ox*sw - pad) and
 * runs kw pixels of Cin channels. So a tile of six consecutive rows (kx, ci)
 * of one ky reads six neighbouring floats per output pixel, and its k loop
 * runs along output rows with nothing to work out but two pointers:
 *
 *     dfilter[ky][kk0 + r][j0 + c] += x_row[ox * sw * Cin + kk0 + r] * dy[ox][j0 + c]
 *
 * What the window reads off the image's edge must count as zeros. Rather
 * than test every read, each work-item first copies its image into a
 * zero-bordered one (`padded`, hp x wp pixels: every window fits), then
 * runs check-free loops; it skips only output rows and columns where the
 * tile's taps all fall on the border.
 *
 * Every tile reads the whole batch, so the order of the loops decides what
 * comes from cache: work-item s takes a share of the images and, one image
 * at a time, adds that image's part of every tile to its partial sum
 * partials[s] ([kh][rpad][npad]: each ky's rows padded to whole tiles). The
 * image (conv_2 of chapter 1: 41 KB padded), its dy (50 KB) and the partial
 * sum (200 KB) stay in the core's cache while all tiles pass over them.
 * conv_sum_splits then adds the partial sums up, in split order.
 * Global size: (splits).
 */

/* The image's pixels inside a zero border: padded pixel (py, px) is input
 * pixel (py - pad_top, px - pad_left), or zeros off the image. */
void pad_image(__global const float *restrict image, geom g, int hp, int wp,
               __global float *restrict padded)
{
    for (int py = 0; py < hp; py++) {
        int iy = py - g.pad_top;
        __global float *to = padded + (size_t)py * wp * g.c;
        for (int px = 0; px < wp; px++, to += g.c) {
            int ix = px - g.pad_left;
            bool in = (uint)iy < (uint)g.h && (uint)ix < (uint)g.w;
            __global const float *from = image + ((size_t)iy * g.w + ix) * g.c;
            for (int c = 0; c < g.c; c++)
                to[c] = in ? from[c] : 0.0f;
        }
    }
}

/* Where one tile of the filter gradient reads one image: the window rows
 * (p) and dy (d) at the first output pixel, floats to the next output row
 * in each, floats between neighbouring output pixels in each, and how
 * many output rows and columns. */
typedef struct {
    __global const float *p, *d;
    int p_row, d_row, p_step, d_step, rows, columns;
} window_tile;

/* The tile's sums over those pixels into acc (row r: acc[2r], acc[2r+1]),
 * `cols` of its TILE_COLS columns real. A whole tile's loop has no test in it:
 * compilers do not reliably hoist load_cols's out of the loop themselves. */
void filter_grad_tile(const window_tile *t, int cols, floatv *acc)
{
    floatv sum[2 * TILE_ROWS];
    zero_tile(sum);
    for (int y = 0; y < t->rows; y++) {
        __global const float *p = t->p + (size_t)y * t->p_row, *d = t->d + (size_t)y * t->d_row;
        if (cols == TILE_COLS) {
            for (int x = 0; x < t->columns; x++, p += t->p_step, d += t->d_step) {
                floatv b0 = vloadv(0, d), b1 = vloadv(1, d);
                #pragma unroll
                for (int r = 0; r < TILE_ROWS; r++)
                    fma_row(sum + 2 * r, p[r], b0, b1);
            }
            continue;
        }
        for (int x = 0; x < t->columns; x++, p += t->p_step, d += t->d_step) {
            floatv b0, b1;
            load_cols(d, cols, &b0, &b1);
            #pragma unroll
            for (int r = 0; r < TILE_ROWS; r++)
                fma_row(sum + 2 * r, p[r], b0, b1);
        }
    }
    #pragma unroll
    for (int i = 0; i < 2 * TILE_ROWS; i++)
        acc[i] = sum[i];
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void conv_filter_grad(__global const float *restrict x, __global const float *restrict dy,
                      geom g, int splits, int hp, int wp, __global float *restrict partials)
{
    int s = get_global_id(0), N = g.oc, run = g.kw * g.c; /* a window row's floats */
    int rtiles = (run + TILE_ROWS - 1) / TILE_ROWS, ntiles = (N + TILE_COLS - 1) / TILE_COLS;
    int rpad = rtiles * TILE_ROWS, npad = ntiles * TILE_COLS;
    size_t partial_size = (size_t)g.kh * rpad * npad, padded_size = (size_t)hp * wp * g.c + TILE_ROWS;
    __global float *partial = partials + s * partial_size;
    __global float *padded = partials + splits * partial_size + s * padded_size;
    int first = g.batch * s / splits, last = g.batch * (s + 1) / splits;
    int step = g.sw * g.c; /* floats between neighbouring output pixels' windows */

    for (int image = first; image < last; image++) {
        pad_image(x + (size_t)image * g.h * g.w * g.c, g, hp, wp, padded);
        for (int ky = 0; ky < g.kh; ky++) {
            int2 rows = tap_range(ky, g.pad_top, g.sh, g.h, g.oh); /* oy that see the image */
            for (int it = 0; it < rtiles; it++) {
                /* Output columns where at least one of the tile's taps
                 * (kx from first to last) sees the image. */
                int kk0 = it * TILE_ROWS;
                int2 a = tap_range(kk0 / g.c, g.pad_left, g.sw, g.w, g.ow);
                int2 b = tap_range((min(kk0 + TILE_ROWS, run) - 1) / g.c, g.pad_left, g.sw, g.w, g.ow);
                int ox0 = min(a.x, b.x), ox1 = max(a.y, b.y);
                for (int jt = 0; jt < ntiles; jt++) {
                    int j0 = jt * TILE_COLS, cols = min(N - j0, TILE_COLS);
                    __global const float *p = padded + ((size_t)(rows.x * g.sh + ky) * wp + ox0 * g.sw) * g.c + kk0;
                    __global const float *d = dy + (((size_t)image * g.oh + rows.x) * g.ow + ox0) * N + j0;
                    window_tile tile = {p, d, g.sh * wp * g.c, g.ow * N, step, N, rows.y - rows.x, ox1 - ox0};
                    floatv acc[2 * TILE_ROWS];
                    filter_grad_tile(&tile, cols, acc);
                    store_tile(partial + ((size_t)ky * rpad + kk0) * npad + j0, TILE_ROWS, npad, 0, 0,
                               image > first, acc);
                }
            }
        }
    }
}

/* out[k, j] = the sum over splits of partials[s][ky][kk][j] for row
 * k = ky * run + kk, in split order (each partial [kh][rpad][npad]).
 * Global size: K * N. */
__kernel void conv_sum_splits(__global const float *restrict partials, int splits, int run, int rpad,
                              int npad, int K, int N, __global float *restrict out)
{
    int i = get_global_id(0);
    if (i >= K * N)
        return;
    int k = i / N, j = i % N;
    size_t at = ((size_t)(k / run) * rpad + k % run) * npad + j, partial_size = (size_t)(K / run) * rpad * npad;
    float sum = 0.0f;
    for (int s = 0; s < splits; s++)
        sum += partials[s * partial_size + at];
    out[i] = sum;
}

