/* ops_conv.c: 2-D convolution and max pooling over NHWC images, with output
 * sizes and padding as TensorFlow computes them for SAME and VALID. Builders,
 * shape rules and gradients; the gradients are fused backprop ops. */
#include <stdio.h>

#include "conv_geometry.h" /* fl_conv_output_size: one formula for every backend */
#include "runtime.h"

/* ---- shape helpers shared by every op in this file ---- */

static bool dim_compatible(int a, int b) { return a < 0 || b < 0 || a == b; }

static int check_strides(const fl_attrs *a, fl_status *st)
{
    if (a->stride_h < 1 || a->stride_w < 1) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "strides must be at least 1, got %d and %d", a->stride_h,
                      a->stride_w);
        return -1;
    }
    if (a->padding != FL_SAME && a->padding != FL_VALID) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "padding must be FL_SAME or FL_VALID, got %d", (int)a->padding);
        return -1;
    }
    return 0;
}

/* A VALID window must fit inside the image; SAME pads, so any window fits. */
static bool window_fits(fl_shape input, int kh, int kw, fl_padding padding)
{
    if (padding == FL_SAME)
        return true;
    bool h_ok = input.dims[1] < 0 || kh < 0 || kh <= input.dims[1];
    bool w_ok = input.dims[2] < 0 || kw < 0 || kw <= input.dims[2];
    return h_ok && w_ok;
}

/* [N, OH, OW, channels]; a dimension unknown at build time stays -1. */
static fl_shape window_output(const fl_attrs *a, fl_shape input, int kh, int kw, int channels)
{
    int oh = fl_conv_output_size(input.dims[1], kh, a->stride_h, a->padding);
    int ow = fl_conv_output_size(input.dims[2], kw, a->stride_w, a->padding);
    return fl_shape_make(4, input.dims[0], oh, ow, channels);
}

/* The backprop ops get dy from the graph; it must look like the forward output. */
static int check_dy(fl_shape dy, fl_shape forward, fl_status *st)
{
    bool match = dy.rank == forward.rank;
    for (int i = 0; match && i < dy.rank; i++)
        match = dim_compatible(dy.dims[i], forward.dims[i]);
    if (!match) {
        char sd[64], sf[64];
        fl_status_set(st, FL_INVALID_ARGUMENT, "gradient %s does not match the forward output %s",
                      fl_shape_format(dy, sd, sizeof sd), fl_shape_format(forward, sf, sizeof sf));
        return -1;
    }
    return 0;
}

static int check_float_inputs(const fl_node *n, fl_status *st) { return fl_check_float_inputs(n, st); }

/* Every gradient here is one fused op of three inputs carrying the forward attrs. */
static fl_node *build_backprop(fl_graph *g, fl_op_kind op, const char *type, fl_node *a,
                               fl_node *b, fl_node *c, const fl_attrs *attrs)
{
    fl_node *inputs[3] = {a, b, c};
    fl_node_spec spec = {.op = op, .default_name = type, .inputs = inputs, .ninputs = 3,
                         .dtype = FL_FLOAT32, .attrs = *attrs};
    return fl_add_node(g, &spec);
}

/* ---- Conv2D(input [N,H,W,Cin], filter [KH,KW,Cin,Cout]) -> [N,OH,OW,Cout] ---- */

/* The forward output shape; the backprops reuse it to check dy. */
static int conv_output_shape(const fl_attrs *a, fl_shape input, fl_shape filter, fl_shape *out,
                             fl_status *st)
{
    char si[64], sf[64];
    fl_shape_format(input, si, sizeof si);
    fl_shape_format(filter, sf, sizeof sf);
    if (input.rank != 4 || filter.rank != 4) {
        fl_status_set(st, FL_INVALID_ARGUMENT,
                      "input must be [N,H,W,Cin] and filter [KH,KW,Cin,Cout], got %s and %s", si, sf);
        return -1;
    }
    if (check_strides(a, st) != 0)
        return -1;
    if (!dim_compatible(input.dims[3], filter.dims[2])) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "input %s has %d channels but filter %s expects %d", si,
                      input.dims[3], sf, filter.dims[2]);
        return -1;
    }
    if (filter.dims[0] == 0 || filter.dims[1] == 0) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "filter %s has an empty window", sf);
        return -1;
    }
    if (!window_fits(input, filter.dims[0], filter.dims[1], a->padding)) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "filter %s does not fit in input %s with VALID padding", sf, si);
        return -1;
    }
    *out = window_output(a, input, filter.dims[0], filter.dims[1], filter.dims[3]);
    return 0;
}

static int infer_conv2d(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (check_float_inputs(n, st) != 0)
        return -1;
    return conv_output_shape(&n->attrs, in[0], in[1], out, st);
}

/* Conv2DBackpropInput(dy, filter, input): shaped like input, which is read
 * only for its run-time shape. */
static int infer_conv2d_backprop_input(const fl_node *n, const fl_shape *in, fl_shape *out,
                                       fl_status *st)
{
    fl_shape forward;
    if (check_float_inputs(n, st) != 0)
        return -1;
    if (conv_output_shape(&n->attrs, in[2], in[1], &forward, st) != 0)
        return -1;
    if (check_dy(in[0], forward, st) != 0)
        return -1;
    *out = in[2];
    return 0;
}

