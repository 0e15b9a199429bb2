/* conv_gemm.cl: Conv2D and both of its backprops as implicit GEMM over NHWC
 * floats, for CPU-type OpenCL devices (PoCL): the register tile and its
 * helpers, the filter's packing, and conv_gemm for Conv2D and its data
 * gradient. Host side: cl/launch_conv_gemm.c.
 * The same register tile as cl/matmul.cl, with A read from the image itself.
 *
 * The GEMM hiding in a convolution
 * --------------------------------
 * Conv2D multiplies a patch matrix by the filter, seen as a [K, Cout] matrix
 * with K = KH*KW*Cin taps in the filter's own order (ky, kx, ci):
 *
 *     y[P, Cout] = patches[P, K] x filter[K, Cout]      P = output pixels
 *
 * Row p of `patches` is output pixel p's window. im2col writes that matrix
 * out (for conv_2 of chapter 1: 25088 x 800 floats, 80 MB) only for the GEMM
 * to read it once. Here nothing is written: for tap (ky, kx) the Cin values
 * of row p are Cin contiguous floats of the input, at the pixel under that
 * tap, or zeros where the window hangs over the edge. So the GEMM's k loop
 * becomes a loop over taps, and inside it a loop over channels that reads
 * six input pixels (the tile's six rows) straight from the image.
 *
 * The data gradient is the same loop run backwards through the window:
 * input pixel (y, x) received, through tap (ky, kx), the output pixel at
 * ((y + pad - ky) / stride, ...) when that division is exact, so
 *
 *     dx[pixels, Cin] = dpatches[pixels, KH*KW*Cout] x filter_t[KH*KW*Cout, Cin]
 *
 * where filter_t holds each tap's [Cin, Cout] block transposed. conv_gemm
 * does both, told apart by `transposed`.
 *
 * The filter gradient sums over every output pixel of the batch:
 *
 *     dfilter[K, Cout] = patches[P, K]^T x dy[P, Cout]
 *
 * Its tile is six filter rows x TILE_COLS output channels and its k loop
 * runs over output pixels: conv_filter_grad, in conv_gemm_filter_grad.cl.
 * Inputs of a few channels take conv_gemm_narrow.cl's kernels instead.
 *
 * B is read in TILE_COLS-column panels, as cl/matmul.cl explains: row k of
 * panel p at bp + p * b_panel + k * b_row. conv_pack_filter packs them
 * (b_row = TILE_COLS) into the only scratch a forward or data gradient needs
 * (filter-sized), except where B is the filter itself, a forward filter
 * [K, Cout] with Cout a multiple of TILE_COLS (b_row = Cout, b_panel =
 * TILE_COLS): packing it would only copy it. Zeros stand in for pixels off
 * the edge.
 */

/* Tile sizes, per device
 * -----------------------
 * A tile is 6 rows by two vectors of CONV_WIDTH floats: 12 accumulators,
 * two vectors of B and a broadcast A value in registers. CONV_WIDTH comes
 * from the build options, chosen per device by fl_cl_conv_vector_width
 * (launch_conv_gemm.c): 8 (6 x 16 tiles, 15 of AVX2's 16 registers) unless
 * the device prefers vectors of 16 floats (AVX-512), where 6 x 32 tiles
 * keep the same 12 + 3 registers, now 512 bits wide, out of 32. Each FMA
 * then does twice the work, and each A value serves 32 columns.
 * Why not more rows with 32 registers: 12 x 16 tiles of float8 (27
 * registers) were slower than 6 x 16 on the AMD EPYC (Zen 4) this was
 * measured on, because they trade B loads, which were not the bottleneck,
 * for a longer strip of A that fits images of 28 or 14 pixels badly. */
#ifndef CONV_WIDTH
#define CONV_WIDTH 8
#endif
#if CONV_WIDTH == 16
typedef float16 floatv;
#define vloadv vload16
#define vstorev vstore16
#else
typedef float8 floatv;
#define vloadv vload8
#define vstorev vstore8
#endif
enum { TILE_ROWS = 6, TILE_COLS = 2 * CONV_WIDTH };

/* ------------------------------------------------------------------------
 * conv_pack_filter: Bp[p][k][c] = filter value for GEMM row k, column
 * TILE_COLS * p + c (0 past n columns), for k = (tap, q) with q < kin:
 *     w[tap * tap_stride + q * stride_q + column * stride_c]
 * Forward: kin = Cin, columns = Cout (stride_q = Cout, stride_c = 1), which
 * is the filter itself as [K, Cout]. Data gradient: kin = Cout, columns =
 * Cin (stride_q = 1, stride_c = Cout), each tap's block transposed.
 * Global size: (panels, taps * kin).
 */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void conv_pack_filter(__global const float *restrict w, int taps, int kin, int n, int tap_stride,
                      int stride_q, int stride_c, __global float *restrict bp)
{
    int p = get_global_id(0), k = get_global_id(1), K = taps * kin;
    if (k >= K)
        return;
    __global const float *src = w + (size_t)(k / kin) * tap_stride + (size_t)(k % kin) * stride_q;
    __global float *dst = bp + ((size_t)p * K + k) * TILE_COLS;
    for (int c = 0; c < TILE_COLS; c++) {
        int column = p * TILE_COLS + c;
        dst[c] = column < n ? src[(size_t)column * stride_c] : 0.0f;
    }
}

