/* matmul.cl: single-precision GEMM, C = op(A) op(B) (+ beta C), for PoCL's CPU
 * ("pthread") device.  Host side: cl/gemm.c, which packs operands, picks
 * work sizes and launches these kernels.  Built with no special options.
 *
 * How a CPU runs OpenCL under PoCL
 * --------------------------------
 * PoCL compiles each kernel with LLVM into a "work-group function": a loop
 * over the work-items of one work-group, which the vectoriser may turn into
 * SIMD across work-items.  Work-groups are handed to one thread per core.
 * A GPU-style GEMM (big work-groups, tiles in __local memory, barriers) maps
 * badly onto that: local memory is ordinary memory, every barrier splits the
 * loop, and the cross-work-item vectoriser rarely finds the register tiling
 * a fast CPU GEMM needs.  So this file writes the CPU kernel directly:
 *
 *   - work-group size 1: one work-item = one task for one core, no barriers,
 *     no __local memory, nothing for PoCL to restructure;
 *   - explicit vector types: a float8 is exactly one 256-bit AVX register
 *     and fma(float8, float8, float8) one vfmadd instruction, so the code
 *     says which registers hold what instead of hoping the vectoriser finds
 *     it (float16 would work too, but draws ABI warnings without AVX-512);
 *   - a register tile of MR x NR = 6 x 16 results per work-item: 6 rows x 2
 *     float8 = 12 of the 16 AVX2 registers hold accumulators; each k step
 *     loads 16 floats of B (2 registers), broadcasts 6 floats of A and issues
 *     12 FMAs.  Reused values stay in registers, so memory traffic per FMA
 *     is small and the two FMA units stay busy.
 *
 * Packing
 * -------
 * The inner loop wants the 16 B values of step k right after those of step
 * k-1.  A row-major B (ld = N) puts them N floats apart, a new cache line and
 * often a new page each step, and power-of-two N maps them all to the same
 * cache sets.  So B is first copied ("packed") into column panels:
 *
 *   Bp[p][k][c] = op(B)(k, 16p + c)   p = panel, c = 0..15, zero past N
 *
 * which the GEMM reads strictly sequentially.  Packing also absorbs the
 * transpose: fl_pack_cols16 reads a transposed B.  A is read in place when
 * its rows run along k (op(A) = A); a transposed A is packed into 6-row
 * panels (Ap[p][k][r] = op(A)(6p + r, k)) by fl_pack_rows.  Either way the
 * GEMM kernel sees A through three strides, so one kernel serves all four
 * transpose combinations.
 */

#define MR 6    /* rows of C per work-item (A values broadcast per k step) */
#define NR 16   /* columns of C per work-item (two float8 of B per k step) */

/* Block sizes of the packing kernels (one work-item copies PACK_ROWS rows of
 * PACK_PANELS panels); big enough to amortise the per-work-group cost. */
#define PACK_ROWS   16
#define PACK_PANELS 16
#define PACK_KB     64   /* k values per work-item in fl_pack_cols16 */

/* ------------------------------------------------------------------------
 * fl_pack_rows: pack a matrix whose panel columns are contiguous in memory.
 *
 *   dst[p][k][c] = src[off + k*ld + p*P + c]   (0 where p*P + c >= W)
 *
 * for k < K, c < P.  P = NR packs a non-transposed B (K x W); P = MR packs a
 * transposed A (stored K x M).  Work-item (g, b) does panels
 * [g*PACK_PANELS, +PACK_PANELS) of rows [b*PACK_ROWS, +PACK_ROWS): it reads
 * row segments and writes a few sequential streams.
 * Global size: (ceil(panels / PACK_PANELS), ceil(K / PACK_ROWS)), local (1,1).
 */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void fl_pack_rows(int K, int W, int P, __global const float *src, ulong off,
                  int ld, __global float *dst)
{
    int npanels = (W + P - 1) / P;
    int p0 = get_global_id(0) * PACK_PANELS, p1 = min(p0 + PACK_PANELS, npanels);
    int k0 = get_global_id(1) * PACK_ROWS, k1 = min(k0 + PACK_ROWS, K);
    src += off;

    for (int p = p0; p < p1; p++) {
        int j0 = p * P;
        __global const float *s = src + (size_t)k0 * ld + j0;
        __global float *d = dst + ((size_t)p * K + k0) * P;
        if (P == NR && j0 + NR <= W) {          /* fast path: a full panel */
            for (int k = k0; k < k1; k++, s += ld, d += NR) {
                vstore8(vload8(0, s), 0, d);
                vstore8(vload8(1, s), 1, d);
            }
        } else {                                 /* 6-wide or edge panel */
            int w = min(P, W - j0);
            for (int k = k0; k < k1; k++, s += ld, d += P)
                for (int c = 0; c < P; c++)
                    d[c] = c < w ? s[c] : 0.0f;
        }
    }
}

