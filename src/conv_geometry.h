/* conv_geometry.h: the one geometry of a convolution or pooling window,
 * TensorFlow's SAME/VALID rules along an axis and the whole window worked
 * out from a node and its run-time shapes. The ops' shape rules
 * (ops_conv.c) and every backend's kernels (src/host/, cl/, cuda/) use it. */
#ifndef FLOWLAB_CONV_GEOMETRY_H
#define FLOWLAB_CONV_GEOMETRY_H

#include "runtime.h"

/* Dimension legend, NHWC throughout:
 *   N, H, W, C     the image: batch, height, width, input channels
 *   KH, KW         the window (a filter is [KH, KW, C, OC])
 *   OH, OW, OC     the output: height, width, channels (Cout for a
 *                  convolution, C for pooling)
 *   SH, SW         strides
 *   pad_top/left   padding before the image; SAME puts an odd extra row
 *                  (column) after it (fl_conv_pad_bottom/right)
 * Thirteen ints in this order: cl/conv.cl's `geom` takes the same bytes. */
typedef struct {
    int batch, h, w, c;    /* N, H, W, C */
    int kh, kw;            /* KH, KW */
    int oh, ow, oc;        /* OH, OW, OC */
    int sh, sw;            /* SH, SW */
    int pad_top, pad_left; /* padding before */
} fl_conv_geometry;

/* Along one axis: the output size (-1 for an unknown input or a bad
 * stride), and the padding before the image. */
int fl_conv_output_size(int in, int k, int stride, fl_padding padding);
int fl_conv_pad_before(int in, int k, int stride, fl_padding padding);

/* A Conv2D-family node: image [N,H,W,C], filter [KH,KW,C,OC]. */
fl_conv_geometry fl_conv_geometry_of(const fl_node *n, fl_shape image, fl_shape filter);
/* A MaxPool-family node: image [N,H,W,C], the window from its attrs, OC = C. */
fl_conv_geometry fl_pool_geometry_of(const fl_node *n, fl_shape image);

/* Padding after the image: the rows (columns) the last window reaches past
 * it, 0 for VALID. Only backends that cannot pad unevenly need it (cuDNN). */
int fl_conv_pad_bottom(const fl_conv_geometry *g);
int fl_conv_pad_right(const fl_conv_geometry *g);

#endif
