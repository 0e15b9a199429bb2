/* gemm.c: host side of the OpenCL GEMM (kernels in cl/matmul.cl).
 * Lays each problem onto the one GEMM kernel (which operand goes on which
 * side, which is packed, in what order tiles run, how K is chunked), then
 * enqueues packing and GEMM kernels.  Allocates nothing once warm.
 * The numbers below were tuned on a 2-core AMD EPYC (Zen 3, AVX2) with
 * PoCL 3.1; see each comment for the reasoning, which carries over.
 */
#include "gemm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <math.h>

/* Rows of a tile: must match matmul.cl.  Its columns (NR there) are
 * g->nr, the FL_GEMM_NR the program was built with. */
enum { MR = 6 };

/* Work per packing work-item: big enough that PoCL's per-work-group cost
 * vanishes, small enough for 2+ cores to share the work (measured: packing
 * then runs at memcpy speed). */
enum { PACK_PANELS = 16, PACK_ROWS = 16, PACK_KB = 256 };

/* K chunking (see fl_cl_gemm_enqueue): packed bytes per chunk, so that a
 * packed chunk is still in the (shared, 32 MiB here) L3 cache when the GEMM
 * reads it; and the least work per chunk, so launches stay negligible. */
#define CHUNK_BYTES (8.0 * 1024 * 1024)
#define CHUNK_MIN_FLOP 20e6

struct fl_cl_gemm {
    cl_context ctx;
    cl_kernel gemm, pack_rows, pack_cols;
    int nr;                     /* columns of a tile: 16 or 32 */
    cl_mem pa, pb;              /* scratch: packed A panels, packed B panels */
    size_t pa_cap, pb_cap;      /* their sizes in floats */
    cl_event last;              /* the last GEMM launched: it reads pa/pb */
    cl_event *wl;               /* wait-list scratch: caller's events + last */
    size_t wl_cap;
    char err[256];
};

static _Thread_local char new_err[256];

static int fail(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, 256, fmt, ap);
    va_end(ap);
    return -1;
}

const char *fl_cl_gemm_error(const fl_cl_gemm *g)
{
    return g ? g->err : new_err;
}

// [book:gemm_tile]
/* The tile's width follows the device's SIMD width: a device that prefers
 * 16-float vectors (AVX-512: 32 registers of 16 floats) gets 6 x 32 tiles,
 * two float16 of B per k step, and twice the FMAs per load of A; others
 * 6 x 16 with float8 (AVX2: 16 registers of 8 floats, 12 of them holding
 * the tile).  FLOWLAB_GEMM_COLUMNS=16|32 overrides, for measuring. */
int fl_cl_gemm_tile_columns(cl_device_id dev)
{
    const char *forced = getenv("FLOWLAB_GEMM_COLUMNS");
    if (forced && (strcmp(forced, "16") == 0 || strcmp(forced, "32") == 0))
        return atoi(forced);
    cl_uint width = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof width, &width, NULL) != CL_SUCCESS)
        return 16;
    return width >= 16 ? 32 : 16;
}
// [end:gemm_tile]

void fl_cl_gemm_build_options(cl_device_id dev, char *options, size_t size)
{
    snprintf(options, size, "-DFL_GEMM_NR=%d", fl_cl_gemm_tile_columns(dev));
}

fl_cl_gemm *fl_cl_gemm_new(cl_context ctx, cl_device_id dev, cl_program program)
{
    new_err[0] = '\0';
    if (!ctx || !program) {
        fail(new_err, "fl_cl_gemm_new: NULL context or program");
        return NULL;
    }
    fl_cl_gemm *g = calloc(1, sizeof *g);
    if (!g) {
        fail(new_err, "fl_cl_gemm_new: out of memory");
        return NULL;
    }
    static const char *names[3] = {"fl_gemm", "fl_pack_rows", "fl_pack_cols16"};
    cl_kernel *ks[3] = {&g->gemm, &g->pack_rows, &g->pack_cols};
    for (int i = 0; i < 3; i++) {
        cl_int e;
        *ks[i] = clCreateKernel(program, names[i], &e);
        if (e != CL_SUCCESS) {
            fail(new_err, "clCreateKernel(%s) failed: %d (program not built "
                 "from cl/matmul.cl?)", names[i], (int)e);
            fl_cl_gemm_free(g);
            return NULL;
        }
    }
    clRetainContext(ctx);
    g->ctx = ctx;
    g->nr = fl_cl_gemm_tile_columns(dev);
    return g;
}

