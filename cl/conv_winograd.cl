/* conv_winograd.cl: 5x5 stride-1 convolutions (Conv2D and its data gradient)
 * by Winograd's minimal filtering F(4x4, 5x5), for CPU-type OpenCL devices.
 * Host side: cl/launch_conv_winograd.c. NHWC floats, as everywhere.
 *
 * Fewer multiplications
 * ---------------------
 * A 4x4 block of outputs of a 5x5 filter reads an 8x8 patch of input and
 * costs 16 * 25 = 400 multiplications per (input, output) channel pair.
 * Winograd (Lavin & Gray 2015) gets the same 4x4 block from 64:
 *
 *     Y[4x4] = A^T [ U (.) V ] A     U = G g G^T    (the filter, 8x8)
 *                                    V = B^T d B    (the patch, 8x8)
 *
 * where (.) multiplies point by point. The matrices come from evaluating
 * polynomials at the points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity
 * (Toom-Cook). The point products, summed over input channels, are 64
 * small GEMMs, one per point: M[p][tile, Cout] = V[p][tile, Cin] x
 * U[p][Cin, Cout]. That sum is where the time goes, and it is 400/64 = 6.25
 * times smaller than the direct one (4.8 times on a 14x14 image, whose 4x4
 * tiles cover 16x16). Transforming V and M costs a few adds per value, far
 * fewer than the GEMMs' Cout multiplications per value.
 *
 * Shaped for a CPU: a work-item takes WINO_TILES tiles, transforms their
 * patches into a private V (never written to memory), runs the 64 GEMMs
 * against U (the transformed filter, made once per call by
 * winograd_filter, a few hundred KB read by every work-item, so it stays in
 * cache), and transforms the products straight into the output, adding the
 * bias and clamping at zero on the way. The GEMMs' register tile is 6 tiles
 * x 16 output channels, as in conv_gemm.cl: 12 of AVX2's 16 registers, 6 of
 * AVX-512's 32 (8 tiles measured no faster there). V and the products are
 * private arrays, 96 and 24 KB, on the stack of the PoCL thread running the
 * work-item (PoCL starts its threads with the default stack, megabytes).
 * V holds 64 source channels: conv_2's data gradient, whose source (dy)
 * has 64, then transforms its output once, not twice (0.4 ms less than
 * with 32; measured).
 *
 * The data gradient of a stride-1 convolution is itself a convolution: of
 * dy with the filter turned by 180 degrees, input and output channels
 * swapped, and the padding mirrored (KH - 1 - pad_top before). `transposed`
 * selects it, as in conv_gemm.
 */

enum { WINO_TILES = 6, WINO_COLS = 16, WINO_CHANNELS = 64, WINO_ALPHA = 8, WINO_POINTS = 64 };

/* The source of the convolution run: x and its geometry, or dy for the
 * data gradient. */
typedef struct {
    int height, width, channels;  /* the source image */
    int out_h, out_w, out_c;      /* the result */
    int pad_top, pad_left;
} wino_shape;

wino_shape wino_shape_of(geom g, int transposed)
{
    wino_shape s;
    s.height = transposed ? g.oh : g.h;
    s.width = transposed ? g.ow : g.w;
    s.channels = transposed ? g.oc : g.c;
    s.out_h = transposed ? g.h : g.oh;
    s.out_w = transposed ? g.w : g.ow;
    s.out_c = transposed ? g.c : g.oc;
    s.pad_top = transposed ? g.kh - 1 - g.pad_top : g.pad_top;
    s.pad_left = transposed ? g.kw - 1 - g.pad_left : g.pad_left;
    return s;
}

/* ------------------------------------------------------------------------
 * winograd_filter: U[p][q][col] = (G g G^T)[p] for the 5x5 filter g that
 * takes source channel q to result column col, 0 for columns past out_c up
 * to the padded width `cols` (a multiple of 16). G has the Toom-Cook rows
 * for the points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity (powers of each
 * point, divided by the product of its distances to the others).
 * A work-item transforms 16 columns at once, in float16s, each lane doing
 * what one scalar work-item per column did, in the same order (so the same
 * bits): a call at conv_2's shape took about 0.6 ms of one Zen 4 core that
 * way, 0.2 now (perf's samples over a training run); both towers pay two
 * a step. Writing G's rows out, sharing the sums of +x and -x, saved 0.05
 * ms more but rounded differently, and every exact output of the book moved.
 * Global size: (cols / 16, source channels).
 */
