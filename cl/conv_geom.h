/* conv_geom.h: the shape of a convolution or pooling window, as the host
 * works it out from a node and hands it to the kernels (conv.cl's geom:
 * thirteen ints, so both sides agree on the layout). */
#ifndef FLOWLAB_OPENCL_CONV_GEOM_H
#define FLOWLAB_OPENCL_CONV_GEOM_H

#include "opencl_device.h"
#include "host/conv_window.h"

typedef struct {
    cl_int batch, h, w, c;
    cl_int kh, kw;
    cl_int oh, ow, oc;
    cl_int sh, sw;
    cl_int pad_top, pad_left;
} geom;

static inline geom make_geom(const fl_node *n, fl_shape image, int kh, int kw, int oc)
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

/* A convolution of image by filter [KH, KW, Cin, Cout]. */
static inline geom conv_geom(const fl_node *n, fl_shape image, fl_shape filter)
{
    return make_geom(n, image, filter.dims[0], filter.dims[1], filter.dims[3]);
}

/* launch_conv_gemm.c: the convolutions as implicit GEMM (conv_gemm.cl), for
 * CPU-type devices; each enqueues its kernels and returns 0, or -1 after
 * fl_set_error. */
int fl_cl_conv2d_implicit(fl_cl_device *d, const geom *g, const void *x, const void *filter, void *y);
int fl_cl_conv2d_backprop_input_implicit(fl_cl_device *d, const geom *g, const void *dy,
                                         const void *filter, void *dx);
int fl_cl_conv2d_backprop_filter_implicit(fl_cl_device *d, const geom *g, const void *x, const void *dy,
                                          void *dfilter);

#endif
