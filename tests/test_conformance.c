/* test_conformance.c: every op, forward and gradient, on random inputs, run
 * as the same small graph on /cpu:0 (the reference) and on each /gpu:N of
 * the active accelerator backend; outputs must agree within the tolerance
 * printed in each line. Skipped where no accelerator exists. */
#include "flowlab.h"
#include "device.h" /* fl_accelerator; runtime.h: fl_ones_like, fl_neg */
#include "tap.h"

typedef struct {
    fl_dtype dtype;
    fl_shape shape;
    float lo, hi; /* uniform floats, or integers lo..hi */
} input_spec;

typedef fl_node *(*build_fn)(fl_graph *g, fl_node *const *x);

typedef struct {
    const char *name;
    build_fn build;
    int ninputs;
    input_spec in[4];
    bool grad;  /* also compare d sum(y * w) / dx for the float inputs */
    double tol; /* |got - want| <= tol * max(1, |want|) */
} op_case;

/* ---- the graphs ---- */

static fl_node *b_add(fl_graph *g, fl_node *const *x) { return fl_add(g, x[0], x[1], NULL); }
static fl_node *b_sub(fl_graph *g, fl_node *const *x) { return fl_sub(g, x[0], x[1], NULL); }
static fl_node *b_mul(fl_graph *g, fl_node *const *x) { return fl_mul(g, x[0], x[1], NULL); }
static fl_node *b_div(fl_graph *g, fl_node *const *x) { return fl_div(g, x[0], x[1], NULL); }
static fl_node *b_neg(fl_graph *g, fl_node *const *x) { return fl_neg(g, x[0], NULL); }
static fl_node *b_add_n(fl_graph *g, fl_node *const *x) { return fl_add_n(g, x, 3, NULL); }
static fl_node *b_relu(fl_graph *g, fl_node *const *x) { return fl_relu(g, x[0], NULL); }
static fl_node *b_sigmoid(fl_graph *g, fl_node *const *x) { return fl_sigmoid(g, x[0], NULL); }
static fl_node *b_tanh(fl_graph *g, fl_node *const *x) { return fl_tanh(g, x[0], NULL); }
static fl_node *b_softplus(fl_graph *g, fl_node *const *x) { return fl_softplus(g, x[0], NULL); }
static fl_node *b_softmax(fl_graph *g, fl_node *const *x) { return fl_softmax(g, x[0], NULL); }
static fl_node *b_xent(fl_graph *g, fl_node *const *x)
{
    return fl_sparse_softmax_cross_entropy_with_logits(g, x[0], x[1], NULL);
}
static fl_node *b_sum_axis1(fl_graph *g, fl_node *const *x)
{
    int axes[1] = {1};
    return fl_reduce_sum(g, x[0], axes, 1, false, NULL);
}
static fl_node *b_mean_axes02(fl_graph *g, fl_node *const *x)
{
    int axes[2] = {0, 2};
    return fl_reduce_mean(g, x[0], axes, 2, true, NULL);
}
static fl_node *b_sum_axis0(fl_graph *g, fl_node *const *x)
{
    int axes[1] = {0};
    return fl_reduce_sum(g, x[0], axes, 1, false, NULL);
}
static fl_node *b_mean_axis1_keep(fl_graph *g, fl_node *const *x)
{
    int axes[1] = {1};
    return fl_reduce_mean(g, x[0], axes, 1, true, NULL);
}
static fl_node *b_sum_axes01_keep(fl_graph *g, fl_node *const *x)
{
    int axes[2] = {0, 1};
    return fl_reduce_sum(g, x[0], axes, 2, true, NULL);
}
static fl_node *b_mean_all_keep(fl_graph *g, fl_node *const *x) { return fl_reduce_mean(g, x[0], NULL, 0, true, NULL); }
static fl_node *b_sum_all(fl_graph *g, fl_node *const *x) { return fl_reduce_sum(g, x[0], NULL, 0, false, NULL); }
static fl_node *b_mean_all(fl_graph *g, fl_node *const *x) { return fl_reduce_mean(g, x[0], NULL, 0, false, NULL); }
static fl_node *b_concat(fl_graph *g, fl_node *const *x) { return fl_concat(g, x, 3, 1, NULL); }
static fl_node *b_slice(fl_graph *g, fl_node *const *x) { return fl_slice(g, x[0], 1, 1, 2, NULL); }
static fl_node *b_split(fl_graph *g, fl_node *const *x)
{
    fl_node *parts[3];
    if (fl_split(g, x[0], 3, 2, parts, NULL) != 0)
        return NULL;
    return fl_add(g, fl_mul(g, parts[0], parts[1], NULL), parts[2], NULL);
}
static fl_node *b_to_int(fl_graph *g, fl_node *const *x) { return fl_cast(g, x[0], FL_INT32, NULL); }
static fl_node *b_to_float(fl_graph *g, fl_node *const *x) { return fl_cast(g, x[0], FL_FLOAT32, NULL); }
static fl_node *b_argmax1(fl_graph *g, fl_node *const *x) { return fl_argmax(g, x[0], 1, NULL); }
static fl_node *b_argmax0(fl_graph *g, fl_node *const *x) { return fl_argmax(g, x[0], 0, NULL); }
static fl_node *b_equal(fl_graph *g, fl_node *const *x) { return fl_equal(g, x[0], x[1], NULL); }
static fl_node *b_reshape(fl_graph *g, fl_node *const *x)
{
    fl_node *r = fl_reshape(g, fl_identity(g, x[0], NULL), fl_shape_make(2, -1, 6), NULL);
    return fl_add(g, fl_stop_gradient(g, r, NULL), r, NULL);
}
static fl_node *b_ones_like(fl_graph *g, fl_node *const *x) { return fl_ones_like(g, x[0], NULL); }
static fl_node *b_matmul(fl_graph *g, fl_node *const *x) { return fl_matmul(g, x[0], x[1], false, false, NULL); }
static fl_node *b_matmul_ta(fl_graph *g, fl_node *const *x) { return fl_matmul(g, x[0], x[1], true, false, NULL); }
static fl_node *b_matmul_tb(fl_graph *g, fl_node *const *x) { return fl_matmul(g, x[0], x[1], false, true, NULL); }
static fl_node *b_matmul_tt(fl_graph *g, fl_node *const *x) { return fl_matmul(g, x[0], x[1], true, true, NULL); }
static fl_node *b_conv_same(fl_graph *g, fl_node *const *x) { return fl_conv2d(g, x[0], x[1], 1, 1, FL_SAME, NULL); }
static fl_node *b_conv_valid2(fl_graph *g, fl_node *const *x) { return fl_conv2d(g, x[0], x[1], 2, 2, FL_VALID, NULL); }
static fl_node *b_conv_same2(fl_graph *g, fl_node *const *x) { return fl_conv2d(g, x[0], x[1], 2, 1, FL_SAME, NULL); }
static fl_node *b_pool_same(fl_graph *g, fl_node *const *x) { return fl_max_pool2d(g, x[0], 2, 2, 2, 2, FL_SAME, NULL); }
static fl_node *b_pool_valid(fl_graph *g, fl_node *const *x) { return fl_max_pool2d(g, x[0], 3, 3, 2, 2, FL_VALID, NULL); }
static fl_node *b_conv_same22(fl_graph *g, fl_node *const *x) { return fl_conv2d(g, x[0], x[1], 2, 2, FL_SAME, NULL); }
static fl_node *b_conv_valid(fl_graph *g, fl_node *const *x) { return fl_conv2d(g, x[0], x[1], 1, 1, FL_VALID, NULL); }
static fl_node *b_conv_valid21(fl_graph *g, fl_node *const *x) { return fl_conv2d(g, x[0], x[1], 2, 1, FL_VALID, NULL); }
static fl_node *b_pool_valid2(fl_graph *g, fl_node *const *x) { return fl_max_pool2d(g, x[0], 2, 2, 2, 2, FL_VALID, NULL); }
static fl_node *b_pool_gaps(fl_graph *g, fl_node *const *x) { return fl_max_pool2d(g, x[0], 2, 2, 3, 3, FL_VALID, NULL); }
static fl_node *b_pool_same1(fl_graph *g, fl_node *const *x) { return fl_max_pool2d(g, x[0], 3, 3, 1, 1, FL_SAME, NULL); }