__constant float wino_G[8][5] = {
    {-1, 0, 0, 0, 0},
    {-2.0f / 9, -2.0f / 9, -2.0f / 9, -2.0f / 9, -2.0f / 9},
    {-2.0f / 9, 2.0f / 9, -2.0f / 9, 2.0f / 9, -2.0f / 9},
    {1.0f / 90, 1.0f / 45, 2.0f / 45, 4.0f / 45, 8.0f / 45},
    {1.0f / 90, -1.0f / 45, 2.0f / 45, -4.0f / 45, 8.0f / 45},
    {32.0f / 45, 16.0f / 45, 8.0f / 45, 4.0f / 45, 2.0f / 45},
    {32.0f / 45, -16.0f / 45, 8.0f / 45, -4.0f / 45, 2.0f / 45},
    {0, 0, 0, 0, 1},
};

/* Tap (ky, kx) of the filter from source channel q to the 16 result columns
 * from col0 (the first `width` of them; zeros past). Forward: w[ky][kx][q][col],
 * whose columns lie side by side. Data gradient: the filter turned, [col][q],
 * its columns out_c floats apart. */
float16 wino_filter_tap(__global const float *w, geom g, int transposed, int ky, int kx, int q,
                        int col0, int width)
{
    int tap = transposed ? (4 - ky) * 5 + (4 - kx) : ky * 5 + kx;
    __global const float *at = w + (size_t)tap * g.c * g.oc + (transposed ? (size_t)col0 * g.oc + q
                                                                       : (size_t)q * g.oc + col0);
    if (!transposed && width >= 16)
        return vload16(0, at);
    size_t step = transposed ? (size_t)g.oc : 1;
    float v[16];
    for (int c = 0; c < 16; c++)
        v[c] = c < width ? at[c * step] : 0.0f;
    return vload16(0, v);
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void winograd_filter(__global const float *restrict w, geom g, int transposed, int cols,
                     __global float *restrict u)
{
    int col0 = get_global_id(0) * 16, q = get_global_id(1);
    wino_shape s = wino_shape_of(g, transposed);
    if (q >= s.channels || col0 >= cols)
        return;
    int width = s.out_c - col0;
    float16 t[WINO_ALPHA][5];
    for (int kx = 0; kx < 5; kx++) { /* t = G f, a column of f at a time */
        float16 f[5];
        for (int ky = 0; ky < 5; ky++)
            f[ky] = wino_filter_tap(w, g, transposed, ky, kx, q, col0, width);
        for (int a = 0; a < WINO_ALPHA; a++) {
            float16 sum = 0.0f;
            for (int ky = 0; ky < 5; ky++)
                sum += wino_G[a][ky] * f[ky];
            t[a][kx] = sum;
        }
    }
    for (int a = 0; a < WINO_ALPHA; a++) /* U = t G^T */
        for (int b = 0; b < WINO_ALPHA; b++) {
            float16 sum = 0.0f;
            for (int kx = 0; kx < 5; kx++)
                sum += wino_G[b][kx] * t[a][kx];
            vstore16(sum, 0, u + ((size_t)(a * WINO_ALPHA + b) * s.channels + q) * cols + col0);
        }
}

/* B^T d for one column of eight values d (eight channels each), into r:
 * the rows of B^T for the same points, with common terms shared. */
void wino_bt(const float8 *d, float8 *r)
{
    float8 a = d[2] + d[6] - 4.25f * d[4], b = d[1] + d[5] - 4.25f * d[3];
    float8 c = 0.25f * d[2] - 1.25f * d[4] + d[6], e = 0.5f * d[1] - 2.5f * d[3] + 2 * d[5];
    float8 f = 4 * d[2] - 5 * d[4] + d[6], h = 2 * d[1] - 2.5f * d[3] + 0.5f * d[5];
    r[0] = d[6] - d[0] + 5.25f * (d[2] - d[4]);
    r[1] = a + b;
    r[2] = a - b;
    r[3] = c + e;
    r[4] = c - e;
    r[5] = f + h;
    r[6] = f - h;
    r[7] = d[7] - d[1] + 5.25f * (d[3] - d[5]);
}

/* Eight channels from c of a source pixel that has `left` channels from
 * c on (zeros past them). */
float8 wino_channels(__global const float *pixel, int c, int left)
{
    if (left >= 8)
        return vload8(0, pixel + c);
    float v[8];
    for (int i = 0; i < 8; i++)
        v[i] = i < left ? pixel[c + i] : 0.0f;
    return vload8(0, v);
}

/* The tile's first output pixel: image, row and column. */
int3 wino_tile(wino_shape s, int tile)
{
    int across = (s.out_w + 3) / 4, down = (s.out_h + 3) / 4;
    int tx = tile % across, ty = (tile / across) % down, n = tile / (across * down);
    return (int3)(n, 4 * ty, 4 * tx);
}

/* V[p][slot][c] = (B^T d B)[p] for the 8x8 patch d of the tile, channels
 * c0.. c0 + WINO_CHANNELS of the source (zeros past its last). Pixels off
 * the image read `zeros` (as many zeros as the source has channels). */
void wino_input(__global const float *src, __global const float *zeros, wino_shape s, int3 tile,
                int slot, int c0, float v[WINO_POINTS][WINO_TILES][WINO_CHANNELS])
{
    int y0 = tile.y - s.pad_top, x0 = tile.z - s.pad_left;
    __global const float *pixel[WINO_ALPHA][WINO_ALPHA];
    for (int i = 0; i < WINO_ALPHA; i++)
        for (int j = 0; j < WINO_ALPHA; j++) {
            int y = y0 + i, x = x0 + j;
            bool inside = y >= 0 && y < s.height && x >= 0 && x < s.width;
            pixel[i][j] = inside ? src + (((size_t)tile.x * s.height + y) * s.width + x) * s.channels : zeros;
        }
    for (int c = c0; c < c0 + WINO_CHANNELS && c < s.channels; c += 8) {
        int left = s.channels - c;
        float8 t[WINO_ALPHA][WINO_ALPHA], d[WINO_ALPHA];
        #pragma unroll
        for (int j = 0; j < WINO_ALPHA; j++) { /* t = B^T d, a column at a time, stored as rows */
            #pragma unroll
            for (int i = 0; i < WINO_ALPHA; i++)
                d[i] = wino_channels(pixel[i][j], c, left);
            wino_bt(d, t[j]);
        }
        #pragma unroll
        for (int i = 0; i < WINO_ALPHA; i++) { /* V = t B, a row at a time */
            float8 r[WINO_ALPHA];
            #pragma unroll
            for (int j = 0; j < WINO_ALPHA; j++)
                d[j] = t[j][i];
            wino_bt(d, r);
            #pragma unroll
            for (int j = 0; j < WINO_ALPHA; j++)
                vstore8(r[j], 0, &v[i * WINO_ALPHA + j][slot][c - c0]);
        }
    }
}

/* The 64 GEMMs of one column panel: m[p][t] = sum over the chunk's source
 * channels q of v[p][t][q] * U[p][c0 + q][col0 .. col0 + 16]. */
void wino_products(float v[WINO_POINTS][WINO_TILES][WINO_CHANNELS], __global const float *u,
                   int channels, int c0, int cols, int col0, float16 m[WINO_POINTS][WINO_TILES])
{
    int count = min(WINO_CHANNELS, channels - c0);
    for (int p = 0; p < WINO_POINTS; p++) {
        __global const float *b = u + ((size_t)p * channels + c0) * cols + col0;
        float16 acc[WINO_TILES];
        #pragma unroll
        for (int t = 0; t < WINO_TILES; t++)
            acc[t] = 0;
        // [book:winograd_products]
        for (int q = 0; q < count; q++) { /* one point's GEMM: 6 tiles x 16 columns */
            float16 row = vload16(0, b + (size_t)q * cols);
            #pragma unroll
            for (int t = 0; t < WINO_TILES; t++)
                acc[t] = fma((float16)(v[p][t][q]), row, acc[t]);
        }
        // [end:winograd_products]
        #pragma unroll
        for (int t = 0; t < WINO_TILES; t++)
            m[p][t] = acc[t];
    }
}

/* A^T m for eight values m: the four outputs of the points' products. */
void wino_at(const float16 *m, float16 *y)
{
    float16 plus1 = m[1] + m[2], minus1 = m[1] - m[2], plus2 = m[3] + m[4];
    float16 minus2 = m[3] - m[4], plus_half = m[5] + m[6], minus_half = m[5] - m[6];
    y[0] = m[0] + plus1 + plus2 + plus_half;
    y[1] = minus1 + 2 * minus2 + 0.5f * minus_half;
    y[2] = plus1 + 4 * plus2 + 0.25f * plus_half;
    y[3] = minus1 + 8 * minus2 + 0.125f * minus_half + m[7];
}

/* Stores one output pixel's 16 columns from col0 (fewer at the right
 * edge): added to what is there when `add` (a later chunk of source
 * channels), then the epilogue when `last`. Inlined: as a call, 16 a tile,
 * it cost 5-10% of the kernel (measured). */
__attribute__((always_inline))
void wino_store(__global float *out, wino_shape s, int n, int y, int x, int col0, float16 value,
                int add, int last, __global const float *bias, int relu)
{
    if (y >= s.out_h || x >= s.out_w)
        return;
    __global float *o = out + (((size_t)n * s.out_h + y) * s.out_w + x) * s.out_c + col0;
    int cols = min(WINO_COLS, s.out_c - col0);
    if (cols == WINO_COLS) {
        float16 v = add ? vload16(0, o) + value : value;
        if (last)
            v += vload16(0, bias + col0);
        vstore16(relu && last ? fmax(v, 0.0f) : v, 0, o);
        return;
    }
    float r[WINO_COLS];
    vstore16(value, 0, r);
    for (int c = 0; c < cols; c++) {
        float v = add ? o[c] + r[c] : r[c];
        if (last)
            v = relu ? fmax(v + bias[col0 + c], 0.0f) : v + bias[col0 + c];
        o[c] = v;
    }
}

/* Y = A^T M A for each tile of the block, stored with wino_store. */
void wino_output(float16 m[WINO_POINTS][WINO_TILES], wino_shape s, const int3 *tiles, int ntiles,
                 int col0, int add, int last, __global const float *bias, int relu,
                 __global float *out)
{
    for (int t = 0; t < ntiles; t++) {
        float16 rows[4][WINO_ALPHA], column[WINO_ALPHA], y[4]; /* rows: A^T M */
        #pragma unroll
        for (int j = 0; j < WINO_ALPHA; j++) {
            #pragma unroll
            for (int a = 0; a < WINO_ALPHA; a++)
                column[a] = m[a * WINO_ALPHA + j][t];
            wino_at(column, y);
            #pragma unroll
            for (int i = 0; i < 4; i++)
                rows[i][j] = y[i];
        }
        int3 p = tiles[t];
        #pragma unroll
        for (int i = 0; i < 4; i++) {
            wino_at(rows[i], y);
            #pragma unroll
            for (int j = 0; j < 4; j++)
                wino_store(out, s, p.x, p.y + i, p.z + j, col0, y[j], add, last, bias, relu);
        }
    }
}

/* ------------------------------------------------------------------------
 * winograd_conv: work-item i computes the 4x4 output tiles WINO_TILES * i
 * onwards (tiles in NHW order), every column: a chunk of WINO_CHANNELS
 * source channels at a time, each chunk's V transformed once and used by
 * every 16-column panel. `bias` holds out_c floats (zeros for none); relu
 * clamps the biased sums at zero. u is winograd_filter's, `cols` wide.
 * Global size: (ceil(tiles / WINO_TILES)).
 */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void winograd_conv(__global const float *restrict src, __global const float *restrict zeros,
                   __global const float *restrict u, geom g,
                   int transposed, int cols, __global const float *restrict bias, int relu,
                   __global float *restrict out)
{
    wino_shape s = wino_shape_of(g, transposed);
    int total = g.batch * ((s.out_h + 3) / 4) * ((s.out_w + 3) / 4);
    int first = get_global_id(0) * WINO_TILES, ntiles = min(WINO_TILES, total - first);
    if (ntiles <= 0)
        return;
    int3 tiles[WINO_TILES];
    for (int t = 0; t < WINO_TILES; t++) /* slots past ntiles repeat the last tile, unstored */
        tiles[t] = wino_tile(s, first + min(t, ntiles - 1));
    float v[WINO_POINTS][WINO_TILES][WINO_CHANNELS];
    float16 m[WINO_POINTS][WINO_TILES];
    for (int c0 = 0; c0 < s.channels; c0 += WINO_CHANNELS) {
        for (int t = 0; t < WINO_TILES; t++)
            wino_input(src, zeros, s, tiles[t], t, c0, v);
        int last = c0 + WINO_CHANNELS >= s.channels;
        for (int col0 = 0; col0 < s.out_c; col0 += WINO_COLS) {
            wino_products(v, u, s.channels, c0, cols, col0, m);
            wino_output(m, s, tiles, ntiles, col0, c0 > 0, last, bias, relu, out);
        }
    }
}
