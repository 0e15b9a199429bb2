/* test_opencl_epilogues.c: the OpenCL backend's fused entry points that no
 * single op reaches on its own (the fusion pass calls them): the GEMM with
 * its bias + ReLU epilogue, through flowlab's GEMM and through CLBlast, and
 * MaxPoolGrad with ReluGrad folded in. Each against the same sums done here.
 * Skipped where there is no OpenCL device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "../cl/launch.h"

/* Opens the first OpenCL device; tile_columns "16" or "32" forces the
 * GEMM's tile width (NULL: the device's own choice). */
/* The first OpenCL device's id, or NULL when there is none. */
static cl_device_id first_device(void)
{
    cl_platform_id platform;
    cl_device_id id;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0)
        return NULL;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &id, &n) != CL_SUCCESS || n == 0)
        return NULL;
    return id;
}

static fl_cl_device *open_device(const char *tile_columns)
{
    if (tile_columns)
        setenv("FLOWLAB_GEMM_COLUMNS", tile_columns, 1);
    else
        unsetenv("FLOWLAB_GEMM_COLUMNS");
    cl_device_id id = first_device();
    return id ? fl_cl_device_open(id) : NULL;
}

/* Multiples of 1/8 in [-1, 1]: products and sums of up to 2^18 of them
 * are exact in float, so a long K's rounding cannot hide a wrong result
 * (and windows get ties, which the first-maximum rule must settle). */
static float *random_floats(size_t count, unsigned *seed)
{
    float *v = malloc((count + 1) * sizeof *v); /* + 1: never a zero-byte buffer */
    v[count] = 0.0f;
    for (size_t i = 0; i < count; i++)
        v[i] = (float)(rand_r(seed) % 17 - 8) / 8.0f;
    return v;
}

/* A buffer holding v's count floats (v holds count + 1). */
static cl_mem upload(fl_cl_device *d, const float *v, size_t count)
{
    cl_int e;
    return clCreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, (count + 1) * sizeof *v,
                          (void *)v, &e);
}

static float *download(fl_cl_device *d, cl_mem m, size_t count)
{
    float *v = calloc(count + 1, sizeof *v);
    if (fl_cl_device_wait(d) != 0 ||
        clEnqueueReadBuffer(d->queue, m, CL_TRUE, 0, count * sizeof *v, v, 0, NULL, NULL) != CL_SUCCESS)
        diag("reading back failed: %s", fl_last_error());
    return v;
}

static double worst_difference(const float *got, const float *want, size_t count)
{
    double worst = 0;
    for (size_t i = 0; i < count; i++) {
        double diff = fabs((double)got[i] - want[i]) / fmax(1.0, fabs(want[i]));
        worst = isnan(diff) ? INFINITY : fmax(worst, diff);
    }
    return worst;
}

/* ---- GEMM + bias + ReLU ---- */

typedef struct {
    bool ta, tb;
    int m, n, k;
} gemm_case;

/* C = op(A) op(B) + bias, then ReLU, in doubles. */
static void reference_gemm(const gemm_case *c, const float *a, const float *b, const float *bias, bool relu,
                           float *out)
{
    for (int i = 0; i < c->m; i++)
        for (int j = 0; j < c->n; j++) {
            double sum = bias ? bias[j] : 0.0;
            for (int p = 0; p < c->k; p++)
                sum += (double)(c->ta ? a[p * c->m + i] : a[i * c->k + p]) *
                       (c->tb ? b[j * c->k + p] : b[p * c->n + j]);
            out[i * c->n + j] = relu && !(sum > 0) ? 0.0f : (float)sum;
        }
}

static void check_gemm(fl_cl_device *d, const gemm_case *c, bool with_bias, bool relu, const char *route)
{
    unsigned seed = (unsigned)(c->m * 131 + c->n * 7 + c->k);
    size_t na = (size_t)c->m * c->k, nb = (size_t)c->k * c->n, nc = (size_t)c->m * c->n;
    float *a = random_floats(na, &seed), *b = random_floats(nb, &seed), *bias = random_floats(c->n, &seed);
    float *want = calloc(nc + 1, sizeof *want);
    reference_gemm(c, a, b, with_bias ? bias : NULL, relu, want);
    cl_mem da = upload(d, a, na), db = upload(d, b, nb), dbias = upload(d, bias, c->n), dc = upload(d, want, nc);
    fl_cl_epilogue epilogue = {with_bias ? dbias : NULL, relu};
    int rc = fl_cl_gemm_epilogue(d, c->ta, c->tb, c->m, c->n, c->k, da, db, dc, &epilogue);
    float *got = download(d, dc, nc);
    double worst = worst_difference(got, want, nc);
    ok(rc == 0 && worst <= 1e-5, "%s GEMM %dx%dx%d%s%s%s%s: worst relative difference %.2g (tolerance 1e-5)", route,
       c->m, c->n, c->k, c->ta ? " A^T" : "", c->tb ? " B^T" : "", with_bias ? " + bias" : "", relu ? ", ReLU" : "",
       worst);
    clReleaseMemObject(da);
    clReleaseMemObject(db);
    clReleaseMemObject(dbias);
    clReleaseMemObject(dc);
    free(a), free(b), free(bias), free(want), free(got);
}

