/* gemm.c: host side of the OpenCL GEMM (kernels in cl/matmul.cl).
 * Decides how to lay the problem onto the one GEMM kernel (which operand to
 * pack, whether to compute C^T instead of C), packs, and launches.
 * Each call enqueues at most three kernels and allocates nothing once warm.
 */
#include "gemm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Must match matmul.cl. */
enum { MR = 6, NR = 16, PACK_ROWS = 16, PACK_PANELS = 16, PACK_KB = 64 };

struct fl_cl_gemm {
    cl_context ctx;
    cl_kernel gemm, pack_rows, pack_cols;
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

fl_cl_gemm *fl_cl_gemm_new(cl_context ctx, cl_device_id dev, cl_program program)
{
    (void)dev;  /* one program per device already; kept for future tuning */
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
    ARG(k, 0, K); ARG(k, 1, W); ARG(k, 2, P); ARG(k, 3, src);
    ARG(k, 4, off); ARG(k, 5, ld); ARG(k, 6, dst);
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
    ARG(k, 0, K); ARG(k, 1, N); ARG(k, 2, src); ARG(k, 3, off);
    ARG(k, 4, ld); ARG(k, 5, dst);
    return launch(g, q, k, "fl_pack_cols16", ((size_t)N + NR - 1) / NR,
                  ((size_t)K + PACK_KB - 1) / PACK_KB, nw, w, ev);
}

static int gemm_args(fl_cl_gemm *g, int M, int N, int K, cl_mem a, cl_ulong a_off,
                     int a_ps, int a_rs, int a_cs, cl_mem c, cl_ulong c_off,
                     int c_rs, int c_cs, float beta)
{
    cl_kernel k = g->gemm;
    ARG(k, 0, M); ARG(k, 1, N); ARG(k, 2, K);
    ARG(k, 3, a); ARG(k, 4, a_off); ARG(k, 5, a_ps); ARG(k, 6, a_rs); ARG(k, 7, a_cs);
    ARG(k, 8, g->pb);
    ARG(k, 9, c); ARG(k, 10, c_off); ARG(k, 11, c_rs); ARG(k, 12, c_cs); ARG(k, 13, beta);
    return 0;
}

int fl_cl_gemm_enqueue(fl_cl_gemm *g, cl_command_queue q,
                       int transpose_a, int transpose_b, int M, int N, int K,
                       cl_mem A, size_t a_offset_floats,
                       cl_mem B, size_t b_offset_floats,
                       cl_mem C, size_t c_offset_floats,
                       float beta,
                       cl_uint nwait, const cl_event *wait, cl_event *done)
{
    if (!g) return -1;
    g->err[0] = '\0';
    if (done) *done = NULL;
    if (!q || M < 0 || N < 0 || K < 0 || (nwait && !wait))
        return fail(g->err, "fl_cl_gemm_enqueue: bad arguments (M=%d N=%d K=%d)", M, N, K);
    if (M == 0 || N == 0) {                   /* nothing to compute */
        cl_int e = clEnqueueMarkerWithWaitList(q, nwait, wait, done);
        return e == CL_SUCCESS ? 0 : fail(g->err, "clEnqueueMarkerWithWaitList failed: %d", (int)e);
    }
    if (!C || (K > 0 && (!A || !B)))
        return fail(g->err, "fl_cl_gemm_enqueue: NULL buffer");

    /* The kernel multiplies an "A side" (6 rows broadcast per k step) by a
     * packed "B side" (16 columns per k step).  Packing a transposed B is
     * the dearest copy, so when op(B) is transposed and that helps, compute
     * C^T = op(B)^T op(A)^T instead: B becomes the A side, read in place,
     * and C is written through transposed strides.  Each side is then
     * described as (buffer, offset, rows x K, rows_along_k): rows_along_k
     * means element (r, k) is at r*K + k, else at k*rows + r. */
    int swap = transpose_b && (transpose_a || M < N);
    cl_mem xs = swap ? B : A, ys = swap ? A : B;            /* A side, B side */
    cl_ulong xo = swap ? b_offset_floats : a_offset_floats;
    cl_ulong yo = swap ? a_offset_floats : b_offset_floats;
    int xm = swap ? N : M, yn = swap ? M : N;               /* their widths */
    int x_along_k = swap ? transpose_b : !transpose_a;      /* else pack it */
    int y_along_k = swap ? !transpose_a : transpose_b;      /* pack_cols16 */
    int c_rs = swap ? 1 : N, c_cs = swap ? N : 1;

    /* Wait list for the packing kernels: the caller's events, plus the
     * previous GEMM, which may still be reading the scratch we overwrite. */
    cl_uint nw = nwait + (g->last ? 1 : 0);
    if (nw > g->wl_cap) {
        cl_event *w = realloc(g->wl, nw * sizeof *w);
        if (!w) return fail(g->err, "fl_cl_gemm_enqueue: out of memory");
        g->wl = w;
        g->wl_cap = nw;
    }
    if (nwait) memcpy(g->wl, wait, nwait * sizeof *wait);
    if (g->last) g->wl[nwait] = g->last;

    size_t mtiles = ((size_t)xm + MR - 1) / MR, ntiles = ((size_t)yn + NR - 1) / NR;
    cl_event packed[2];
    cl_uint npacked = 0;
    cl_mem a_buf = xs;
    cl_ulong a_off = xo;
    int a_ps = MR * K, a_rs = K, a_cs = 1;       /* A side read in place */
    int rc = 0;

    if (grow(g, &g->pb, &g->pb_cap, ntiles * NR * (size_t)K)) return -1;
    if (!x_along_k && K > 0) {                   /* A side stored K x xm: pack */
        if (grow(g, &g->pa, &g->pa_cap, mtiles * MR * (size_t)K)) return -1;
        rc = pack_rows(g, q, K, xm, MR, xs, xo, xm, g->pa, nw, g->wl, &packed[npacked]);
        if (rc) return -1;
        npacked++;
        a_buf = g->pa;
        a_off = 0;
        a_rs = 1;
        a_cs = MR;
    }
    if (K > 0) {
        rc = y_along_k
           ? pack_cols(g, q, K, yn, ys, yo, K, g->pb, nw, g->wl, &packed[npacked])
           : pack_rows(g, q, K, yn, NR, ys, yo, yn, g->pb, nw, g->wl, &packed[npacked]);
        if (!rc) npacked++;
    }

    if (!rc) {
        /* The GEMM: one work-item per 6 x 16 tile of the (possibly
         * transposed) result.  It waits for the packing, or, when K == 0
         * and nothing was packed, for the caller's events. */
        cl_event ev;
        rc = gemm_args(g, xm, yn, K, a_buf, a_off, a_ps, a_rs, a_cs, C,
                       c_offset_floats, c_rs, c_cs, beta);
        if (!rc)
            rc = launch(g, q, g->gemm, "fl_gemm", mtiles, ntiles,
                        npacked ? npacked : nwait, npacked ? packed : wait, &ev);
        if (!rc) {
            if (g->last) clReleaseEvent(g->last);
            g->last = ev;
            if (done) {
                clRetainEvent(ev);
                *done = ev;
            }
        }
    }
    for (cl_uint i = 0; i < npacked; i++) clReleaseEvent(packed[i]);
    return rc;
}
