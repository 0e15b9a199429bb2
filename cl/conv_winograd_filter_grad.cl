/* conv_winograd_filter_grad.cl: the filter gradient of a 5x5 stride-1
 * convolution by Winograd, F(5x5, 4x4), reusing conv_winograd.cl's input
 * transform (this file is joined after it). Host side: cl/launch_conv_winograd.c.
 *
 * The filter gradient is a correlation of x with dy, summed over the batch:
 *
 *     dW[ky][kx][ci][co] = sum over n, y, x of xpad[n][y + ky][x + kx][ci] * dy[n][y][x][co]
 *
 * Cut dy into 4x4 tiles; each tile meets an 8x8 patch of x, and its share of
 * dW is a 5x5 "convolution" of the patch with the 4x4 dy tile as the filter.
 * The forward's F(4x4, 5x5) turned around computes it (the same bilinear
 * algorithm with the roles of result and filter swapped, Lavin & Gray 2015):
 *
 *     dW[5x5] = G^T [ sum over tiles of (A Z A^T) (.) (B^T D B) ] G
 *
 * with the forward's matrices: B^T for the patch D (wino_bt, as forward),
 * A (the transpose of the forward's output transform) for the dy tile Z, and
 * G^T, the forward's filter transform turned, for the result. Because the
 * transforms are linear the sum over tiles comes before G^T .. G: 64 GEMMs,
 * one per point, M[p][ci][co] = sum over tiles V[p][tile][ci] * Z[p][tile][co],
 * and one output transform per (ci, co) at the very end. The products cost
 * 64 multiply-adds per tile (16 pixels), 4 per pixel, against the direct
 * form's 25: 6.25 times fewer (4.8 on a 14x14 image, whose tiles cover 16x16).
 *
 * Shaped for a CPU: work-item i takes its own run of tiles (a slice of the
 * batch) and sums its products into its own partial M (a few hundred KB,
 * which stays in its core's L2); a second kernel adds the partials in
 * work-item order, so the result is the same from run to run, then transforms.
 */

/* A work-item transforms WINO_GRAD_TILES tiles (blocks of the forward's
 * WINO_TILES, so wino_input serves as it is) before adding their products
 * into its partial: each load and store of a partial sum then carries 12
 * multiply-adds. Measured at conv_2's shape: 6 tiles 11.0, 12 tiles 9.2, 18
 * and 24 tiles 9.1-9.2 ms of CPU time. */
enum { WINO_GRAD_BLOCKS = 2, WINO_GRAD_TILES = WINO_GRAD_BLOCKS * WINO_TILES };

/* Z = A z A^T's one dimension: the eight values at the points of a column of
 * four (16 channels each), the rows of A being the columns of wino_at's A^T. */
void wino_a(const float16 *z, float16 *r)
{
    float16 even = z[0] + z[2], odd = z[1] + z[3];
    float16 even2 = z[0] + 4 * z[2], odd2 = 2 * z[1] + 8 * z[3];
    float16 even_half = z[0] + 0.25f * z[2], odd_half = 0.5f * z[1] + 0.125f * z[3];
    r[0] = z[0];
    r[1] = even + odd;
    r[2] = even - odd;
    r[3] = even2 + odd2;
    r[4] = even2 - odd2;
    r[5] = even_half + odd_half;
    r[6] = even_half - odd_half;
    r[7] = z[3];
}

/* Sixteen result columns from c of a dy pixel (zeros past the last). */
float16 wino_dy_columns(__global const float *pixel, int c, int left)
{
    return (float16)(wino_channels(pixel, c, left), wino_channels(pixel, c + 8, left - 8));
}

/* Z[p][slot][c] = (A z A^T)[p] for the tile's 4x4 dy values z, columns
 * co0 .. co0 + width; zeros past the image, past out_c, and for an unused
 * slot (`used` false), so that slot adds nothing. */
