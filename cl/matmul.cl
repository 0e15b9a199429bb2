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
 *     it;
 *   - a register tile of MR x NR results per work-item, NR chosen per device
 *     (the host's fl_cl_gemm_tile_columns, passed as -DFL_GEMM_NR):
 *       6 x 16 on AVX2 (16 vector registers): 6 rows x 2 float8 = 12
 *       registers of accumulators; each k step loads 16 floats of B (2
 *       registers), broadcasts 6 floats of A and issues 12 FMAs;
 *       6 x 32 where the device prefers 16-float vectors (AVX-512: 32
 *       registers of 16 floats): 6 rows x 2 float16, the same 12
 *       accumulators and 2 loads of B per k step, but each FMA does twice
 *       the work, so loads and broadcasts per FMA halve.
 *     Reused values stay in registers, so memory traffic per FMA is small
 *     and the FMA units stay busy.  On the 2-core Zen 4 EPYC (AVX-512 run
 *     as two 256-bit halves) 6 x 32 measured 7-22% faster on dense_1's
 *     three products and sgemm 1024^3 (book chapter 5); on a Xeon, whose
 *     AVX-512 FMA units are a full 512 bits wide, 6 x 16 would leave half
 *     of each unit idle.
 *
 * Packing
 * -------
 * The inner loop wants the NR B values of step k right after those of step
 * k-1.  A row-major B (ld = N) puts them N floats apart, a new cache line and
 * often a new page each step, and power-of-two N maps them all to the same
 * cache sets.  So B is first copied ("packed") into column panels:
 *
 *   Bp[p][k][c] = op(B)(k, NR p + c)   p = panel, c < NR, zero past N
 *
 * which the GEMM reads strictly sequentially.  Packing also absorbs the
 * transpose: fl_pack_cols16 reads a transposed B.  A is read in place when
 * its rows run along k (op(A) = A); a transposed A is packed into 6-row
 * panels (Ap[p][k][r] = op(A)(6p + r, k)) by fl_pack_rows.  Either way the
 * GEMM kernel sees A through three strides, so one kernel serves all four
 * transpose combinations.  (The host may also swap the operands and compute
 * C^T = B^T A^T, and cuts very long K into chunks; see cl/gemm.c.)
 *
 * Numbers (2-core Zen 3, PoCL 3.1, 6 x 16): fl_gemm alone runs at 175-190
 * GFLOP/s, like OpenBLAS's assembly kernel (~180); the packing kernels at
 * memcpy speed.  The Zen 4 figures for 6 x 32 are in chapter 5.
 */

#define MR 6    /* rows of C per work-item (A values broadcast per k step) */
/* Columns of C per work-item: two vectors of B per k step.  The host picks
 * FL_GEMM_NR from the device (cl/gemm.c: fl_cl_gemm_tile_columns). */
#ifndef FL_GEMM_NR
#define FL_GEMM_NR 16
#endif
#define NR FL_GEMM_NR
#if NR == 32
typedef float16 floatv;  /* one 512-bit AVX-512 register */
#define VLOAD vload16
#define VSTORE vstore16
#else
typedef float8 floatv;   /* one 256-bit AVX register */
#define VLOAD vload8
#define VSTORE vstore8
#endif

/* ------------------------------------------------------------------------
 * fl_pack_rows: pack a matrix whose panel columns are contiguous in memory.
 *
 *   dst[p][k][c] = src[off + k*ld + p*P + c]   (0 where p*P + c >= W)
 *
 * for k < K, c < P.  P = NR packs a non-transposed B (K x W); P = MR packs a
 * transposed A (stored K x M).  Work-item (g, b) copies panels
 * [g*pp, (g+1)*pp) of rows [b*rp, (b+1)*rp): it reads row segments of pp*P
 * floats and writes pp sequential streams.  The host picks pp and rp.
 * Global size: (ceil(panels / pp), ceil(K / rp)), local (1,1).
 */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void fl_pack_rows(int K, int W, int P, __global const float *src, ulong off,
                  int ld, __global float *dst, int pp, int rp)
{
    int npanels = (W + P - 1) / P;
    int p0 = get_global_id(0) * pp, p1 = min(p0 + pp, npanels);
    int k0 = get_global_id(1) * rp, k1 = min(k0 + rp, K);
    src += off;

    for (int p = p0; p < p1; p++) {
        int j0 = p * P;
        __global const float *s = src + (size_t)k0 * ld + j0;
        __global float *d = dst + ((size_t)p * K + k0) * P;
        if (P == NR && j0 + NR <= W) {          /* fast path: a full panel */
            for (int k = k0; k < k1; k++, s += ld, d += NR) {
                VSTORE(VLOAD(0, s), 0, d);
                VSTORE(VLOAD(1, s), 1, d);
            }
        } else if (P == MR && j0 + MR <= W) {   /* a full 6-wide panel */
            for (int k = k0; k < k1; k++, s += ld, d += MR) {
                vstore4(vload4(0, s), 0, d);
                vstore2(vload2(0, s + 4), 0, d + 4);
            }
        } else {                                 /* edge panel, zero-filled */
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
 *   dst[p][k][c] = src[off + (NR p + c)*ld + k]   (0 where NR p + c >= N)
 *
 * Work-item (p, b) does panel p for k in [b*kp, (b+1)*kp).  It loads a
 * 16 x 16 block (16 rows of S, 16 k values each, as two float8 per row:
 * x = k+0..7, y = k+8..15) and writes it transposed as 16 panel rows, at
 * a time (a 32-wide panel is two such blocks side by side).
 * Reading whole 64-byte lines matters: with a power-of-two ld all 16 rows
 * fall into the same L1 cache set, so a half-read line would be evicted
 * before its second half is used.
 * The host picks kp (a multiple of 16).  Global size: (panels, ceil(K / kp)).
 */
/* panel row i = element s of v0..v15 (v = x or y), as two float8 */
#define E(v, r, s) v##r.s
#define PUT(i, v, s)                                                          \
    vstore8((float8)(E(v, 0, s), E(v, 1, s), E(v, 2, s), E(v, 3, s),         \
                     E(v, 4, s), E(v, 5, s), E(v, 6, s), E(v, 7, s)),         \
            0, e + i * NR);                                                   \
    vstore8((float8)(E(v, 8, s), E(v, 9, s), E(v, 10, s), E(v, 11, s),       \
                     E(v, 12, s), E(v, 13, s), E(v, 14, s), E(v, 15, s)),     \
            1, e + i * NR);
#define LOAD(r) float8 x##r = vload8(0, t + r * ld), y##r = vload8(1, t + r * ld);

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void fl_pack_cols16(int K, int N, __global const float *src, ulong off, int ld,
                    __global float *dst, int kp)
{
    int p = get_global_id(0);
    int k0 = get_global_id(1) * kp, k1 = min(k0 + kp, K);
    int j0 = p * NR;
    __global const float *s = src + off + (size_t)j0 * ld;
    __global float *d = dst + ((size_t)p * K + k0) * NR;
    int k = k0;

    if (j0 + NR <= N) {                          /* full panel: 16x16 blocks */
        for (; k + 16 <= k1; k += 16, d += 16 * NR)
            for (int h = 0; h < NR; h += 16) {   /* columns h..h+15 of the panel */
                __global const float *t = s + (size_t)h * ld + k;
                __global float *e = d + h;
                LOAD(0) LOAD(1) LOAD(2) LOAD(3) LOAD(4) LOAD(5) LOAD(6) LOAD(7)
                LOAD(8) LOAD(9) LOAD(10) LOAD(11) LOAD(12) LOAD(13) LOAD(14) LOAD(15)
                PUT(0, x, s0) PUT(1, x, s1) PUT(2, x, s2) PUT(3, x, s3)
                PUT(4, x, s4) PUT(5, x, s5) PUT(6, x, s6) PUT(7, x, s7)
                PUT(8, y, s0) PUT(9, y, s1) PUT(10, y, s2) PUT(11, y, s3)
                PUT(12, y, s4) PUT(13, y, s5) PUT(14, y, s6) PUT(15, y, s7)
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
 * 16*jt, over all of K.  PoCL's threads take work-groups in runs of
 * consecutive flat ids, dimension 0 varying fastest.  With panels_fast == 0
 * the ids are (it, jt): consecutive tiles share a B panel, which stays in
 * cache while A streams past.  With panels_fast == 1 they are (jt, it):
 * tiles share 6 rows of A, and all of Bp stays in cache (the host picks this
 * when Bp is small and A is big, e.g. a convolution's im2col matrix).
 * Global size: (mtiles, ntiles), or (ntiles, mtiles) with panels_fast.
 * beta == 0 never reads C (it may hold garbage); other values scale it.
 *
 * The epilogue, done on each result as it is stored, so that a dense or
 * convolution layer's bias and ReLU cost no pass over C of their own: with
 * bias != NULL, add bias[j] (bias[i] when bias_on_rows: the host computes
 * C^T, so the kernel's rows are the caller's columns); then, with relu,
 * max(0, v) as the host's ReLU computes it (NaN becomes 0): fl_rule_relu of
 * src/scalar_rules.h, which leads this program, or its float8 spelling.
 */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void fl_gemm(int M, int N, int K,
             __global const float *A, ulong a_off, int a_ps, int a_rs, int a_cs,
             __global const float *Bp,
             __global float *C, ulong c_off, int c_rs, int c_cs, float beta,
             int panels_fast, __global const float *bias, int bias_on_rows, int relu)
{
    int it = get_global_id(panels_fast ? 1 : 0);
    int jt = get_global_id(panels_fast ? 0 : 1);
    int i0 = it * MR, j0 = jt * NR;

    /* One pointer per row of the tile.  Rows past M (last tile only) are
     * clamped to row M-1: valid memory, and their results are not stored. */
    A += a_off;
#define AROW(r) (A + (size_t)(min(i0 + r, M - 1) / MR) * a_ps \
                   + (size_t)(min(i0 + r, M - 1) % MR) * a_rs)
    __global const float *a0 = AROW(0), *a1 = AROW(1), *a2 = AROW(2);
    __global const float *a3 = AROW(3), *a4 = AROW(4), *a5 = AROW(5);
    __global const float *b = Bp + (size_t)jt * K * NR;

    // [book:microkernel]
    /* The micro-kernel.  Row r of the tile lives in two registers, cr0 (its
     * columns 0-7) and cr1 (8-15); floatv is float8, or float16 on AVX-512
     * (then 0-15 and 16-31).  Per k: two loads of B, and per row one
     * broadcast of A(i0 + r, k) and two FMAs. */
    floatv c00 = 0.0f, c01 = 0.0f, c10 = 0.0f, c11 = 0.0f, c20 = 0.0f, c21 = 0.0f;
    floatv c30 = 0.0f, c31 = 0.0f, c40 = 0.0f, c41 = 0.0f, c50 = 0.0f, c51 = 0.0f;
#define ROW(r) { floatv a = (floatv)a##r[ka];                                 \
                 c##r##0 = fma(a, b0, c##r##0); c##r##1 = fma(a, b1, c##r##1); }
    size_t ka = 0;
    for (int k = 0; k < K; k++, ka += a_cs, b += NR) {
        floatv b0 = VLOAD(0, b), b1 = VLOAD(1, b);
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
    }
    // [end:microkernel]

    /* Write back.  Common case: a full tile and contiguous C rows, so each
     * row is two vector stores (plus two loads when accumulating). */
    C += c_off + (size_t)i0 * c_rs + (size_t)j0 * c_cs;
    int rows = min(MR, M - i0), cols = min(NR, N - j0);
    if (rows == MR && cols == NR && c_cs == 1) {
#define STORE_ROW(r)                                                          \
        {   __global float *cr = C + (size_t)r * c_rs;                        \
            if (beta != 0.0f) {                                               \
                c##r##0 = fma((floatv)beta, VLOAD(0, cr), c##r##0);           \
                c##r##1 = fma((floatv)beta, VLOAD(1, cr), c##r##1);           \
            }                                                                 \
            if (bias) {                                                       \
                floatv b0 = bias_on_rows ? (floatv)bias[i0 + r] : VLOAD(0, bias + j0); \
                floatv b1 = bias_on_rows ? (floatv)bias[i0 + r] : VLOAD(1, bias + j0); \
                c##r##0 += b0; c##r##1 += b1;                                 \
            }                                                                 \
            if (relu) {                                                       \
                c##r##0 = select((floatv)0.0f, c##r##0, c##r##0 > 0.0f);      \
                c##r##1 = select((floatv)0.0f, c##r##1, c##r##1 > 0.0f);      \
            }                                                                 \
            VSTORE(c##r##0, 0, cr); VSTORE(c##r##1, 1, cr); }
        STORE_ROW(0) STORE_ROW(1) STORE_ROW(2) STORE_ROW(3) STORE_ROW(4) STORE_ROW(5)
        return;
    }
    /* Edge tiles and transposed C: via a private array, element by element.
     * Row index innermost, because with transposed C (c_rs == 1) that walks
     * memory contiguously: each touched cache line is finished at once. */
    float t[MR][NR];
    VSTORE(c00, 0, t[0]); VSTORE(c01, 1, t[0]); VSTORE(c10, 0, t[1]); VSTORE(c11, 1, t[1]);
    VSTORE(c20, 0, t[2]); VSTORE(c21, 1, t[2]); VSTORE(c30, 0, t[3]); VSTORE(c31, 1, t[3]);
    VSTORE(c40, 0, t[4]); VSTORE(c41, 1, t[4]); VSTORE(c50, 0, t[5]); VSTORE(c51, 1, t[5]);
    for (int c = 0; c < cols; c++)
        for (int r = 0; r < rows; r++) {
            __global float *e = C + (size_t)r * c_rs + (size_t)c * c_cs;
            float v = beta != 0.0f ? fma(beta, *e, t[r][c]) : t[r][c];
            if (bias)
                v += bias[bias_on_rows ? i0 + r : j0 + c];
            *e = relu ? fl_rule_relu(v) : v;
        }
}

/* Helper macros end here, so this file can share a program with others. */
#undef E
#undef PUT
#undef LOAD
#undef AROW
#undef ROW
#undef STORE_ROW
#undef MR
#undef NR
#undef VLOAD
#undef VSTORE
