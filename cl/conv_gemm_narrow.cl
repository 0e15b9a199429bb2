/* conv_gemm_narrow.cl: Conv2D and its data gradient for inputs of only a
 * few channels (a first layer), where conv_gemm's tiles would spend their
 * time on setup or padding. Uses conv_gemm.cl's tile helpers (joined before
 * this file); host side: cl/launch_conv_gemm.c. */

/* ------------------------------------------------------------------------
 * conv_forward_narrow: Conv2D when the input has only a few channels (a
 * first layer: 1 for grey images, 3 for colour). There K = KH*KW*Cin is
 * small (conv_1 of chapter 1: 25), so conv_gemm's tile would finish its k
 * loop after 25 steps, and working out six window positions, the edges
 * and the work-item itself would cost as much as the FMAs.
 * Here a work-item computes a whole output row, every channel. It first
 * copies the kh input rows under it into private memory with zeros for the
 * padding (`win`, at most WIN_FLOATS: conv_1's five rows of 28 + 4 pixels
 * are 170 floats), then runs the 6-row micro-kernel over strips of six
 * output pixels with no test in the loop: each filter row read from the
 * packed panel serves six pixels, each window value TILE_COLS channels. The
 * epilogue (bias, relu) is applied as each tile is stored.
 * Global size: batch * oh.
 */
#define WIN_FLOATS 512

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void conv_forward_narrow(__global const float *restrict x, __global const float *restrict bp, int b_row,
                         int b_panel, geom g,
                         __global const float *restrict bias, int has_bias, int relu,
                         __global float *restrict y)
{
    int i = get_global_id(0);
    if (i >= g.batch * g.oh)
        return;
    int image = i / g.oh, oy = i % g.oh, run = g.kw * g.c;
    int strips = (g.ow + TILE_ROWS - 1) / TILE_ROWS, step = g.sw * g.c; /* floats between pixels */
    int row = (strips * TILE_ROWS - 1) * step + run; /* floats of one padded window row */

    /* win[ky * row + q]: input row oy*sh - pad + ky, from column -pad on. */
    float win[WIN_FLOATS];
    for (int ky = 0; ky < g.kh; ky++) {
        int iy = oy * g.sh - g.pad_top + ky;
        __global const float *src = x + ((size_t)image * g.h + iy) * g.w * g.c;
        float *to = win + ky * row;
        for (int px = 0; px < row / g.c; px++, to += g.c) {
            int ix = px - g.pad_left;
            bool in = (uint)iy < (uint)g.h && (uint)ix < (uint)g.w;
            for (int c = 0; c < g.c; c++)
                to[c] = in ? src[ix * g.c + c] : 0.0f;
        }
    }

    int first = i * g.ow, end = first + g.ow; /* this row's pixels in y, as GEMM rows */
    for (int j0 = 0; j0 < g.oc; j0 += TILE_COLS) {
        for (int x0 = 0; x0 < g.ow; x0 += TILE_ROWS) {
            floatv acc[2 * TILE_ROWS];
            zero_tile(acc);
            __global const float *panel = bp + (size_t)(j0 / TILE_COLS) * b_panel;
            for (int ky = 0; ky < g.kh; ky++) {
                const float *a = win + ky * row + x0 * step;
                for (int q = 0; q < run; q++, panel += b_row) {
                    floatv b0 = vloadv(0, panel), b1 = vloadv(1, panel);
                    #pragma unroll
                    for (int r = 0; r < TILE_ROWS; r++)
                        fma_row(acc + 2 * r, a[q + r * step], b0, b1);
                }
            }
            store_tile_epilogue(y, end, g.oc, first + x0, j0, bias, has_bias, relu, acc);
        }
    }
}

/* ------------------------------------------------------------------------
 * conv_backprop_input_narrow: the data gradient when the input has only a
 * few channels (a first layer: 1 for grey images, 3 for colour), where a
 * tile 16 channels wide would compute mostly padding. Each dx value is a
 * dot product over taps and output channels, done eight output channels
 * per vector. One work-item computes STRIP neighbouring pixels of one row,
 * for one channel ci: under a tap, all of them multiply their dy pixel by
 * the same filter vector, so each filter load serves STRIP FMAs, and the
 * work of finding dy pixels is shared too. `zeros` holds Cout zeros: the
 * dy pixel of a tap that reaches no output pixel.
 * Global size: batch * h * ceil(w / STRIP) * c.
 */
#define STRIP 8

float sum8(float8 v)
{
    float4 halves = v.lo + v.hi;
    return (halves.x + halves.y) + (halves.z + halves.w);
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void conv_backprop_input_narrow(__global const float *restrict dy, __global const float *restrict w,
                                __global const float *restrict zeros, geom g,
                                __global float *restrict dx)
{
    int strips = (g.w + STRIP - 1) / STRIP, i = get_global_id(0);
    if (i >= g.batch * g.h * strips * g.c)
        return;
    int ci = i % g.c, p = i / g.c;
    int x0 = p % strips * STRIP, y = (p / strips) % g.h, image = p / (strips * g.h);
    /* The loops over j have a fixed count: unrolled, acc and d are registers. */
    float8 acc[STRIP];
    float tail[STRIP]; /* output channels past the last multiple of 8 */
    #pragma unroll
    for (int j = 0; j < STRIP; j++) {
        acc[j] = 0.0f;
        tail[j] = 0.0f;
    }
    for (int ky = 0; ky < g.kh; ky++) {
        int sy = dy_coord(y, ky, g.sh, g.pad_top, g.oh);
        if (sy < 0)
            continue; /* no output row saw this input row through ky */
        __global const float *row = dy + ((size_t)image * g.oh + sy) * g.ow * g.oc;
        for (int kx = 0; kx < g.kw; kx++) {
            /* d[j]: the dy pixel that pixel x0 + j reads through tap kx, or
             * zeros. With stride 1 those are neighbours, for j in [lo, hi);
             * other strides skip pixels, so each is checked. */
            __global const float *d[STRIP];
            if (g.sw == 1) {
                int s0 = x0 + g.pad_left - kx;
                int lo = max(0, -s0), hi = min(min(STRIP, g.w - x0), g.ow - s0);
                #pragma unroll
                for (int j = 0; j < STRIP; j++)
                    d[j] = j >= lo && j < hi ? row + (ptrdiff_t)(s0 + j) * g.oc : zeros;
            } else {
                #pragma unroll
                for (int j = 0; j < STRIP; j++) {
                    int sx = x0 + j < g.w ? dy_coord(x0 + j, kx, g.sw, g.pad_left, g.ow) : -1;
                    d[j] = sx < 0 ? zeros : row + (size_t)sx * g.oc;
                }
            }
            __global const float *f = w + ((size_t)(ky * g.kw + kx) * g.c + ci) * g.oc;
            int q = 0;
            for (; q + 8 <= g.oc; q += 8) {
                float8 fq = vload8(0, f + q);
                #pragma unroll
                for (int j = 0; j < STRIP; j++)
                    acc[j] = fma(vload8(0, d[j] + q), fq, acc[j]);
            }
            for (; q < g.oc; q++) {
                #pragma unroll
                for (int j = 0; j < STRIP; j++)
                    tail[j] = fma(d[j][q], f[q], tail[j]);
            }
        }
    }
    __global float *out = dx + (((size_t)image * g.h + y) * g.w + x0) * g.c + ci;
    for (int j = 0; j < STRIP && x0 + j < g.w; j++)
        out[(size_t)j * g.c] = sum8(acc[j]) + tail[j];
}

#undef STRIP
#undef WIN_FLOATS