void fl_cl_gemm_free(fl_cl_gemm *g)
{
    if (!g) return;
    if (g->gemm) clReleaseKernel(g->gemm);
    if (g->pack_rows) clReleaseKernel(g->pack_rows);
    if (g->pack_cols) clReleaseKernel(g->pack_cols);
    if (g->pa) clReleaseMemObject(g->pa);
    if (g->pb) clReleaseMemObject(g->pb);
    if (g->last) clReleaseEvent(g->last);
    if (g->ctx) clReleaseContext(g->ctx);
    free(g->wl);
    free(g);
}

/* Make *buf hold at least n floats.  A buffer still used by enqueued
 * commands may be released: OpenCL frees it only after they finish. */
static int grow(fl_cl_gemm *g, cl_mem *buf, size_t *cap, size_t n)
{
    if (n == 0) n = 1;
    if (*buf && *cap >= n) return 0;
    cl_int e;
    cl_mem m = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &e);
    if (e != CL_SUCCESS)
        return fail(g->err, "clCreateBuffer(%zu floats of scratch) failed: %d", n, (int)e);
    if (*buf) clReleaseMemObject(*buf);
    *buf = m;
    *cap = n;
    return 0;
}

/* Set kernel argument i from a value of any type. */
#define ARG(k, i, v)                                                        \
    do {                                                                    \
        cl_int e_ = clSetKernelArg(k, i, sizeof(v), &(v));                  \
        if (e_ != CL_SUCCESS)                                               \
            return fail(g->err, "clSetKernelArg(%s, %d) failed: %d", #k, i, (int)e_); \
    } while (0)

static int launch(fl_cl_gemm *g, cl_command_queue q, cl_kernel k, const char *name,
                  size_t g0, size_t g1, cl_uint nw, const cl_event *w, cl_event *ev)
{
    size_t global[2] = {g0, g1}, local[2] = {1, 1};
    cl_int e = clEnqueueNDRangeKernel(q, k, 2, NULL, global, local, nw,
                                      nw ? w : NULL, ev);
    if (e != CL_SUCCESS)
        return fail(g->err, "clEnqueueNDRangeKernel(%s, %zu x %zu) failed: %d",
                    name, g0, g1, (int)e);
    return 0;
}

/* fl_pack_rows: dst[p][k][c] = src[off + k*ld + p*P + c], W columns. */
static int pack_rows(fl_cl_gemm *g, cl_command_queue q, int K, int W, int P,
                     cl_mem src, cl_ulong off, int ld, cl_mem dst,
                     cl_uint nw, const cl_event *w, cl_event *ev)
{
    cl_kernel k = g->pack_rows;
    int pp = PACK_PANELS, rp = PACK_ROWS;
    ARG(k, 0, K); ARG(k, 1, W); ARG(k, 2, P); ARG(k, 3, src);
    ARG(k, 4, off); ARG(k, 5, ld); ARG(k, 6, dst); ARG(k, 7, pp); ARG(k, 8, rp);
    size_t panels = ((size_t)W + P - 1) / P;
    return launch(g, q, k, "fl_pack_rows", (panels + PACK_PANELS - 1) / PACK_PANELS,
                  ((size_t)K + PACK_ROWS - 1) / PACK_ROWS, nw, w, ev);
}

/* fl_pack_cols16: dst[p][k][c] = src[off + (16p + c)*ld + k], N columns. */
static int pack_cols(fl_cl_gemm *g, cl_command_queue q, int K, int N,
                     cl_mem src, cl_ulong off, int ld, cl_mem dst,
                     cl_uint nw, const cl_event *w, cl_event *ev)
{
    cl_kernel k = g->pack_cols;
    int kp = PACK_KB;
    ARG(k, 0, K); ARG(k, 1, N); ARG(k, 2, src); ARG(k, 3, off);
    ARG(k, 4, ld); ARG(k, 5, dst); ARG(k, 6, kp);
    return launch(g, q, k, "fl_pack_cols16", ((size_t)N + g->nr - 1) / g->nr,
                  ((size_t)K + PACK_KB - 1) / PACK_KB, nw, w, ev);
}

/* What the GEMM does to each result it stores (fl_gemm's epilogue):
 * bias per column of C (NULL: none), then ReLU. */
typedef struct {
    cl_mem bias;
    int relu;
    int bias_on_rows; /* the kernel computes C^T: C's columns are its rows */
} epilogue;

static int gemm_args(fl_cl_gemm *g, int M, int N, int K, cl_mem a, cl_ulong a_off,
                     int a_ps, int a_rs, int a_cs, cl_mem c, cl_ulong c_off,
                     int c_rs, int c_cs, float beta, int panels_fast, const epilogue *ep)
{
    cl_kernel k = g->gemm;
    ARG(k, 0, M); ARG(k, 1, N); ARG(k, 2, K);
    ARG(k, 3, a); ARG(k, 4, a_off); ARG(k, 5, a_ps); ARG(k, 6, a_rs); ARG(k, 7, a_cs);
    ARG(k, 8, g->pb);
    ARG(k, 9, c); ARG(k, 10, c_off); ARG(k, 11, c_rs); ARG(k, 12, c_cs); ARG(k, 13, beta);
    ARG(k, 14, panels_fast);
    cl_mem bias = ep ? ep->bias : NULL;
    int on_rows = ep ? ep->bias_on_rows : 0, relu = ep ? ep->relu : 0;
    ARG(k, 15, bias); ARG(k, 16, on_rows); ARG(k, 17, relu);
    return 0;
}

/* How one product is laid out on the kernel: which operand is the "A side"
 * (6 rows per k step) and which the packed "B side" (16 columns), whether
 * C is written transposed, the tile order and the length of a K chunk. */
typedef struct {
    cl_mem xs, ys;          /* A side, B side */
    cl_ulong xo, yo;        /* their offsets, in floats */
    int xm, yn;             /* their widths */
    int x_along_k;          /* A side read in place, else packed by pack_rows */
    int y_along_k;          /* B side packed by pack_cols16, else pack_rows */
    int c_rs, c_cs;         /* C's strides */
    int swapped;            /* computes C^T = op(B)^T op(A)^T */
    int nr;                 /* columns of a tile */
    size_t mtiles, ntiles;
    int panels_fast;
    int kc;                 /* K per chunk */
} gemm_plan;

/* The kernel multiplies an "A side" (6 rows broadcast per k step, read in
 * place when its rows run along k, else packed) by a packed "B side" (16
 * columns per k step).  Instead of C = op(A) op(B) it can compute
 * C^T = op(B)^T op(A)^T, swapping the sides and writing C through
 * transposed strides.  Pick the cheaper layout.  Cost in units of one float
 * copied: a transposed B-side pack and a scattered (transposed) C store
 * count double, and ~50 flops (incl. the padding of partial 6 x 16 tiles)
 * cost as much as one copy.  This mainly turns dX = dY W^T into
 * dX^T = W dY^T (reads the big W in place and packs only the small dY), and
 * helps products with N < 16. */
static int swap_sides(int transpose_a, int transpose_b, int M, int N, int K, int nr)
{
    double m = M, n = N, k = K;
    double mp6 = ceil(m / MR) * MR, np6 = ceil(n / MR) * MR;     /* padded */
    double mp16 = ceil(m / nr) * nr, np16 = ceil(n / nr) * nr;
    double cost_keep = (transpose_a ? m * k : 0) + (transpose_b ? 2 * n * k : n * k)
                     + 2 * k * mp6 * np16 / 50;
    double cost_swap = (transpose_b ? 0 : n * k) + (transpose_a ? m * k : 2 * m * k)
                     + 2 * m * n + 2 * k * np6 * mp16 / 50;
    return cost_swap < cost_keep;
}

/* Long K is cut into chunks, each packed and multiplied in turn (C
 * accumulating from the second on), so that a packed chunk is still in
 * cache when the GEMM reads it instead of making a round trip through
 * memory (+30% on a conv layer's dW, K = 25088; +7% at K = 3136). */
static int chunk_length(const gemm_plan *p, int K)
{
    double packed_per_k = 4.0 * (p->ntiles * p->nr + (p->x_along_k ? 0 : p->mtiles * MR));
    double kcd = CHUNK_BYTES / packed_per_k, kmin = CHUNK_MIN_FLOP / (2.0 * p->xm * p->yn);
    if (kcd < kmin) kcd = kmin;
    if (kcd < 256) kcd = 256;
    if (1.5 * kcd >= K) return K;                 /* not worth it */
    int chunks = (int)ceil(K / kcd);
    return ((K + chunks - 1) / chunks + 15) / 16 * 16;
}

static gemm_plan plan_gemm(int transpose_a, int transpose_b, int M, int N, int K,
                           cl_mem A, cl_ulong a_off, cl_mem B, cl_ulong b_off, int nr)
{
    int swap = swap_sides(transpose_a, transpose_b, M, N, K, nr);
    gemm_plan p = {
        .xs = swap ? B : A, .ys = swap ? A : B,
        .xo = swap ? b_off : a_off, .yo = swap ? a_off : b_off,
        .xm = swap ? N : M, .yn = swap ? M : N,
        .x_along_k = swap ? transpose_b : !transpose_a,
        .y_along_k = swap ? !transpose_a : transpose_b,
        .c_rs = swap ? 1 : N, .c_cs = swap ? N : 1,
        .swapped = swap, .nr = nr,
    };
    p.mtiles = ((size_t)p.xm + MR - 1) / MR;
    p.ntiles = ((size_t)p.yn + nr - 1) / nr;
    /* Tile order: see fl_gemm in matmul.cl.  Stream whichever side costs
     * less to re-read; a side that fits in L2 (512 KiB/core here; count
     * half) is free to re-read. */
    double abytes = 4.0 * p.xm * K, bbytes = 4.0 * p.ntiles * nr * K, cache = 256 * 1024;
    double rows_fast = bbytes + (abytes > cache ? p.ntiles * abytes : abytes);
    double cols_fast = abytes + (bbytes > cache ? p.mtiles * bbytes : bbytes);
    p.panels_fast = cols_fast < rows_fast;
    p.kc = chunk_length(&p, K);
    return p;
}

/* The first packing waits for the caller's events, plus the previous call's
 * last GEMM, which may still be reading the scratch: into g->wl. */
static int gather_wait_list(fl_cl_gemm *g, cl_uint nwait, const cl_event *wait, cl_uint *nw)
{
    *nw = nwait + (g->last ? 1 : 0);
    if (*nw > g->wl_cap) {
        cl_event *w = realloc(g->wl, *nw * sizeof *w);
        if (!w) return fail(g->err, "fl_cl_gemm_enqueue: out of memory");
        g->wl = w;
        g->wl_cap = *nw;
    }
    if (nwait) memcpy(g->wl, wait, nwait * sizeof *wait);
    if (g->last) g->wl[nwait] = g->last;
    return 0;
}

/* Packs and multiplies K rows k0 .. k0+kn-1 of the product; the packing
 * waits for pw events pwl, the GEMM (with nothing packed) for the caller's
 * nwait events. *ev is the GEMM's event. ep: the last chunk's epilogue. */
static int enqueue_chunk(fl_cl_gemm *g, cl_command_queue q, const gemm_plan *p, int K, int k0, int kn,
                         cl_mem C, cl_ulong c_off, float beta, const epilogue *ep, cl_uint pw, const cl_event *pwl,
                         cl_uint nwait, const cl_event *wait, cl_event *ev)
{
    cl_event packed[2];
    cl_uint npacked = 0;
    int rc = 0;
    /* A side: in place (rows along k, leading dimension K), or packed. */
    cl_mem a_buf = p->xs;
    cl_ulong a_off = p->xo + (cl_ulong)k0;
    int a_ps = MR * K, a_rs = K, a_cs = 1;
    if (!p->x_along_k && kn > 0) {                /* stored K x xm: pack */
        rc = pack_rows(g, q, kn, p->xm, MR, p->xs, p->xo + (cl_ulong)k0 * p->xm, p->xm, g->pa,
                       pw, pwl, &packed[npacked]);
        if (!rc) npacked++;
        a_buf = g->pa;
        a_off = 0;
        a_ps = MR * kn;
        a_rs = 1;
        a_cs = MR;
    }
    if (!rc && kn > 0) {                          /* B side: always packed */
        rc = p->y_along_k
           ? pack_cols(g, q, kn, p->yn, p->ys, p->yo + (cl_ulong)k0, K, g->pb, pw, pwl, &packed[npacked])
           : pack_rows(g, q, kn, p->yn, p->nr, p->ys, p->yo + (cl_ulong)k0 * p->yn, p->yn, g->pb,
                       pw, pwl, &packed[npacked]);
        if (!rc) npacked++;
    }
    /* The GEMM: one work-item per 6 x 16 tile of the (possibly transposed)
     * result.  It waits for this chunk's packing, or, with K == 0 (nothing
     * packed), for the caller's events. */
    if (!rc)
        rc = gemm_args(g, p->xm, p->yn, kn, a_buf, a_off, a_ps, a_rs, a_cs, C,
                       c_off, p->c_rs, p->c_cs, k0 ? 1.0f : beta, p->panels_fast, ep);
    if (!rc)
        rc = launch(g, q, g->gemm, "fl_gemm", p->panels_fast ? p->ntiles : p->mtiles,
                    p->panels_fast ? p->mtiles : p->ntiles,
                    npacked ? npacked : nwait, npacked ? packed : wait, ev);
    for (cl_uint i = 0; i < npacked; i++) clReleaseEvent(packed[i]);
    return rc;
}

int fl_cl_gemm_enqueue(fl_cl_gemm *g, cl_command_queue q,
                       int transpose_a, int transpose_b, int M, int N, int K,
                       cl_mem A, size_t a_offset_floats,
                       cl_mem B, size_t b_offset_floats,
                       cl_mem C, size_t c_offset_floats,
                       float beta,
                       cl_uint nwait, const cl_event *wait, cl_event *done)
{
    return fl_cl_gemm_enqueue_epilogue(g, q, transpose_a, transpose_b, M, N, K, A, a_offset_floats,
                                       B, b_offset_floats, C, c_offset_floats, beta, NULL, 0,
                                       nwait, wait, done);
}

int fl_cl_gemm_enqueue_epilogue(fl_cl_gemm *g, cl_command_queue q,
                                int transpose_a, int transpose_b, int M, int N, int K,
                                cl_mem A, size_t a_offset_floats,
                                cl_mem B, size_t b_offset_floats,
                                cl_mem C, size_t c_offset_floats,
                                float beta, cl_mem bias, int relu,
                                cl_uint nwait, const cl_event *wait, cl_event *done)
{
    if (!g) return -1;
    g->err[0] = '\0';
    if (done) *done = NULL;
    if (!q || M < 0 || N < 0 || K < 0 || (nwait && !wait))
        return fail(g->err, "fl_cl_gemm_enqueue: bad arguments (M=%d N=%d K=%d)", M, N, K);
    if (M > INT_MAX / 16 || N > INT_MAX / 16 || K > INT_MAX / 16)  /* int math */
        return fail(g->err, "fl_cl_gemm_enqueue: too large (M=%d N=%d K=%d)", M, N, K);
    if (M == 0 || N == 0) {                   /* nothing to compute */
        cl_int e = clEnqueueMarkerWithWaitList(q, nwait, wait, done);
        return e == CL_SUCCESS ? 0 : fail(g->err, "clEnqueueMarkerWithWaitList failed: %d", (int)e);
    }
    if (!C || (K > 0 && (!A || !B)))
        return fail(g->err, "fl_cl_gemm_enqueue: NULL buffer");

    gemm_plan p = plan_gemm(transpose_a, transpose_b, M, N, K, A, a_offset_floats, B, b_offset_floats, g->nr);
    if (grow(g, &g->pb, &g->pb_cap, p.ntiles * g->nr * (size_t)p.kc)) return -1;
    if (!p.x_along_k && grow(g, &g->pa, &g->pa_cap, p.mtiles * MR * (size_t)p.kc)) return -1;
    cl_uint nw;
    if (gather_wait_list(g, nwait, wait, &nw)) return -1;

    cl_event prev = NULL;                         /* GEMM of the last chunk */
    epilogue ep = {bias, relu, p.swapped};
    for (int k0 = 0;; k0 += p.kc) {
        int kn = K - k0 < p.kc ? K - k0 : p.kc;
        cl_event ev;
        /* A chunk's packing waits for the last chunk's GEMM, the first one's for nw events. */
        if (enqueue_chunk(g, q, &p, K, k0, kn, C, c_offset_floats, beta,
                          k0 + kn >= K ? &ep : NULL, prev ? 1 : nw,
                          prev ? &prev : g->wl, nwait, wait, &ev)) {
            if (prev) clReleaseEvent(prev);       /* C is left half done */
            return -1;
        }
        if (prev) clReleaseEvent(prev);
        prev = ev;
        if (k0 + kn >= K) break;
    }
    if (g->last) clReleaseEvent(g->last);
    g->last = prev;
    if (done) {
        clRetainEvent(prev);
        *done = prev;
    }
    return 0;
}