/* The data gradient's source along one axis: the output coordinate s that
 * saw input coordinate y through tap k (s * stride - pad + k = y), or -1
 * if there is none: off the edge, or between two strides. */
int dy_coord(int y, int k, int stride, int pad, int size)
{
    int s = y + pad - k;
    if (s < 0)
        return -1;
    if (stride != 1) {
        if (s % stride != 0)
            return -1;
        s /= stride;
    }
    return s < size ? s : -1;
}

/* A tile's accumulators are floatv acc[2 * TILE_ROWS]: row r's first
 * CONV_WIDTH columns in acc[2r], the others in acc[2r + 1]. Every loop over r has a fixed count, so
 * once unrolled the array lives in registers, as cl/matmul.cl's named
 * accumulators do. fma_row adds A value a times the row of B (b0, b1). */
void fma_row(floatv *row, float a, floatv b0, floatv b1)
{
    floatv a8 = (floatv)(a);
    row[0] = fma(a8, b0, row[0]);
    row[1] = fma(a8, b1, row[1]);
}

void zero_tile(floatv *acc)
{
    #pragma unroll
    for (int i = 0; i < 2 * TILE_ROWS; i++)
        acc[i] = 0.0f;
}

/* TILE_COLS columns of a row (of dy, of a bias) into b0, b1; zeros past
 * the `cols` that exist (the last column tile when N is no multiple). */
void load_cols(__global const float *d, int cols, floatv *b0, floatv *b1)
{
    if (cols >= TILE_COLS) {
        *b0 = vloadv(0, d);
        *b1 = vloadv(1, d);
        return;
    }
    float t[TILE_COLS];
    for (int c = 0; c < TILE_COLS; c++)
        t[c] = c < cols ? d[c] : 0.0f;
    *b0 = vloadv(0, t);
    *b1 = vloadv(1, t);
}

/* Stores the tile at row i0, column j0 of a row-major [M, N] result; with
 * `add`, adds to what is there. Full tiles are two vector stores a row. */
void store_tile(__global float *out, int M, int N, int i0, int j0, int add, const floatv *acc)
{
    int rows = min(TILE_ROWS, M - i0), cols = min(TILE_COLS, N - j0);
    for (int r = 0; r < rows; r++) {
        __global float *o = out + (size_t)(i0 + r) * N + j0;
        if (cols == TILE_COLS) {
            floatv lo = acc[2 * r], hi = acc[2 * r + 1];
            if (add) {
                lo += vloadv(0, o);
                hi += vloadv(1, o);
            }
            vstorev(lo, 0, o);
            vstorev(hi, 1, o);
            continue;
        }
        float t[TILE_COLS];
        vstorev(acc[2 * r], 0, t);
        vstorev(acc[2 * r + 1], 1, t);
        for (int c = 0; c < cols; c++)
            o[c] = add ? o[c] + t[c] : t[c];
    }
}

/* store_tile (no adding) after the epilogue: the bias of columns j0.. when
 * has_bias, then relu when set. */
void store_tile_epilogue(__global float *out, int M, int N, int i0, int j0, __global const float *bias,
                         int has_bias, int relu, floatv *acc)
{
    floatv b[2] = {0.0f, 0.0f};
    if (has_bias)
        load_cols(bias + j0, N - j0, &b[0], &b[1]);
    #pragma unroll
    for (int i = 0; i < 2 * TILE_ROWS; i++) {
        acc[i] += b[i % 2];
        acc[i] = relu ? fmax(acc[i], 0.0f) : acc[i];
    }
    store_tile(out, M, N, i0, j0, 0, acc);
}