#define F FL_FLOAT32
#define I FL_INT32

static const op_case cases[] = {
    {"Add [4,5]+[5]", b_add, 2, {{F, {2, {4, 5}}, -1, 1}, {F, {1, {5}}, -1, 1}}, true, 1e-6},
    {"Sub [3,4]-[]", b_sub, 2, {{F, {2, {3, 4}}, -1, 1}, {F, {0, {0}}, -1, 1}}, true, 1e-6},
    {"Mul [2,3,4]*[3,4]", b_mul, 2, {{F, {3, {2, 3, 4}}, -1, 1}, {F, {2, {3, 4}}, -1, 1}}, true, 1e-6},
    {"Div [4,5]/[5]", b_div, 2, {{F, {2, {4, 5}}, -1, 1}, {F, {1, {5}}, 0.5f, 2}}, true, 1e-5},
    {"Add int32", b_add, 2, {{I, {2, {4, 5}}, -100, 100}, {I, {1, {5}}, -100, 100}}, false, 0},
    {"Sub int32", b_sub, 2, {{I, {2, {4, 5}}, -100, 100}, {I, {0, {0}}, -100, 100}}, false, 0},
    {"Mul int32", b_mul, 2, {{I, {2, {4, 5}}, -100, 100}, {I, {2, {4, 5}}, -100, 100}}, false, 0},
    {"Div int32", b_div, 2, {{I, {2, {4, 5}}, -100, 100}, {I, {1, {5}}, 1, 9}}, false, 0},
    {"Neg", b_neg, 1, {{F, {2, {3, 7}}, -1, 1}}, true, 0},
    {"Neg int32", b_neg, 1, {{I, {2, {3, 7}}, -50, 50}}, false, 0},
    {"AddN", b_add_n, 3, {{F, {2, {3, 5}}, -1, 1}, {F, {2, {3, 5}}, -1, 1}, {F, {2, {3, 5}}, -1, 1}}, true, 1e-6},
    {"Relu", b_relu, 1, {{F, {2, {5, 7}}, -1, 1}}, true, 1e-6},
    {"Sigmoid", b_sigmoid, 1, {{F, {2, {5, 7}}, -4, 4}}, true, 1e-5},
    {"Tanh", b_tanh, 1, {{F, {2, {5, 7}}, -3, 3}}, true, 1e-5},
    {"Softplus", b_softplus, 1, {{F, {2, {5, 7}}, -30, 30}}, true, 1e-5},
    {"Softmax", b_softmax, 1, {{F, {2, {6, 10}}, -5, 5}}, true, 1e-5},
    {"SparseSoftmaxXent", b_xent, 2, {{I, {1, {8}}, 0, 9}, {F, {2, {8, 10}}, -5, 5}}, true, 1e-5},
    {"Sum axis 1", b_sum_axis1, 1, {{F, {3, {3, 4, 5}}, -1, 1}}, true, 1e-5},
    {"Mean axes 0,2 keep_dims", b_mean_axes02, 1, {{F, {3, {3, 4, 5}}, -1, 1}}, true, 1e-5},
    {"Sum of all", b_sum_all, 1, {{F, {2, {64, 33}}, -1, 1}}, true, 1e-5},
    {"Mean of all", b_mean_all, 1, {{F, {4, {2, 3, 4, 5}}, -1, 1}}, true, 1e-5},
    {"Sum int32", b_sum_axis1, 1, {{I, {3, {3, 4, 5}}, -1000, 1000}}, false, 0},
    {"Mean int32", b_mean_all, 1, {{I, {2, {7, 3}}, -1000, 1000}}, false, 0},
    {"Concat axis 1", b_concat, 3, {{F, {3, {2, 1, 3}}, -1, 1}, {F, {3, {2, 2, 3}}, -1, 1}, {F, {3, {2, 3, 3}}, -1, 1}}, true, 0},
    {"Slice axis 1", b_slice, 1, {{F, {3, {2, 4, 3}}, -1, 1}}, true, 0},
    {"Split axis 2", b_split, 1, {{F, {3, {2, 3, 6}}, -1, 1}}, true, 1e-6},
    {"Cast to int32", b_to_int, 1, {{F, {2, {4, 6}}, -100, 100}}, false, 0},
    {"Cast to float32", b_to_float, 1, {{I, {2, {4, 6}}, -100, 100}}, false, 0},
    {"ArgMax axis 1", b_argmax1, 1, {{F, {3, {3, 7, 2}}, -1, 1}}, false, 0},
    {"ArgMax int32 axis 0", b_argmax0, 1, {{I, {2, {5, 4}}, 0, 3}}, false, 0},
    {"Equal float32", b_equal, 2, {{F, {2, {4, 5}}, 0, 2}, {F, {1, {5}}, 0, 2}}, false, 0},
    {"Equal int32", b_equal, 2, {{I, {2, {4, 5}}, 0, 2}, {I, {2, {4, 5}}, 0, 2}}, false, 0},
    {"Reshape, Identity, StopGradient", b_reshape, 1, {{F, {3, {2, 3, 4}}, -1, 1}}, true, 1e-6},
    {"Fill (ones_like)", b_ones_like, 1, {{F, {2, {3, 3}}, -1, 1}}, false, 0},
    {"Fill int32 (ones_like)", b_ones_like, 1, {{I, {1, {5}}, -1, 1}}, false, 0},
    {"MatMul", b_matmul, 2, {{F, {2, {7, 13}}, -1, 1}, {F, {2, {13, 19}}, -1, 1}}, true, 1e-5},
    {"MatMul transpose_a", b_matmul_ta, 2, {{F, {2, {13, 7}}, -1, 1}, {F, {2, {13, 19}}, -1, 1}}, true, 1e-5},
    {"MatMul transpose_b", b_matmul_tb, 2, {{F, {2, {7, 13}}, -1, 1}, {F, {2, {19, 13}}, -1, 1}}, true, 1e-5},
    {"MatMul both transposed", b_matmul_tt, 2, {{F, {2, {13, 7}}, -1, 1}, {F, {2, {19, 13}}, -1, 1}}, true, 1e-5},
    {"MatMul 128x784x100", b_matmul, 2, {{F, {2, {128, 784}}, 0, 1}, {F, {2, {784, 100}}, -0.1f, 0.1f}}, true, 1e-4},
    {"Conv2D 3x3 SAME", b_conv_same, 2, {{F, {4, {2, 7, 7, 3}}, -1, 1}, {F, {4, {3, 3, 3, 4}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 VALID stride 2", b_conv_valid2, 2, {{F, {4, {2, 9, 8, 2}}, -1, 1}, {F, {4, {3, 2, 2, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 5x5 SAME stride 2x1", b_conv_same2, 2, {{F, {4, {3, 10, 9, 4}}, -1, 1}, {F, {4, {5, 5, 4, 6}}, -1, 1}}, true, 1e-4},
    {"MaxPool 2x2 SAME", b_pool_same, 1, {{F, {4, {2, 7, 7, 3}}, -1, 1}}, true, 0},
    {"MaxPool 3x3 VALID stride 2", b_pool_valid, 1, {{F, {4, {2, 9, 8, 3}}, -1, 1}}, true, 0},
    /* OpenCL: channel counts that are not a multiple of 4 (kernels move
     * channels four at a time), convolutions big enough to run in several
     * chunks of images (cl/launch_conv.c's CHUNK_BYTES), pooling windows
     * that tile the image, leave gaps or overlap, broadcasts over many rows */
    {"Conv2D 3x3 VALID stride 2, C=5", b_conv_valid2, 2, {{F, {4, {2, 11, 9, 5}}, -1, 1}, {F, {4, {3, 3, 5, 7}}, -1, 1}}, true, 1e-4},
    {"Conv2D 5x5 SAME, 3 chunks", b_conv_same, 2, {{F, {4, {3, 64, 64, 16}}, -1, 1}, {F, {4, {5, 5, 16, 8}}, -1, 1}}, true, 1e-3},
    /* ^ dW by Winograd: sums of 12288 products whose error, about 1e-5 of the
     * largest |dW| (33), is up to 6.5e-4 of a value near 1 (tests/test_winograd.c) */
    {"Conv2D 5x5 SAME stride 2, C=5, 2 chunks", b_conv_same22, 2, {{F, {4, {5, 160, 160, 5}}, -1, 1}, {F, {4, {5, 5, 5, 3}}, -1, 1}}, true, 1e-3}, /* dW: sums of 32000 products */
    /* The implicit-GEMM convolutions (cl/conv_gemm.cl): tiles of 6 pixels x
     * 16 channels with partial tiles on both sides, one input channel (each
     * row of a filter-gradient tile its own tap), windows larger than the
     * image, a 1x1 window whose stride skips pixels, a batch cut unevenly
     * into the filter gradient's 16 partial sums, and conv_2 of chapter 1. */
    {"Conv2D 5x5 SAME, Cin=1, Cout=17, batch 19", b_conv_same, 2, {{F, {4, {19, 6, 5, 1}}, -1, 1}, {F, {4, {5, 5, 1, 17}}, -1, 1}}, true, 1e-4},
    {"Conv2D 5x5 SAME stride 2 on a 3x2 image", b_conv_same22, 2, {{F, {4, {1, 3, 2, 3}}, -1, 1}, {F, {4, {5, 5, 3, 2}}, -1, 1}}, true, 1e-4},
    {"Conv2D 1x1 VALID stride 2", b_conv_valid2, 2, {{F, {4, {2, 5, 5, 3}}, -1, 1}, {F, {4, {1, 1, 3, 4}}, -1, 1}}, true, 1e-4},
    {"Conv2D 5x5 SAME [2,14,14,32] x [5,5,32,64]", b_conv_same, 2, {{F, {4, {2, 14, 14, 32}}, -1, 1}, {F, {4, {5, 5, 32, 64}}, -1, 1}}, true, 1e-3},
    /* One odd shape under every stride and padding: a 3x2 window, 7x9
     * images, Cout = 5. With Cin = 3 the data gradient takes the narrow
     * kernel, with Cin = 7 the implicit GEMM; both skip output pixels a
     * stride of 2 never reaches. */
    {"Conv2D 3x2 SAME, [2,7,9,3] x [3,2,3,5]", b_conv_same, 2, {{F, {4, {2, 7, 9, 3}}, -1, 1}, {F, {4, {3, 2, 3, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 VALID, [2,7,9,3] x [3,2,3,5]", b_conv_valid, 2, {{F, {4, {2, 7, 9, 3}}, -1, 1}, {F, {4, {3, 2, 3, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 SAME stride 2, [2,7,9,3] x [3,2,3,5]", b_conv_same22, 2, {{F, {4, {2, 7, 9, 3}}, -1, 1}, {F, {4, {3, 2, 3, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 VALID stride 2, [2,7,9,3] x [3,2,3,5]", b_conv_valid2, 2, {{F, {4, {2, 7, 9, 3}}, -1, 1}, {F, {4, {3, 2, 3, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 SAME stride 2x1, [2,7,9,3] x [3,2,3,5]", b_conv_same2, 2, {{F, {4, {2, 7, 9, 3}}, -1, 1}, {F, {4, {3, 2, 3, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 VALID stride 2x1, [2,7,9,3] x [3,2,3,5]", b_conv_valid21, 2, {{F, {4, {2, 7, 9, 3}}, -1, 1}, {F, {4, {3, 2, 3, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 SAME, [2,7,9,7] x [3,2,7,5]", b_conv_same, 2, {{F, {4, {2, 7, 9, 7}}, -1, 1}, {F, {4, {3, 2, 7, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 VALID, [2,7,9,7] x [3,2,7,5]", b_conv_valid, 2, {{F, {4, {2, 7, 9, 7}}, -1, 1}, {F, {4, {3, 2, 7, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 SAME stride 2, [2,7,9,7] x [3,2,7,5]", b_conv_same22, 2, {{F, {4, {2, 7, 9, 7}}, -1, 1}, {F, {4, {3, 2, 7, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 VALID stride 2, [2,7,9,7] x [3,2,7,5]", b_conv_valid2, 2, {{F, {4, {2, 7, 9, 7}}, -1, 1}, {F, {4, {3, 2, 7, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 SAME stride 2x1, [2,7,9,7] x [3,2,7,5]", b_conv_same2, 2, {{F, {4, {2, 7, 9, 7}}, -1, 1}, {F, {4, {3, 2, 7, 5}}, -1, 1}}, true, 1e-4},
    {"Conv2D 3x2 VALID stride 2x1, [2,7,9,7] x [3,2,7,5]", b_conv_valid21, 2, {{F, {4, {2, 7, 9, 7}}, -1, 1}, {F, {4, {3, 2, 7, 5}}, -1, 1}}, true, 1e-4},
    {"MaxPool 2x2 VALID, odd size, C=5", b_pool_valid2, 1, {{F, {4, {2, 7, 9, 5}}, -1, 1}}, true, 0},
    {"MaxPool 2x2 stride 3, C=6", b_pool_gaps, 1, {{F, {4, {2, 8, 7, 6}}, -1, 1}}, true, 0},
    {"MaxPool 3x3 SAME stride 1, C=1", b_pool_same1, 1, {{F, {4, {2, 6, 5, 1}}, -1, 1}}, true, 0},
    /* Wide channels: blocks of 32, then groups of 8, the last one partial. */
    {"MaxPool 2x2 VALID, odd size, C=40", b_pool_valid2, 1, {{F, {4, {2, 7, 5, 40}}, -1, 1}}, true, 0},
    {"MaxPool 2x2 SAME, [2,7,7,64]", b_pool_same, 1, {{F, {4, {2, 7, 7, 64}}, -1, 1}}, true, 0},
    {"MaxPool 3x3 SAME stride 1, C=37", b_pool_same1, 1, {{F, {4, {2, 6, 5, 37}}, -1, 1}}, true, 0},
    {"MaxPool 3x3 VALID stride 2, C=33", b_pool_valid, 1, {{F, {4, {2, 9, 8, 33}}, -1, 1}}, true, 0},
    {"MaxPool 2x2 stride 3, C=35", b_pool_gaps, 1, {{F, {4, {2, 8, 7, 35}}, -1, 1}}, true, 0},
    /* eight channels per load (C a multiple of 8): gaps, overlap, batch 1 */
    {"MaxPool 2x2 stride 3, C=16", b_pool_gaps, 1, {{F, {4, {2, 8, 7, 16}}, -1, 1}}, true, 0},
    {"MaxPool 3x3 VALID stride 2, C=8, batch 1", b_pool_valid, 1, {{F, {4, {1, 9, 8, 8}}, -1, 1}}, true, 0},
    {"MaxPool 2x2 SAME, odd size, C=24, batch 1", b_pool_same, 1, {{F, {4, {1, 5, 7, 24}}, -1, 1}}, true, 0},
    {"Add [300,40]+[40]", b_add, 2, {{F, {2, {300, 40}}, -1, 1}, {F, {1, {40}}, -1, 1}}, true, 1e-5},
    {"Mul [3]*[70,33,3]", b_mul, 2, {{F, {1, {3}}, -1, 1}, {F, {3, {70, 33, 3}}, -1, 1}}, true, 1e-5},
    /* OpenCL reductions (cl/reduce.cl): whole tensors and rows are summed
     * in chunks of 8192 floats, columns in parts of 1024 rows, eight lanes
     * at a time, then the partial sums are summed; sizes here are not
     * multiples of 8, take one chunk, or take several; size-1 axes drop
     * out; patterns that are neither rows nor columns, and int32, take the
     * general kernels. Their gradients (ReduceGrad) run the same shapes. */
    {"Sum of all, 1 element", b_sum_all, 1, {{F, {1, {1}}, -1, 1}}, true, 1e-6},
    {"Sum of all, 7 elements", b_sum_all, 1, {{F, {1, {7}}, -1, 1}}, true, 1e-6},
    {"Mean of all, 7 elements", b_mean_all, 1, {{F, {2, {7, 1}}, -1, 1}}, true, 1e-6},
    {"Sum of all, 1e6+3 elements", b_sum_all, 1, {{F, {1, {1000003}}, -1, 1}}, true, 1e-5},
    {"Mean of all keep_dims, [7,143,1001]", b_mean_all_keep, 1, {{F, {3, {7, 143, 1001}}, 0, 1}}, true, 1e-5},
    {"Sum axis 0 [2100,13], 3 parts", b_sum_axis0, 1, {{F, {2, {2100, 13}}, -1, 1}}, true, 1e-5},
    {"Sum axis 0 [5,1029]", b_sum_axis0, 1, {{F, {2, {5, 1029}}, -1, 1}}, true, 1e-5},
    {"Sum axis 1 [3,1500,20], 2 parts", b_sum_axis1, 1, {{F, {3, {3, 1500, 20}}, -1, 1}}, true, 1e-5},
    {"Mean axis 1 keep_dims [5,20003], 3 chunks", b_mean_axis1_keep, 1, {{F, {2, {5, 20003}}, -1, 1}}, true, 1e-5},
    {"Mean axis 1 keep_dims [1000,9]", b_mean_axis1_keep, 1, {{F, {2, {1000, 9}}, -1, 1}}, true, 1e-5},
    {"Sum axes 0,1 keep_dims [9,7,5]", b_sum_axes01_keep, 1, {{F, {3, {9, 7, 5}}, -1, 1}}, true, 1e-5},
    {"Mean axes 0,2 keep_dims [1,5,3] (size-1 axis)", b_mean_axes02, 1, {{F, {3, {1, 5, 3}}, -1, 1}}, true, 1e-5},
    {"Sum axis 1 of [4,1,5] (nothing reduced)", b_sum_axis1, 1, {{F, {3, {4, 1, 5}}, -1, 1}}, true, 1e-6},
    {"Mean axes 0,2 keep_dims [30,4,50]", b_mean_axes02, 1, {{F, {3, {30, 4, 50}}, -1, 1}}, true, 1e-5},
    {"Sum int32 of all, 1e6+3 elements", b_sum_all, 1, {{I, {1, {1000003}}, -1000, 1000}}, false, 0},
    {"Sum int32 axis 0 [300,7]", b_sum_axis0, 1, {{I, {2, {300, 7}}, -1000, 1000}}, false, 0},
    {"Mean int32 axis 1 keep_dims [6,11]", b_mean_axis1_keep, 1, {{I, {2, {6, 11}}, -1000, 1000}}, false, 0},
    {"Add [2100,13]+[13] (SumToShape in parts)", b_add, 2, {{F, {2, {2100, 13}}, -1, 1}, {F, {1, {13}}, -1, 1}}, true, 1e-5},
    {"Add [1027,16]+[16] (SumToShape, rows not a multiple of 4)", b_add, 2, {{F, {2, {1027, 16}}, -1, 1}, {F, {1, {16}}, -1, 1}}, true, 1e-4},
    {"Add [1001,3]+[] (SumToShape to a scalar)", b_add, 2, {{F, {2, {1001, 3}}, -1, 1}, {F, {0, {0}}, -1, 1}}, true, 1e-5},
};

/* ---- random values, the same for every device ---- */

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

static fl_tensor *random_tensor(const input_spec *spec, uint32_t seed)
{
    fl_tensor *t = fl_tensor_new(spec->dtype, spec->shape);
    int64_t n = fl_shape_size(spec->shape);
    for (int64_t i = 0; i < n; i++) {
        double u = next_random(&seed) / 16777216.0;
        if (spec->dtype == FL_INT32)
            fl_tensor_ints(t)[i] = (int32_t)spec->lo + (int32_t)(u * (spec->hi - spec->lo + 1));
        else
            fl_tensor_floats(t)[i] = spec->lo + (spec->hi - spec->lo) * (float)u;
    }
    return t;
}

/* Runs the case on device: outputs y, then the gradient of each float input. */
static int run_case(const op_case *c, const char *device, fl_tensor *const *values,
                    fl_tensor **outputs)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, device);
    fl_node *x[4], *fetches[8], *floats[4];
    int nfetch = 0, nfloat = 0;
    for (int i = 0; i < c->ninputs; i++) {
        x[i] = fl_placeholder(g, c->in[i].dtype, c->in[i].shape, NULL);
        if (c->in[i].dtype == FL_FLOAT32)
            floats[nfloat++] = x[i];
    }
    fl_node *y = c->build(g, x);
    fetches[nfetch++] = y;
    if (c->grad && y) {
        input_spec w_spec = {FL_FLOAT32, fl_node_shape(y), -1, 1};
        fl_tensor *w = random_tensor(&w_spec, 99);
        fl_node *loss = fl_reduce_sum(g, fl_mul(g, y, fl_constant(g, w, "w"), NULL), NULL, 0, false, NULL);
        fl_tensor_free(w);
        fl_node *grads[4] = {0};
        fl_gradients(g, loss, floats, nfloat, grads);
        for (int i = 0; i < nfloat; i++)
            fetches[nfetch++] = grads[i];
    }
    fl_device_pop(g);
    int rc = -1;
    if (fl_graph_error(g)) {
        diag("%s on %s: %s", c->name, device, fl_graph_error(g));
    } else {
        fl_feed feeds[4];
        for (int i = 0; i < c->ninputs; i++)
            feeds[i] = (fl_feed){x[i], values[i]};
        fl_session *s = fl_session_new(g, NULL);
        if (fl_session_run(s, feeds, c->ninputs, fetches, nfetch, outputs, NULL, 0) == 0)
            rc = nfetch;
        else
            diag("%s on %s: %s", c->name, device, fl_session_error(s));
        fl_session_free(s);
    }
    fl_graph_free(g);
    return rc;
}

/* The largest error, relative to max(1, |want|); 1e30 for a shape mismatch. */
static double worst_error(const fl_tensor *got, const fl_tensor *want)
{
    if (!got || !want || got->dtype != want->dtype || !fl_shape_equal(got->shape, want->shape))
        return 1e30;
    double worst = 0;
    for (int64_t i = 0; i < fl_shape_size(want->shape); i++) {
        double g = got->dtype == FL_INT32 ? fl_tensor_ints(got)[i] : fl_tensor_floats(got)[i];
        double w = want->dtype == FL_INT32 ? fl_tensor_ints(want)[i] : fl_tensor_floats(want)[i];
        double err = fabs(g - w) / (fabs(w) > 1 ? fabs(w) : 1);
        if (isnan(g) != isnan(w))
            err = 1e30;
        worst = err > worst ? err : worst;
    }
    return worst;
}

static void check_case(const op_case *c, int gpu)
{
    char device[16];
    snprintf(device, sizeof device, "/gpu:%d", gpu);
    fl_tensor *values[4];
    for (int i = 0; i < c->ninputs; i++)
        values[i] = random_tensor(&c->in[i], 1234u + 77u * (uint32_t)i);
    fl_tensor *want[8] = {0}, *got[8] = {0};
    int n = run_case(c, "/cpu:0", values, want);
    int m = run_case(c, device, values, got);
    if (n < 0 || m != n) {
        ok(false, "%s on %s runs as on /cpu:0", c->name, device);
    } else {
        for (int i = 0; i < n; i++) {
            double err = worst_error(got[i], want[i]);
            ok(err <= c->tol, "%s on %s: %s matches /cpu:0 (tolerance %.0e)", c->name, device,
               i == 0 ? "output" : "gradient", c->tol);
            if (err > c->tol)
                diag("worst relative error %.3g", err);
        }
    }
    for (int i = 0; i < 8; i++) {
        fl_tensor_free(want[i]);
        fl_tensor_free(got[i]);
    }
    for (int i = 0; i < c->ninputs; i++)
        fl_tensor_free(values[i]);
}

/* ---- state: initializers, Assign, AssignAdd and the optimizer updates ---- */

enum { SGD, MOMENTUM, NESTEROV, ADAM };
static const char *const optimizer_names[] = {"GradientDescent", "Momentum", "Nesterov momentum", "Adam"};

static fl_optimizer *make_optimizer(int kind)
{
    switch (kind) {
    case SGD: return fl_gradient_descent_optimizer(0.1f);
    case MOMENTUM: return fl_momentum_optimizer(0.1f, 0.9f, false);
    case NESTEROV: return fl_momentum_optimizer(0.1f, 0.9f, true);
    default: return fl_adam_optimizer(0.01f, 0.9f, 0.999f, 1e-8f);
    }
}

/* Three training steps of a small model with `units` outputs on device;
 * fetches w, b, global_step. With 301 units, w has 1204 elements: several
 * work-items of the OpenCL update kernels (256 elements each), eight at a
 * time, and a tail of 4 done one by one. */
static int train(const char *device, int kind, int units, fl_tensor **out)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, device);
    float xs[8] = {0.5f, -1, 2, 0.25f, -0.5f, 1.5f, -2, 1};
    fl_tensor *x_value = fl_tensor_from_floats(fl_shape_make(2, 2, 4), xs);
    fl_node *x = fl_constant(g, x_value, "x");
    fl_tensor_free(x_value);
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, 4, units), fl_truncated_normal_initializer(0, 1, 5));
    fl_node *b = fl_get_variable(g, "b", fl_shape_make(1, units), fl_random_uniform_initializer(-1, 1, 6));
    fl_node *step = fl_get_or_create_global_step(g);
    fl_node *y = fl_tanh(g, fl_add(g, fl_matmul(g, x, w, false, false, NULL), b, NULL), NULL);
    fl_node *loss = fl_reduce_mean(g, fl_mul(g, y, y, NULL), NULL, 0, false, "loss");
    fl_optimizer *opt = make_optimizer(kind);
    fl_node *train_op = fl_minimize(opt, g, loss, step, NULL);
    fl_node *init = fl_global_variables_initializer(g);
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_node *fetches[3] = {w, b, step};
    int rc = fl_graph_error(g) ? -1 : fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &train_op, 1);
    if (rc == 0)
        rc = fl_session_run(s, NULL, 0, fetches, 3, out, NULL, 0);
    if (rc != 0)
        diag("%s on %s: %s", optimizer_names[kind], device,
             fl_graph_error(g) ? fl_graph_error(g) : fl_session_error(s));
    fl_session_free(s);
    fl_optimizer_free(opt);
    fl_graph_free(g);
    return rc;
}

static void check_training(int gpu)
{
    char device[16];
    snprintf(device, sizeof device, "/gpu:%d", gpu);
    for (int kind = SGD; kind <= ADAM; kind++) {
        for (int units = 3; units <= 301; units += 298) {
            fl_tensor *want[3] = {0}, *got[3] = {0};
            bool ran = train("/cpu:0", kind, units, want) == 0 && train(device, kind, units, got) == 0;
            double err = ran ? fmax(worst_error(got[0], want[0]), worst_error(got[1], want[1])) : 1e30;
            ok(err <= 1e-5, "%s, %d units, 3 steps on %s: variables match /cpu:0 (tolerance 1e-05)",
               optimizer_names[kind], units, device);
            ok(ran && worst_error(got[2], want[2]) == 0, "%s on %s: global_step (AssignAdd int32) is %d",
               optimizer_names[kind], device, ran ? fl_tensor_ints(got[2])[0] : -1);
            for (int i = 0; i < 3; i++) {
                fl_tensor_free(want[i]);
                fl_tensor_free(got[i]);
            }
        }
    }
}

/* Initializers draw on the host: the very same numbers on every device. */
static void check_initializers(int gpu)
{
    char device[16];
    snprintf(device, sizeof device, "/gpu:%d", gpu);
    fl_tensor *values[2] = {0};
    const char *devices[2] = {"/cpu:0", device};
    for (int i = 0; i < 2; i++) {
        fl_graph *g = fl_graph_new();
        fl_device_scope_push(g, devices[i]);
        fl_node *v = fl_get_variable(g, "v", fl_shape_make(2, 30, 7), fl_glorot_uniform_initializer(3));
        fl_node *init = fl_global_variables_initializer(g);
        fl_device_pop(g);
        fl_session *s = fl_session_new(g, NULL);
        if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) != 0 ||
            fl_session_run(s, NULL, 0, &v, 1, &values[i], NULL, 0) != 0)
            diag("%s", fl_session_error(s));
        fl_session_free(s);
        fl_graph_free(g);
    }
    ok(worst_error(values[1], values[0]) == 0, "RandomUniform initializer on %s: bit for bit as /cpu:0", device);
    fl_tensor_free(values[0]);
    fl_tensor_free(values[1]);
}

/* Bad input found by a kernel fails the run, naming the op. */
static void check_faults(int gpu)
{
    char device[16];
    snprintf(device, sizeof device, "/gpu:%d", gpu);
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, device);
    fl_node *labels = fl_placeholder(g, FL_INT32, fl_shape_make(1, 2), "labels");
    fl_node *logits = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 2, 3), "logits");
    fl_node *xent = fl_sparse_softmax_cross_entropy_with_logits(g, labels, logits, "xent");
    fl_node *quotient = fl_div(g, labels, labels, "quotient");
    fl_device_pop(g);
    int32_t bad[2] = {1, 7};
    float zeros[6] = {0};
    fl_tensor *l = fl_tensor_from_ints(fl_shape_make(1, 2), bad);
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(2, 2, 3), zeros);
    fl_feed feeds[2] = {{labels, l}, {logits, x}};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, feeds, 2, &xent, 1, &out, NULL, 0) != 0, "a label out of range fails the run on %s", device);
    contains(fl_session_error(s), "xent: label 7 in row 1 is outside [0, 3)", "... and the error names the op and the label");
    fl_tensor_free(out);
    out = NULL;
    fl_tensor_ints(l)[1] = 0;
    ok(fl_session_run(s, feeds, 2, &quotient, 1, &out, NULL, 0) != 0, "integer division by zero fails the run on %s", device);
    contains(fl_session_error(s), "quotient: integer division by zero", "... naming the op");
    fl_tensor_free(out);
    out = NULL;
    fl_tensor_ints(l)[1] = 2;
    ok(fl_session_run(s, feeds, 2, &xent, 1, &out, NULL, 0) == 0, "the next good run on %s succeeds", device);
    fl_tensor_free(out);
    fl_tensor_free(l);
    fl_tensor_free(x);
    fl_session_free(s);
    fl_graph_free(g);
}

int main(void)
{
    /* The tolerances are float32's: a CUDA GPU's TF32 products are checked
     * against their own, looser bound by test_tf32. */
    setenv("FLOWLAB_ALLOW_TF32", "0", 1);
    fl_device_info devices[16];
    int ndevices = fl_list_devices(devices, 16);
    if (ndevices < 2) {
        char why[512];
        snprintf(why, sizeof why, "no accelerator: the devices are /cpu:0 only (%s)",
                 fl_accelerator(0) ? "" : fl_last_error());
        skip_all(why);
    }
    for (int i = 1; i < ndevices; i++)
        diag("%s: %s [%s]", devices[i].name, devices[i].description, devices[i].backend);
    for (int gpu = 0; gpu < ndevices - 1; gpu++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            check_case(&cases[c], gpu);
        check_initializers(gpu);
        check_training(gpu);
        check_faults(gpu);
    }
    return done_testing();
}
