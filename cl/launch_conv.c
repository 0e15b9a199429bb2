/* launch_conv.c: launchers for MatMul, through cl/gemm.h, and for Conv2D and
 * its backprops as implicit GEMM: im2col lays each output pixel's window out
 * as a row of a [P, K] matrix (P output pixels, K = KH*KW*Cin taps), so
 *     Conv2D:           y[P, Cout]  = col[P, K]   x filter[K, Cout]
 *     backprop filter:  df[K, Cout] = col[P, K]^T x dy[P, Cout]
 *     backprop input:   dcol[P, K]  = dy[P, Cout] x filter[K, Cout]^T, then col2im
 * and MaxPool with its gradient (conv.cl). */
#include <limits.h>

#include "launch.h"

/* The same struct as conv.cl's geom: thirteen ints, so the layouts agree. */
typedef struct {
    cl_int batch, h, w, c;
    cl_int kh, kw;
    cl_int oh, ow, oc;
    cl_int sh, sw;
    cl_int pad_top, pad_left;
} geom;

static geom make_geom(const fl_node *n, fl_shape image, int kh, int kw, int oc)
{
    const fl_attrs *a = &n->attrs;
    geom g = {.batch = image.dims[0], .h = image.dims[1], .w = image.dims[2], .c = image.dims[3],
              .kh = kh, .kw = kw, .oc = oc, .sh = a->stride_h, .sw = a->stride_w};
    g.oh = fl_conv_output_size(g.h, kh, g.sh, a->padding);
    g.ow = fl_conv_output_size(g.w, kw, g.sw, a->padding);
    g.pad_top = fl_conv_pad_before(g.h, kh, g.sh, a->padding);
    g.pad_left = fl_conv_pad_before(g.w, kw, g.sw, a->padding);
    return g;
}

static geom conv_geom(const fl_node *n, fl_shape image, fl_shape filter)
{
    return make_geom(n, image, filter.dims[0], filter.dims[1], filter.dims[3]);
}

static int gemm(fl_cl_device *d, bool ta, bool tb, int m, int n, int k, const void *a,
                const void *b, void *c)
{
    if (fl_cl_gemm_enqueue(d->gemm, d->queue, ta, tb, m, n, k, (cl_mem)a, 0, (cl_mem)b, 0, (cl_mem)c,
                           0, 0.0f, 0, NULL, NULL) != 0) {
        fl_set_error("GEMM (cl/gemm.c): %s", fl_cl_gemm_error(d->gemm));
        return -1;
    }
    return 0;
}

/* C[M,N] = op(A) op(B). */
FL_CL_OP(fl_cl_matmul)
{
    (void)ctx;
    bool ta = n->attrs.transpose_a, tb = n->attrs.transpose_b;
    int m = out->shape.dims[0], cols = out->shape.dims[1];
    int k = ta ? in[0]->shape.dims[0] : in[0]->shape.dims[1];
    if (fl_cl_count(in[0]) < 0 || fl_cl_count(in[1]) < 0 || fl_cl_count(out) < 0)
        return -1;
    return gemm(d, ta, tb, m, cols, k, in[0]->data, in[1]->data, out->data);
}

/* Output pixels and taps: the col matrix's rows and columns. */
static int col_shape(const geom *g, int *pixels, int *taps)
{
    int64_t p = (int64_t)g->batch * g->oh * g->ow, k = (int64_t)g->kh * g->kw * g->c;
    if (p * k > INT_MAX) {
        fl_set_error("a convolution's im2col matrix of %lld x %lld is too large; use a smaller "
                     "batch", (long long)p, (long long)k);
        return -1;
    }
    *pixels = (int)p;
    *taps = (int)k;
    return 0;
}

/* col = im2col(x), in the device's scratch buffer. */
static cl_mem im2col(fl_cl_device *d, const geom *g, const void *x, int pixels, int taps)
{
    cl_mem col = fl_cl_scratch(d, (size_t)pixels * (size_t)taps * sizeof(float));
    if (!col)
        return NULL;
    fl_cl_call c = fl_cl_begin(d, K_IM2COL);
    fl_cl_mem(&c, x);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_mem(&c, col);
    return fl_cl_run_2d(&c, (size_t)taps, (size_t)pixels) == 0 ? col : NULL;
}

FL_CL_OP(fl_cl_conv2d)
{
    (void)ctx;
    geom g = conv_geom(n, in[0]->shape, in[1]->shape);
    int pixels, taps;
    if (col_shape(&g, &pixels, &taps) != 0)
        return -1;
    if (pixels == 0 || g.oc == 0)
        return 0;
    cl_mem col = im2col(d, &g, in[0]->data, pixels, taps);
    return col ? gemm(d, false, false, pixels, g.oc, taps, col, in[1]->data, out->data) : -1;
}

/* Conv2DBackpropInput(dy, filter, input) */
FL_CL_OP(fl_cl_conv2d_backprop_input)
{
    (void)ctx;
    geom g = conv_geom(n, in[2]->shape, in[1]->shape);
    int pixels, taps, count = fl_cl_count(out);
    if (count < 0 || col_shape(&g, &pixels, &taps) != 0)
        return -1;
    if (pixels == 0)
        return fl_cl_fill_bytes(d, out->data, 0, fl_tensor_bytes(out));
    cl_mem dcol = fl_cl_scratch(d, (size_t)pixels * (size_t)taps * sizeof(float));
    if (!dcol || gemm(d, false, true, pixels, taps, g.oc, in[0]->data, in[1]->data, dcol) != 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_COL2IM);
    fl_cl_mem(&c, dcol);
    fl_cl_value(&c, sizeof g, &g);
    fl_cl_mem(&c, out->data);
    return fl_cl_run(&c, (size_t)count);
}

/* Conv2DBackpropFilter(dy, input, filter) */
FL_CL_OP(fl_cl_conv2d_backprop_filter)
{
    (void)ctx;
    geom g = conv_geom(n, in[1]->shape, in[2]->shape);
    int pixels, taps;
    if (col_shape(&g, &pixels, &taps) != 0)
        return -1;
    if (pixels == 0)
        return fl_cl_fill_bytes(d, out->data, 0, fl_tensor_bytes(out));
    cl_mem col = im2col(d, &g, in[1]->data, pixels, taps);
    return col ? gemm(d, true, false, taps, g.oc, pixels, col, in[0]->data, out->data) : -1;
}

static geom pool_geom(const fl_node *n, fl_shape image)
{
    return make_geom(n, image, n->attrs.ksize_h, n->attrs.ksize_w, image.dims[3]);
}

FL_CL_OP(fl_cl_max_pool)
{
    (void)ctx;
    geom g = pool_geom(n, in[0]->shape);
    int count = fl_cl_count(out);
    if (count < 0 || fl_cl_count(in[0]) < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_MAX_POOL);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_value(&c, sizeof g, &g);
    fl_cl_mem(&c, out->data);
    return fl_cl_run(&c, (size_t)count);
}

/* MaxPoolGrad(dy, x, y): y only gave the shape. */
FL_CL_OP(fl_cl_max_pool_grad)
{
    (void)ctx;
    geom g = pool_geom(n, in[1]->shape);
    int count = fl_cl_count(out);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_MAX_POOL_GRAD);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_value(&c, sizeof g, &g);
    fl_cl_mem(&c, out->data);
    return fl_cl_run(&c, (size_t)count);
}