void wino_dy(__global const float *dy, wino_shape s, int3 tile, int used, int slot, int co0,
             int width, float z[WINO_POINTS][WINO_TILES][WINO_CHANNELS])
{
    for (int c = co0; c < co0 + width; c += 16) {
        float16 t[4][WINO_ALPHA], d[4]; /* t: A z, a column of z at a time */
        #pragma unroll
        for (int j = 0; j < 4; j++) {
            #pragma unroll
            for (int i = 0; i < 4; i++) {
                int y = tile.y + i, x = tile.z + j;
                bool inside = used && y < s.out_h && x < s.out_w;
                __global const float *pixel = dy + (((size_t)tile.x * s.out_h + y) * s.out_w + x) * s.out_c;
                d[i] = inside ? wino_dy_columns(pixel, c, s.out_c - c) : 0.0f;
            }
            wino_a(d, t[j]);
        }
        #pragma unroll
        for (int a = 0; a < WINO_ALPHA; a++) { /* Z = t A^T, a row at a time */
            float16 r[WINO_ALPHA];
            #pragma unroll
            for (int j = 0; j < 4; j++)
                d[j] = t[j][a];
            wino_a(d, r);
            #pragma unroll
            for (int b = 0; b < WINO_ALPHA; b++)
                vstore16(r[b], 0, &z[a * WINO_ALPHA + b][slot][c - co0]);
        }
    }
}

/* The 64 GEMMs of WINO_GRAD_TILES tiles, added into the partial m (stored
 * when `first`): m[p][c0 + r][co0 + col] += sum over the blocks and slots
 * of v[block][p][slot][r] * z[block][p][slot][col], for r < rows, col <
 * width, a multiple of TILE_COLS. The register tile: 4 source channels x
 * TILE_COLS columns (conv_gemm.cl's two vectors of CONV_WIDTH), 8 of the 16
 * or 32 vector registers (4 x 64 on AVX-512 measured slower: 12.1 against
 * 11.0 ms). */
void wino_grad_products(float v[WINO_GRAD_BLOCKS][WINO_POINTS][WINO_TILES][WINO_CHANNELS],
                        float z[WINO_GRAD_BLOCKS][WINO_POINTS][WINO_TILES][WINO_CHANNELS], int rows, int width,
                        int first, __global float *m, int m_rows, int cols)
{
    for (int p = 0; p < WINO_POINTS; p++)
        for (int r0 = 0; r0 < rows; r0 += 4)
            for (int col = 0; col < width; col += TILE_COLS) {
                __global float *out = m + ((size_t)p * m_rows + r0) * cols + col;
                floatv acc[4][2];
                #pragma unroll
                for (int r = 0; r < 4; r++) {
                    acc[r][0] = first ? 0.0f : vloadv(0, out + (size_t)r * cols);
                    acc[r][1] = first ? 0.0f : vloadv(1, out + (size_t)r * cols);
                }
                for (int b = 0; b < WINO_GRAD_BLOCKS; b++) {
                    #pragma unroll
                    for (int t = 0; t < WINO_TILES; t++) {
                        floatv z0 = vloadv(0, &z[b][p][t][col]), z1 = vloadv(1, &z[b][p][t][col]);
                        #pragma unroll
                        for (int r = 0; r < 4; r++) {
                            acc[r][0] = fma((floatv)(v[b][p][t][r0 + r]), z0, acc[r][0]);
                            acc[r][1] = fma((floatv)(v[b][p][t][r0 + r]), z1, acc[r][1]);
                        }
                    }
                }
                #pragma unroll
                for (int r = 0; r < 4; r++) {
                    vstorev(acc[r][0], 0, out + (size_t)r * cols);
                    vstorev(acc[r][1], 1, out + (size_t)r * cols);
                }
            }
}

