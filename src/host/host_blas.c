/* host_blas.c: the host device's fast paths through CBLAS (OpenBLAS).
 * MatMul is one sgemm; a convolution becomes GEMMs over "im2col" patch
 * matrices, a few images at a time. The plain loops in host_math.c and
 * host_conv.c stay as the reference these are tested against. */
#ifdef FL_HAVE_CBLAS
#include <cblas.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "conv_geometry.h"
#include "host_kernels.h"

FL_HOST_KERNEL(fl_host_matmul_blas)
{
    (void)ctx;
    fl_matmul_dims d = fl_matmul_dims_of(n, in[0]->shape, out->shape);
    if (d.m == 0 || d.n == 0)
        return 0;
    if (d.k == 0) {
        memset(out->data, 0, fl_tensor_bytes(out));
        return 0;
    }
    cblas_sgemm(CblasRowMajor, d.transpose_a ? CblasTrans : CblasNoTrans,
                d.transpose_b ? CblasTrans : CblasNoTrans, d.m, d.n, d.k, 1.0f, in[0]->data, d.lda,
                in[1]->data, d.ldb, 0.0f, out->data, d.n);
    return 0;
}

/* One growing scratch buffer per thread: a warm step allocates nothing.
 * It is freed when its thread ends (a task server's run threads come and
 * go), through a pthread key's destructor. */
typedef struct {
    float *buffer;
    int64_t capacity;
} thread_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_key_once = PTHREAD_ONCE_INIT;

static void free_scratch(void *p)
{
    thread_scratch *s = p;
    free(s->buffer);
    free(s);
}

static void make_scratch_key(void) { pthread_key_create(&scratch_key, free_scratch); }

/* This thread's scratch record, made on its first use; NULL if malloc fails. */
static thread_scratch *this_thread_scratch(void)
{
    pthread_once(&scratch_key_once, make_scratch_key);
    thread_scratch *s = pthread_getspecific(scratch_key);
    if (s)
        return s;
    s = calloc(1, sizeof *s);
    if (s && pthread_setspecific(scratch_key, s) != 0) {
        free(s);
        s = NULL;
    }
    return s;
}

/* NULL with RESOURCE_EXHAUSTED past the tensor limit or when malloc fails. */
static float *scratch(int64_t floats)
{
    thread_scratch *s = this_thread_scratch();
    if (s && floats <= s->capacity)
        return s->buffer;
    size_t bytes = floats > (int64_t)(SIZE_MAX / sizeof *s->buffer) ? SIZE_MAX : (size_t)floats * sizeof *s->buffer;
    if (fl_check_tensor_bytes(bytes) != 0) {
        fl_prefix_error("the convolution's patch matrix ");
        return NULL;
    }
    float *grown = s ? realloc(s->buffer, bytes) : NULL;
    if (!grown) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "out of memory for the convolution's patch matrix (%zu bytes)", bytes);
        return NULL;
    }
    s->buffer = grown;
    s->capacity = floats;
    return s->buffer;
}

/* a * b for sizes >= 0, INT64_MAX when it would overflow. */
static int64_t times(int64_t a, int64_t b)
{
    return a > 0 && b > INT64_MAX / a ? INT64_MAX : a * b;
}

/* Images per GEMM: enough rows to keep sgemm busy, few enough that the
 * patch matrix stays near 32 MiB. */
static int images_per_chunk(const fl_conv_geometry *g)
{
    int64_t per_image = times(times((int64_t)g->oh * g->ow, (int64_t)g->kh * g->kw), g->c);
    int64_t chunk = per_image > 0 ? (8 << 20) / per_image : g->batch;
    if (chunk < 1)
        chunk = 1;
    return chunk < g->batch ? (int)chunk : g->batch;
}

/* The GEMMs' sizes: k = KH*KW*C columns, pixels = OH*OW rows an image, chunk
 * images at a time, and the patch matrix. 1: nothing to compute (an empty
 * side); -1 with RESOURCE_EXHAUSTED when a size passes sgemm's int or the
 * matrix the tensor limit. */
typedef struct {
    int k, pixels, chunk;
    float *cols;
} patches;

static int plan_patches(const fl_conv_geometry *g, patches *p)
{
    int64_t k = times((int64_t)g->kh * g->kw, g->c), pixels = (int64_t)g->oh * g->ow;
    if (k == 0 || pixels == 0 || g->oc == 0 || g->batch == 0)
        return 1;
    p->chunk = images_per_chunk(g);
    if (k > INT32_MAX || times(pixels, p->chunk) > INT32_MAX) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "a patch matrix of %lld x %lld is too large for one sgemm",
                          (long long)times(pixels, p->chunk), (long long)k);
        return -1;
    }
    p->k = (int)k;
    p->pixels = (int)pixels;
    p->cols = scratch(times(times(p->chunk, pixels), k));
    return p->cols ? 0 : -1;
}

