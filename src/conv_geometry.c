/* conv_geometry.c: TensorFlow's SAME/VALID window arithmetic, once for every
 * backend and for the ops' shape rules (ops_conv.c); see conv_geometry.h
 * for the dimension legend. */
#include "conv_geometry.h"

int fl_conv_output_size(int in, int k, int stride, fl_padding padding)
{
    if (in < 0 || stride < 1)
        return -1;
    if (padding == FL_SAME) /* ceil(in / stride), whatever the window */
        return (int)(((int64_t)in + stride - 1) / stride); /* 64 bits: in may be near INT_MAX */
    if (k < 0)
        return -1;
    if (k > in) /* shape inference rejects this; never compute a negative size */
        return 0;
    return (in - k) / stride + 1;
}

/* SAME pads just enough for the last window; an odd total puts the extra
 * row or column after the image, as TensorFlow does. */
int fl_conv_pad_before(int in, int k, int stride, fl_padding padding)
{
    if (padding != FL_SAME || in < 0 || k < 0 || stride < 1)
        return 0;
    int out = fl_conv_output_size(in, k, stride, padding);
    int64_t total = (int64_t)(out - 1) * stride + k - in;
    return total > 0 ? (int)(total / 2) : 0;
}

static fl_conv_geometry window(const fl_node *n, fl_shape image, int kh, int kw, int oc)
{
    const fl_attrs *a = &n->attrs;
    fl_conv_geometry g = {.batch = image.dims[0], .h = image.dims[1], .w = image.dims[2],
                          .c = image.dims[3], .kh = kh, .kw = kw, .oc = oc,
                          .sh = a->stride_h, .sw = a->stride_w};
    g.oh = fl_conv_output_size(g.h, kh, g.sh, a->padding);
    g.ow = fl_conv_output_size(g.w, kw, g.sw, a->padding);
    g.pad_top = fl_conv_pad_before(g.h, kh, g.sh, a->padding);
    g.pad_left = fl_conv_pad_before(g.w, kw, g.sw, a->padding);
    return g;
}

fl_conv_geometry fl_conv_geometry_of(const fl_node *n, fl_shape image, fl_shape filter)
{
    return window(n, image, filter.dims[0], filter.dims[1], filter.dims[3]);
}

fl_conv_geometry fl_pool_geometry_of(const fl_node *n, fl_shape image)
{
    return window(n, image, n->attrs.ksize_h, n->attrs.ksize_w, image.dims[3]);
}

/* How far the last of out windows, k wide and stride apart, starting
 * `before` ahead of the image, reaches past its end (in pixels). */
static int reach_past(int in, int k, int stride, int out, int before)
{
    if (out <= 0)
        return 0;
    int64_t past = (int64_t)(out - 1) * stride + k - before - in;
    return past > 0 ? (int)past : 0;
}

int fl_conv_pad_bottom(const fl_conv_geometry *g)
{
    return reach_past(g->h, g->kh, g->sh, g->oh, g->pad_top);
}

int fl_conv_pad_right(const fl_conv_geometry *g)
{
    return reach_past(g->w, g->kw, g->sw, g->ow, g->pad_left);
}