/* ------------------------------------------------------------------------
 * conv_gemm: Conv2D (transposed = 0: rows are output pixels, the source is
 * the input, columns are Cout) or Conv2DBackpropInput (transposed = 1: rows
 * are input pixels, the source is dy, columns are Cin). `zeros` holds at
 * least kw times as many zeros as the source has channels.
 * Work-item (jt, it) computes rows 6*it.. and columns TILE_COLS*jt..; columns vary
 * fastest, so neighbouring work-items reuse the same six source pixels
 * while all of Bp (a few hundred KB) stays in cache.
 * Global size: (column tiles, row tiles).
 */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void conv_gemm(__global const float *restrict src, __global const float *restrict bp, int b_row, int b_panel,
               __global const float *restrict zeros, geom g, int transposed,
               __global const float *restrict bias, int has_bias, int relu,
               __global float *restrict out)
{
    int jt = get_global_id(0), it = get_global_id(1);
    int rows_h = transposed ? g.h : g.oh, rows_w = transposed ? g.w : g.ow;
    int src_h = transposed ? g.oh : g.h, src_w = transposed ? g.ow : g.w;
    int src_c = transposed ? g.oc : g.c, N = transposed ? g.c : g.oc;
    int M = g.batch * rows_h * rows_w, K = g.kh * g.kw * src_c;
    int i0 = it * TILE_ROWS;

    /* Each row's pixel (image, y, x), stepping from row 0's (divisions cost
     * more than the rest of this setup); rows past M repeat the last one
     * and are not stored. */
    int img[TILE_ROWS], py[TILE_ROWS], px[TILE_ROWS];
    int x = i0 % rows_w, y = (i0 / rows_w) % rows_h, image = i0 / (rows_w * rows_h);
    for (int r = 0; r < TILE_ROWS; r++) {
        img[r] = image;
        py[r] = y;
        px[r] = x;
        if (i0 + r + 1 < M && ++x == rows_w) {
            x = 0;
            if (++y == rows_h) {
                y = 0;
                image++;
            }
        }
    }

    /* Where each row's window starts in the source: its pixel under tap
     * (0, 0), which may lie off the image. Forward, tap (ky, kx) is ky rows
     * and kx columns further on (dir = 1); the data gradient's window runs
     * backwards through dy (dir = -1). With a stride, the data gradient's
     * taps land between dy's pixels as often as on one, so there
     * (`stepped` false) each tap's pixel comes from dy_coord instead. */
    int dir = transposed ? -1 : 1;
    bool stepped = !transposed || (g.sh == 1 && g.sw == 1);
    int sy0[TILE_ROWS], sx0[TILE_ROWS];
    long at0[TILE_ROWS]; /* floats from src to that pixel */
    for (int r = 0; r < TILE_ROWS; r++) {
        sy0[r] = transposed ? py[r] + g.pad_top : py[r] * g.sh - g.pad_top;
        sx0[r] = transposed ? px[r] + g.pad_left : px[r] * g.sw - g.pad_left;
        at0[r] = (((long)img[r] * src_h + sy0[r]) * src_w + sx0[r]) * src_c;
    }

    /* A window row (one ky, every kx) is kw pixels side by side: kw * src_c
     * contiguous floats. Forward, when every row's window lies inside the
     * image from left to right, the k loop runs over whole window rows
     * (long loops; with one input channel, as in conv_1, much longer than
     * one tap's). Otherwise, and for the data gradient (whose window runs
     * backwards through the source), it goes tap by tap. */
    bool whole_rows = !transposed;
    for (int r = 0; r < TILE_ROWS; r++)
        whole_rows = whole_rows && sx0[r] >= 0 && sx0[r] + g.kw <= src_w;
    int run = whole_rows ? g.kw * src_c : src_c; /* floats read per pointer */

    floatv acc[2 * TILE_ROWS];
    zero_tile(acc);
    __global const float *b = bp + (size_t)jt * b_panel;
    for (int ky = 0; ky < g.kh; ky++) {
        for (int kx = 0; kx < (whole_rows ? 1 : g.kw); kx++) {
            /* The six source pixels under tap (ky, kx), or zeros. When all
             * six are zeros (the tile lies along the padding, or, with a
             * stride, the tap reaches none of its pixels), skip the tap. */
            __global const float *a[TILE_ROWS];
            bool any = false;
            #pragma unroll
            for (int r = 0; r < TILE_ROWS; r++) {
                int sy = sy0[r] + dir * ky, sx = sx0[r] + dir * kx;
                bool in = (uint)sy < (uint)src_h && (uint)sx < (uint)src_w;
                __global const float *at = src + at0[r] + dir * ((long)ky * src_w + kx) * src_c;
                if (!stepped) {
                    sy = dy_coord(py[r], ky, g.sh, g.pad_top, src_h);
                    sx = dy_coord(px[r], kx, g.sw, g.pad_left, src_w);
                    in = sy >= 0 && sx >= 0;
                    at = src + (((size_t)img[r] * src_h + sy) * src_w + sx) * src_c;
                }
                a[r] = in ? at : zeros;
                any = any || in;
            }
            if (!any) {
                b += run * b_row;
                continue;
            }
            // [book:implicit_gemm]
            /* The micro-kernel of cl/matmul.cl, with A read in place. */
            for (int q = 0; q < run; q++, b += b_row) {
                floatv b0 = vloadv(0, b), b1 = vloadv(1, b);
                #pragma unroll
                for (int r = 0; r < TILE_ROWS; r++)
                    fma_row(acc + 2 * r, a[r][q], b0, b1);
            }
            // [end:implicit_gemm]
        }
    }
    store_tile_epilogue(out, M, N, i0, jt * TILE_COLS, bias, has_bias, relu, acc);
}