/* cols[(b*OH + oy)*OW + ox][(ky*KW + kx)*C + c] = x[b0 + b, iy, ix, c], or 0 in the padding. */
static void im2col(const fl_conv_geometry *g, const float *x, int b0, int nb, float *cols)
{
    int64_t k = (int64_t)g->kh * g->kw * g->c;
    for (int b = 0; b < nb; b++)
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++) {
                float *row = cols + (((int64_t)b * g->oh + oy) * g->ow + ox) * k;
                for (int ky = 0; ky < g->kh; ky++) {
                    int iy = oy * g->sh + ky - g->pad_top;
                    for (int kx = 0; kx < g->kw; kx++, row += g->c) {
                        int ix = ox * g->sw + kx - g->pad_left;
                        if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
                            memset(row, 0, (size_t)g->c * sizeof *row);
                        else
                            memcpy(row, x + (((int64_t)(b0 + b) * g->h + iy) * g->w + ix) * g->c,
                                   (size_t)g->c * sizeof *row);
                    }
                }
            }
}

/* The reverse of im2col: every patch entry is added back to its pixel. */
static void col2im_add(const fl_conv_geometry *g, const float *cols, int b0, int nb, float *dx)
{
    int64_t k = (int64_t)g->kh * g->kw * g->c;
    for (int b = 0; b < nb; b++)
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++) {
                const float *row = cols + (((int64_t)b * g->oh + oy) * g->ow + ox) * k;
                for (int ky = 0; ky < g->kh; ky++) {
                    int iy = oy * g->sh + ky - g->pad_top;
                    for (int kx = 0; kx < g->kw; kx++, row += g->c) {
                        int ix = ox * g->sw + kx - g->pad_left;
                        if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
                            continue;
                        float *px = dx + (((int64_t)(b0 + b) * g->h + iy) * g->w + ix) * g->c;
                        for (int c = 0; c < g->c; c++)
                            px[c] += row[c];
                    }
                }
            }
}

/* out[b] = cols(x[b]) [OH*OW, K] x filter [K, Cout] */
FL_HOST_KERNEL(fl_host_conv2d_blas)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[0]->shape, in[1]->shape);
    patches p;
    int planned = plan_patches(&g, &p);
    if (planned != 0) {
        memset(out->data, 0, fl_tensor_bytes(out)); /* an empty window or image sums to 0 */
        return planned < 0 ? -1 : 0;
    }
    int k = p.k, pixels = p.pixels, chunk = p.chunk;
    float *cols = p.cols;
    for (int b0 = 0; b0 < g.batch; b0 += chunk) {
        int nb = g.batch - b0 < chunk ? g.batch - b0 : chunk;
        im2col(&g, in[0]->data, b0, nb, cols);
        float *y = (float *)out->data + (int64_t)b0 * pixels * g.oc;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nb * pixels, g.oc, k, 1.0f, cols, k,
                    in[1]->data, g.oc, 0.0f, y, g.oc);
    }
    return 0;
}

/* Inputs (dy, filter, input): dcols = dy [OH*OW, Cout] x filter^T, then col2im. */
FL_HOST_KERNEL(fl_host_conv2d_backprop_input_blas)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[2]->shape, in[1]->shape);
    patches p;
    memset(out->data, 0, fl_tensor_bytes(out));
    int planned = plan_patches(&g, &p);
    if (planned != 0)
        return planned < 0 ? -1 : 0;
    int k = p.k, pixels = p.pixels, chunk = p.chunk;
    float *cols = p.cols;
    for (int b0 = 0; b0 < g.batch; b0 += chunk) {
        int nb = g.batch - b0 < chunk ? g.batch - b0 : chunk;
        const float *dy = (const float *)in[0]->data + (int64_t)b0 * pixels * g.oc;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb * pixels, k, g.oc, 1.0f, dy, g.oc,
                    in[1]->data, g.oc, 0.0f, cols, k);
        col2im_add(&g, cols, b0, nb, out->data);
    }
    return 0;
}

/* Inputs (dy, input, filter): dfilter = sum over images of cols^T x dy. */
FL_HOST_KERNEL(fl_host_conv2d_backprop_filter_blas)
{
    (void)ctx;
    fl_conv_geometry g = fl_conv_geometry_of(n, in[1]->shape, in[2]->shape);
    patches p;
    memset(out->data, 0, fl_tensor_bytes(out));
    int planned = plan_patches(&g, &p);
    if (planned != 0)
        return planned < 0 ? -1 : 0;
    int k = p.k, pixels = p.pixels, chunk = p.chunk;
    float *cols = p.cols;
    for (int b0 = 0; b0 < g.batch; b0 += chunk) {
        int nb = g.batch - b0 < chunk ? g.batch - b0 : chunk;
        im2col(&g, in[1]->data, b0, nb, cols);
        const float *dy = (const float *)in[0]->data + (int64_t)b0 * pixels * g.oc;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, g.oc, nb * pixels, 1.0f, cols, k, dy,
                    g.oc, 1.0f, out->data, g.oc);
    }
    return 0;
}
#else
/* Built without CBLAS: the host uses the reference loops only. */
typedef int fl_host_blas_unused;
#endif