/* ------------------------------------------------------------------------
 * fl_pack_cols16: pack a transposed B, i.e. op(B) = S^T with S stored N x K:
 *
 *   dst[p][k][c] = src[off + (16p + c)*ld + k]   (0 where 16p + c >= N)
 *
 * Work-item (p, b) does panel p for k in [b*PACK_KB, +PACK_KB).  It loads
 * a 16 x 8 block (16 rows of S, 8 k values each, as 16 float8) and writes
 * it transposed as 8 rows of 16, so reads and writes move whole vectors.
 * Global size: (panels, ceil(K / PACK_KB)), local (1,1).
 */
/* element s of rows r0..r7 (or r8..r15): one 8-wide piece of a panel row */
#define LO(s) (float8)(r0.s, r1.s, r2.s, r3.s, r4.s, r5.s, r6.s, r7.s)
#define HI(s) (float8)(r8.s, r9.s, r10.s, r11.s, r12.s, r13.s, r14.s, r15.s)
#define PUT(i, s) vstore8(LO(s), 0, d + i * NR); vstore8(HI(s), 1, d + i * NR);

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void fl_pack_cols16(int K, int N, __global const float *src, ulong off, int ld,
                    __global float *dst)
{
    int p = get_global_id(0);
    int k0 = get_global_id(1) * PACK_KB, k1 = min(k0 + PACK_KB, K);
    int j0 = p * NR;
    __global const float *s = src + off + (size_t)j0 * ld;
    __global float *d = dst + ((size_t)p * K + k0) * NR;
    int k = k0;

    if (j0 + NR <= N) {                          /* full panel: 16x8 blocks */
        for (; k + 8 <= k1; k += 8, d += 8 * NR) {
            __global const float *t = s + k;
            float8 r0 = vload8(0, t),            r1 = vload8(0, t + ld);
            float8 r2 = vload8(0, t + 2 * ld),   r3 = vload8(0, t + 3 * ld);
            float8 r4 = vload8(0, t + 4 * ld),   r5 = vload8(0, t + 5 * ld);
            float8 r6 = vload8(0, t + 6 * ld),   r7 = vload8(0, t + 7 * ld);
            float8 r8 = vload8(0, t + 8 * ld),   r9 = vload8(0, t + 9 * ld);
            float8 r10 = vload8(0, t + 10 * ld), r11 = vload8(0, t + 11 * ld);
            float8 r12 = vload8(0, t + 12 * ld), r13 = vload8(0, t + 13 * ld);
            float8 r14 = vload8(0, t + 14 * ld), r15 = vload8(0, t + 15 * ld);
            PUT(0, s0) PUT(1, s1) PUT(2, s2) PUT(3, s3)
            PUT(4, s4) PUT(5, s5) PUT(6, s6) PUT(7, s7)
        }
    }
    /* leftover k values, and the edge panel past N, one element at a time */
    int w = min(NR, N - j0);
    for (; k < k1; k++, d += NR)
        for (int c = 0; c < NR; c++)
            d[c] = c < w ? s[(size_t)c * ld + k] : 0.0f;
}