/* Conv2DBackpropFilter(dy, input, filter): shaped like filter, likewise. */
static int infer_conv2d_backprop_filter(const fl_node *n, const fl_shape *in, fl_shape *out,
                                        fl_status *st)
{
    fl_shape forward;
    if (check_float_inputs(n, st) != 0)
        return -1;
    if (conv_output_shape(&n->attrs, in[1], in[2], &forward, st) != 0)
        return -1;
    if (check_dy(in[0], forward, st) != 0)
        return -1;
    *out = in[2];
    return 0;
}

static int grad_conv2d(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *input = n->inputs[0], *filter = n->inputs[1];
    dx[0] = build_backprop(g, FL_OP_CONV2D_BACKPROP_INPUT, "Conv2DBackpropInput", dy, filter,
                           input, &n->attrs);
    dx[1] = build_backprop(g, FL_OP_CONV2D_BACKPROP_FILTER, "Conv2DBackpropFilter", dy, input,
                           filter, &n->attrs);
    return 0;
}

const fl_op_def fl_def_conv2d = {
    "Conv2D",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_conv2d, grad_conv2d};
const fl_op_def fl_def_conv2d_backprop_input = {
    "Conv2DBackpropInput",
    {.min_inputs = 3, .max_inputs = 3, .has_output = true},
    infer_conv2d_backprop_input, NULL};
const fl_op_def fl_def_conv2d_backprop_filter = {
    "Conv2DBackpropFilter",
    {.min_inputs = 3, .max_inputs = 3, .has_output = true},
    infer_conv2d_backprop_filter, NULL};

fl_node *fl_conv2d(fl_graph *g, fl_node *input, fl_node *filter, int stride_h, int stride_w,
                   fl_padding padding, const char *name)
{
    fl_node *inputs[2] = {input, filter};
    fl_node_spec spec = {.op = FL_OP_CONV2D, .name = name, .default_name = "Conv2D",
                         .inputs = inputs, .ninputs = 2, .dtype = FL_FLOAT32};
    spec.attrs.stride_h = stride_h;
    spec.attrs.stride_w = stride_w;
    spec.attrs.padding = padding;
    return fl_add_node(g, &spec);
}

/* ---- MaxPool(x [N,H,W,C]) -> [N,OH,OW,C]; SAME padding never wins a max ---- */

static int pool_output_shape(const fl_attrs *a, fl_shape input, fl_shape *out, fl_status *st)
{
    char si[64];
    fl_shape_format(input, si, sizeof si);
    if (input.rank != 4) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "input must be [N,H,W,C], got %s", si);
        return -1;
    }
    if (a->ksize_h < 1 || a->ksize_w < 1) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "ksize must be at least 1, got %d and %d", a->ksize_h,
                      a->ksize_w);
        return -1;
    }
    if (check_strides(a, st) != 0)
        return -1;
    if (!window_fits(input, a->ksize_h, a->ksize_w, a->padding)) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "window %dx%d does not fit in input %s with VALID padding",
                      a->ksize_h, a->ksize_w, si);
        return -1;
    }
    *out = window_output(a, input, a->ksize_h, a->ksize_w, input.dims[3]);
    return 0;
}

static int infer_max_pool(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (check_float_inputs(n, st) != 0)
        return -1;
    return pool_output_shape(&n->attrs, in[0], out, st);
}

/* MaxPoolGrad(dy, x, y): shaped like x; each dy goes to the first maximum of
 * its window, as in TensorFlow. */
static int infer_max_pool_grad(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    fl_shape forward;
    if (check_float_inputs(n, st) != 0)
        return -1;
    if (pool_output_shape(&n->attrs, in[1], &forward, st) != 0)
        return -1;
    if (check_dy(in[0], forward, st) != 0 || check_dy(in[2], forward, st) != 0)
        return -1;
    *out = in[1];
    return 0;
}

static int grad_max_pool(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    dx[0] = build_backprop(g, FL_OP_MAX_POOL_GRAD, "MaxPoolGrad", dy, n->inputs[0], n, &n->attrs);
    return 0;
}

const fl_op_def fl_def_max_pool = {
    "MaxPool",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_max_pool, grad_max_pool};
const fl_op_def fl_def_max_pool_grad = {
    "MaxPoolGrad",
    {.min_inputs = 3, .max_inputs = 3, .has_output = true},
    infer_max_pool_grad, NULL};

fl_node *fl_max_pool2d(fl_graph *g, fl_node *input, int ksize_h, int ksize_w, int stride_h,
                       int stride_w, fl_padding padding, const char *name)
{
    fl_node *inputs[1] = {input};
    fl_node_spec spec = {.op = FL_OP_MAX_POOL, .name = name, .default_name = "MaxPool",
                         .inputs = inputs, .ninputs = 1, .dtype = FL_FLOAT32};
    spec.attrs.ksize_h = ksize_h;
    spec.attrs.ksize_w = ksize_w;
    spec.attrs.stride_h = stride_h;
    spec.attrs.stride_w = stride_w;
    spec.attrs.padding = padding;
    return fl_add_node(g, &spec);
}
