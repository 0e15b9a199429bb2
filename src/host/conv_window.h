/* conv_window.h: the geometry of a convolution or pooling window, from
 * run-time shapes and a node's attrs. Shared by the reference loops
 * (host_conv.c) and the GEMM-based host kernels (host_blas.c). */
#ifndef FLOWLAB_CONV_WINDOW_H
#define FLOWLAB_CONV_WINDOW_H

#include "runtime.h"

/* Everything a window loop needs, from run-time shapes and the node's attrs. */
typedef struct {
    int batch, h, w, c; /* the image */
    int kh, kw;         /* the window */
    int oh, ow, oc;     /* the output; oc is Cout for a convolution, c for pooling */
    int sh, sw;
    int pad_top, pad_left;
} window_geom;

/* The window of a Conv2D-family node: image [N,H,W,C], filter [KH,KW,C,Cout]. */
window_geom fl_conv_window(const fl_node *n, fl_shape image, fl_shape filter);

#endif