static void check_gemms(fl_cl_device *d, const char *route)
{
    /* odd sizes, M below a tile, each transpose; the last two are laid out
     * as C^T = B^T A^T (the bias then runs along the kernel's rows) */
    static const gemm_case cases[] = {
        {false, false, 7, 19, 13}, {true, false, 7, 19, 13},   {false, false, 3, 40, 5},
        {false, false, 96, 64, 33}, {true, false, 96, 64, 32}, {false, false, 1, 17, 3},
        {false, true, 7, 19, 13},  {true, true, 48, 300, 64},  {false, true, 48, 300, 64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int mode = 0; mode < 3; mode++) /* bias, bias + ReLU, ReLU alone */
            check_gemm(d, &cases[i], mode < 2, mode > 0, route);
    /* K long enough that cl/gemm.c multiplies it in two chunks: the
     * epilogue must come once, after the last */
    static const gemm_case long_k = {false, false, 64, 48, 50000};
    check_gemm(d, &long_k, true, true, route);
}

/* ---- MaxPoolGrad + ReluGrad ---- */

typedef struct {
    const char *what;
    fl_conv_geometry g;
} pool_case;

static void check_pool(fl_cl_device *d, const pool_case *pc)
{
    const fl_conv_geometry *g = &pc->g;
    unsigned seed = (unsigned)(g->h * 31 + g->c);
    size_t nx = (size_t)g->batch * g->h * g->w * g->c, ny = (size_t)g->batch * g->oh * g->ow * g->c;
    float *x = random_floats(nx, &seed), *dy = random_floats(ny, &seed);
    for (size_t i = 0; i < nx; i++) /* a Relu's output: many zeros, whole windows of them */
        x[i] = x[i] > 0.3f ? x[i] : 0.0f;
    cl_mem dx_buf = upload(d, x, nx), dy_buf = upload(d, dy, ny), plain = upload(d, x, nx), masked = upload(d, x, nx);
    int rc = fl_cl_max_pool_grad_masked(d, g, dx_buf, dy_buf, false, plain);
    rc |= fl_cl_max_pool_grad_masked(d, g, dx_buf, dy_buf, true, masked);
    float *want = download(d, plain, nx), *got = download(d, masked, nx);
    size_t zeroed = 0;
    for (size_t i = 0; i < nx; i++) { /* ReluGrad(MaxPoolGrad(dy), x) */
        zeroed += want[i] != 0.0f && !(x[i] > 0.0f);
        want[i] = x[i] > 0.0f ? want[i] : 0.0f;
    }
    double worst = worst_difference(got, want, nx);
    ok(rc == 0 && worst == 0 && zeroed > 0, "MaxPoolGrad with the ReLU mask, %s: equals ReluGrad(MaxPoolGrad) "
       "(worst difference %g; the mask zeroed %zu values)", pc->what, worst, zeroed);
    clReleaseMemObject(dx_buf);
    clReleaseMemObject(dy_buf);
    clReleaseMemObject(plain);
    clReleaseMemObject(masked);
    free(x), free(dy), free(want), free(got);
}

static void check_pools(fl_cl_device *d)
{
    /* batch, h, w, c, kh, kw, oh, ow, oc, sh, sw, pad_top, pad_left */
    static const pool_case cases[] = {
        {"2x2 stride 2, [4,28,28,32] (chapter 1's)", {4, 28, 28, 32, 2, 2, 14, 14, 32, 2, 2, 0, 0}},
        {"2x2 SAME, odd size, C=16", {2, 7, 9, 16, 2, 2, 4, 5, 16, 2, 2, 0, 0}},
        {"2x2 stride 3 (gaps), C=5, batch 1", {1, 8, 7, 5, 2, 2, 3, 2, 5, 3, 3, 0, 0}},
        {"3x3 SAME stride 1 (overlapping), C=8", {2, 6, 5, 8, 3, 3, 6, 5, 8, 1, 1, 1, 1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_pool(d, &cases[i]);
}

int main(void)
{
    setenv("FLOWLAB_BACKEND", "opencl", 1);
    if (!first_device())
        skip_all("no OpenCL device on this machine");
    /* One that exists but does not open (a kernel that does not compile,
     * say) is a failure, not a reason to skip. */
    fl_cl_device *d = open_device(NULL);
    if (!ok(d != NULL, "the OpenCL device opens (%s)", d ? "its kernels built" : fl_last_error()))
        return done_testing();
    unsetenv("FLOWLAB_CL_GEMM");
    check_gemms(d, fl_cl_use_clblast(d) ? "CLBlast" : "flowlab's");
    setenv("FLOWLAB_CL_GEMM", "clblast", 1); /* the GPU route: CLBlast, then one bias + ReLU pass */
    check_gemms(d, "CLBlast");
    unsetenv("FLOWLAB_CL_GEMM");
    check_pools(d);
    /* the other tile width than this device's own (cl/gemm.c) */
    const char *other = fl_cl_gemm_tile_columns(d->id) == 32 ? "16" : "32";
    fl_cl_device *other_width = open_device(other);
    ok(other_width != NULL, "the device opens again with %s-column GEMM tiles", other);
    if (other_width) {
        check_gemms(other_width, strcmp(other, "16") == 0 ? "flowlab's 6x16-tile" : "flowlab's 6x32-tile");
        fl_cl_device_close(other_width);
    }
    fl_cl_device_close(d);
    return done_testing();
}