/* ------------------------------------------------------------------------
 * fl_gemm: C(i, j) = sum_k A(i, k) * Bp(k, j)  (+ beta * C(i, j))
 *
 *   A(i, k) = A[a_off + (i / MR) * a_ps + (i % MR) * a_rs + k * a_cs]
 *   Bp      = packed panels as above, K x (16 * panels)
 *   C(i, j) = C[c_off + i * c_rs + j * c_cs]
 *
 * The strides let the host pass A in place (a_ps = 6*lda, a_rs = lda,
 * a_cs = 1) or 6-row panels (a_ps = 6*K, a_rs = 1, a_cs = 6), and write C
 * row-major (c_rs = ldc, c_cs = 1) or transposed (c_rs = 1, c_cs = ldc) when
 * the host computes C^T = B^T A^T instead.
 *
 * Work-item (it, jt) computes the 6 x 16 tile of C at rows 6*it, columns
 * 16*jt, over all of K.  Dimension 0 (rows) varies fastest, so consecutive
 * work-items on a core reuse the same B panel from cache.
 * Global size: (ceil(M / 6), ceil(N / 16)), local (1, 1).
 * beta == 0 never reads C (it may hold garbage); other values scale it.
 */

/* Store (or accumulate into) row r of the tile: lo, hi hold C(i0 + r, j0..+15). */
#define STORE_ROW(r, lo, hi)                                                  \
    if (r < rows) {                                                           \
        __global float *cr = C + (size_t)(i0 + r) * c_rs;                     \
        if (fast) {                                                           \
            if (beta != 0.0f) {                                               \
                lo = fma((float8)beta, vload8(0, cr), lo);                    \
                hi = fma((float8)beta, vload8(1, cr), hi);                    \
            }                                                                 \
            vstore8(lo, 0, cr);                                               \
            vstore8(hi, 1, cr);                                               \
        } else {                                                              \
            float t[NR];                                                      \
            vstore8(lo, 0, t);                                                \
            vstore8(hi, 1, t);                                                \
            for (int c = 0; c < cols; c++) {                                  \
                __global float *e = cr + (size_t)c * c_cs;                    \
                *e = beta != 0.0f ? fma(beta, *e, t[c]) : t[c];              \
            }                                                                 \
        }                                                                     \
    }

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void fl_gemm(int M, int N, int K,
             __global const float *A, ulong a_off, int a_ps, int a_rs, int a_cs,
             __global const float *Bp,
             __global float *C, ulong c_off, int c_rs, int c_cs, float beta)
{
    int it = get_global_id(0), jt = get_global_id(1);
    int i0 = it * MR, j0 = jt * NR;

    /* One pointer per row of the tile.  Rows past M (last tile only) are
     * clamped to row M-1: valid memory, and their results are not stored. */
    A += a_off;
#define AROW(r) (A + (size_t)(min(i0 + r, M - 1) / MR) * a_ps \
                   + (size_t)(min(i0 + r, M - 1) % MR) * a_rs)
    __global const float *a0 = AROW(0), *a1 = AROW(1), *a2 = AROW(2);
    __global const float *a3 = AROW(3), *a4 = AROW(4), *a5 = AROW(5);
    __global const float *b = Bp + (size_t)jt * K * NR;

    /* The micro-kernel.  Row r of the tile lives in two registers, cr0 (its
     * columns 0-7) and cr1 (8-15).  Per k: two loads of B, and per row one
     * broadcast of A(i0 + r, k) and two FMAs. */
    float8 c00 = 0.0f, c01 = 0.0f, c10 = 0.0f, c11 = 0.0f, c20 = 0.0f, c21 = 0.0f;
    float8 c30 = 0.0f, c31 = 0.0f, c40 = 0.0f, c41 = 0.0f, c50 = 0.0f, c51 = 0.0f;
#define ROW(r) { float8 a = (float8)a##r[ka];                                 \
                 c##r##0 = fma(a, b0, c##r##0); c##r##1 = fma(a, b1, c##r##1); }
    size_t ka = 0;
    for (int k = 0; k < K; k++, ka += a_cs, b += NR) {
        float8 b0 = vload8(0, b), b1 = vload8(1, b);
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
    }

    /* Write back: whole rows with one vector store when the tile is full
     * and C's columns are contiguous, else element by element. */
    C += c_off + (size_t)j0 * c_cs;
    int rows = min(MR, M - i0), cols = min(NR, N - j0);
    int fast = cols == NR && c_cs == 1;
    STORE_ROW(0, c00, c01) STORE_ROW(1, c10, c11) STORE_ROW(2, c20, c21)
    STORE_ROW(3, c30, c31) STORE_ROW(4, c40, c41) STORE_ROW(5, c50, c51)
}