/* ------------------------------------------------------------------------
 * winograd_filter_grad: work-item i sums the products of tiles
 * per_item * i .. per_item * (i + 1) (of dy's 4x4 tiles, NHW order) into
 * its partial, partials + i * 64 * m_rows * cols: M[p][ci][co], m_rows =
 * in channels rounded up to 8, cols = out channels rounded up to TILE_COLS
 * (16 or 32, a multiple of wino_dy's 16).
 * `zeros` holds at least as many zeros as x has channels.
 * Global size: (items); per_item a multiple of WINO_GRAD_TILES.
 */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void winograd_filter_grad(__global const float *restrict x, __global const float *restrict dy,
                          __global const float *restrict zeros, geom g, int per_item, int m_rows,
                          int cols, __global float *restrict partials)
{
    wino_shape s = wino_shape_of(g, 0);
    int total = g.batch * ((s.out_h + 3) / 4) * ((s.out_w + 3) / 4);
    int begin = get_global_id(0) * per_item, end = min(total, begin + per_item);
    __global float *m = partials + get_global_id(0) * (size_t)WINO_POINTS * m_rows * cols;
    /* 192 KB each, on the PoCL thread's stack like the forward's V */
    float v[WINO_GRAD_BLOCKS][WINO_POINTS][WINO_TILES][WINO_CHANNELS];
    float z[WINO_GRAD_BLOCKS][WINO_POINTS][WINO_TILES][WINO_CHANNELS];
    int3 tiles[WINO_GRAD_TILES];
    for (int first = begin; first < end; first += WINO_GRAD_TILES) {
        int ntiles = min(WINO_GRAD_TILES, end - first);
        for (int t = 0; t < WINO_GRAD_TILES; t++) /* slots past ntiles repeat the last; z zero there */
            tiles[t] = wino_tile(s, first + min(t, ntiles - 1));
        for (int co0 = 0; co0 < s.out_c; co0 += WINO_CHANNELS) {
            int width = min(WINO_CHANNELS, (s.out_c - co0 + TILE_COLS - 1) / TILE_COLS * TILE_COLS);
            for (int t = 0; t < WINO_GRAD_TILES; t++)
                wino_dy(dy, s, tiles[t], t < ntiles, t % WINO_TILES, co0, width, z[t / WINO_TILES]);
            for (int c0 = 0; c0 < s.channels; c0 += WINO_CHANNELS) {
                for (int t = 0; t < WINO_GRAD_TILES; t++)
                    wino_input(x, zeros, s, tiles[t], t % WINO_TILES, c0, v[t / WINO_TILES]);
                int rows = min(WINO_CHANNELS, (s.channels - c0 + 7) / 8 * 8);
                wino_grad_products(v, z, rows, width, first == begin,
                                   m + (size_t)c0 * cols + co0, m_rows, cols);
            }
        }
    }
}

/* ------------------------------------------------------------------------
 * winograd_filter_grad_output: dW = G^T M G for 16 columns (out channels)
 * from 16 * get_global_id(0) of in channel get_global_id(1), M being the
 * sum of the `items` partials, added in order.
 * Global size: (cols / 16, in channels).
 */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void winograd_filter_grad_output(__global const float *restrict partials, int items, int m_rows,
                                 int cols, geom g, __global float *restrict dfilter)
{
    int col0 = get_global_id(0) * 16, ci = get_global_id(1);
    size_t item_size = (size_t)WINO_POINTS * m_rows * cols;
    float16 m[WINO_ALPHA][WINO_ALPHA], t[5][WINO_ALPHA];
    for (int p = 0; p < WINO_POINTS; p++) {
        __global const float *at = partials + ((size_t)p * m_rows + ci) * cols + col0;
        float16 sum = vload16(0, at);
        for (int i = 1; i < items; i++)
            sum += vload16(0, at + i * item_size);
        m[p / WINO_ALPHA][p % WINO_ALPHA] = sum;
    }
    for (int k = 0; k < 5; k++) /* t = G^T M */
        for (int b = 0; b < WINO_ALPHA; b++) {
            float16 sum = 0.0f;
            for (int a = 0; a < WINO_ALPHA; a++)
                sum += wino_G[a][k] * m[a][b];
            t[k][b] = sum;
        }
    int width = min(16, g.oc - col0);
    for (int ky = 0; ky < 5; ky++) /* dW = t G */
        for (int kx = 0; kx < 5; kx++) {
            float16 sum = 0.0f;
            for (int b = 0; b < WINO_ALPHA; b++)
                sum += wino_G[b][kx] * t[ky][b];
            float r[16];
            vstore16(sum, 0, r);
            __global float *out = dfilter + ((size_t)(ky * 5 + kx) * g.c + ci) * g.oc + col0;
            for (int c = 0; c < width; c++)
                out[c] = r[c];
        }
}
