/* test_cuda.c: every op of the CUDA backend (/gpu:0) against the host (/cpu:0).
 * Each case builds the same op twice from the same random inputs, once per
 * device, with the gradient of sum(y * w) for each float input, and compares
 * the outputs element by element. Skipped, with the reason, where flowlab
 * has no CUDA device. Built with -DTEST_DEVICE='"/cpu:0"' -DTEST_NO_SKIP the
 * harness checks itself on a machine without a GPU. */
#include "gradcheck.h"
#include "flowlab_pictures.h"
#include "backend_entry.h"
#include "cuda_tests.h"

#ifndef TEST_DEVICE
#define TEST_DEVICE "/gpu:0"
#endif

/* Tolerances, relative to max(1, |want|): forward ops differ from the host
 * only by float rounding (FMA contraction, expf, summation order), and
 * gradients sum more terms (a convolution's filter gradient sums over the
 * batch and every pixel). */
#define FORWARD_TOL 1e-4
#define GRADIENT_TOL 1e-3

typedef fl_node *(*build_fn)(fl_graph *g, fl_node **xs);

typedef struct {
    const char *what;
    build_fn build;
    int nx;
    fl_tensor *x[4];
} op_case;

/* ---- comparing ---- */

static bool same_tensor(const fl_tensor *got, const fl_tensor *want, double tol, const char *what)
{
    if (!got || !want || got->dtype != want->dtype || !fl_shape_equal(got->shape, want->shape)) {
        ok(false, "%s: same dtype and shape", what);
        return false;
    }
    int64_t n = fl_shape_size(want->shape), bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        double g = got->dtype == FL_INT32 ? fl_tensor_ints(got)[i] : fl_tensor_floats(got)[i];
        double w = want->dtype == FL_INT32 ? fl_tensor_ints(want)[i] : fl_tensor_floats(want)[i];
        double scale = fabs(w) > 1.0 ? fabs(w) : 1.0;
        if (!(fabs(g - w) <= tol * scale) && !(isnan(g) && isnan(w))) {
            bad++;
            first = first < 0 ? i : first;
        }
    }
    ok(bad == 0, "%s", what);
    if (bad) {
        double g = got->dtype == FL_INT32 ? fl_tensor_ints(got)[first] : fl_tensor_floats(got)[first];
        double w = want->dtype == FL_INT32 ? fl_tensor_ints(want)[first] : fl_tensor_floats(want)[first];
        diag("%lld of %lld elements differ; first at %lld: got %.8g, want %.8g (tolerance %.1g)",
             (long long)bad, (long long)n, (long long)first, g, w, tol);
    }
    return bad == 0;
}

/* ---- one op on one device: its output and its input gradients ---- */

typedef struct {
    fl_node *xs[4];
    fl_node *fetches[5]; /* y, then the gradient of each float input */
    int nfetches;
} built_op;

static built_op build_on(fl_graph *g, const char *device, const op_case *c)
{
    built_op b = {.nfetches = 0};
    fl_device_scope_push(g, device);
    for (int i = 0; i < c->nx; i++)
        b.xs[i] = fl_placeholder(g, c->x[i]->dtype, c->x[i]->shape, NULL);
    fl_node *y = c->build(g, b.xs);
    b.fetches[b.nfetches++] = y;
    if (y && fl_node_dtype(y) == FL_FLOAT32) {
        fl_tensor *w = gc_random(fl_node_shape(y), -1.0f, 1.0f, 7);
        fl_node *loss = fl_reduce_sum(g, fl_mul(g, y, fl_constant(g, w, NULL), NULL), NULL, 0, false, NULL);
        fl_tensor_free(w);
        fl_node *grads[4] = {0};
        fl_gradients(g, loss, b.xs, c->nx, grads);
        for (int i = 0; i < c->nx; i++)
            if (grads[i])
                b.fetches[b.nfetches++] = grads[i];
    }
    fl_device_pop(g);
    return b;
}

static int run_op(fl_session *s, const op_case *c, const built_op *b, fl_tensor **out)
{
    fl_feed feeds[4];
    for (int i = 0; i < c->nx; i++)
        feeds[i] = (fl_feed){b->xs[i], c->x[i]};
    return fl_session_run(s, feeds, c->nx, b->fetches, b->nfetches, out, NULL, 0);
}

static void free_all(fl_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        fl_tensor_free(t[i]);
}

static void check_case(op_case c)
{
    fl_graph *g = fl_graph_new();
    built_op host = build_on(g, "/cpu:0", &c), dev = build_on(g, TEST_DEVICE, &c);
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *want[5] = {0}, *got[5] = {0};
    char what[160];
    if (fl_graph_error(g) || run_op(s, &c, &host, want) != 0 || run_op(s, &c, &dev, got) != 0) {
        ok(false, "%s: builds and runs on /cpu:0 and %s", c.what, TEST_DEVICE);
        diag("%s", fl_graph_error(g) ? fl_graph_error(g) : fl_session_error(s));
    } else {
        for (int i = 0; i < host.nfetches; i++) {
            if (i == 0)
                snprintf(what, sizeof what, "%s on %s matches /cpu:0", c.what, TEST_DEVICE);
            else
                snprintf(what, sizeof what, "%s: gradient %s matches /cpu:0", c.what,
                         fl_node_op_type(host.fetches[i]));
            same_tensor(got[i], want[i], i == 0 ? FORWARD_TOL : GRADIENT_TOL, what);
        }
    }
    free_all(want, host.nfetches);
    free_all(got, dev.nfetches);
    for (int i = 0; i < c.nx; i++)
        fl_tensor_free(c.x[i]);
    fl_session_free(s);
    fl_graph_free(g);
}

/* ---- inputs ---- */

static fl_tensor *randf(fl_shape shape, unsigned seed) { return gc_random(shape, -2.0f, 2.0f, seed); }

/* Away from zero, for divisors. */
/* Values in {-2, -1, 0, 1}: most pooling windows hold a tie, which the
 * host gives to its first tap, and so must the GPU. */
static fl_tensor *ties(fl_shape shape, unsigned seed)
{
    fl_tensor *t = randf(shape, seed);
    float *v = fl_tensor_floats(t);
    for (int64_t i = 0; i < fl_shape_size(shape); i++)
        v[i] = floorf(v[i]);
    return t;
}
static fl_tensor *positive(fl_shape shape, unsigned seed) { return gc_random(shape, 0.5f, 2.0f, seed); }

static fl_tensor *randi(fl_shape shape, int lo, int hi, unsigned seed)
{
    fl_tensor *t = fl_tensor_new(FL_INT32, shape);
    for (int64_t i = 0; i < fl_shape_size(shape); i++) {
        seed = seed * 1664525u + 1013904223u;
        fl_tensor_ints(t)[i] = lo + (int)((seed >> 8) % (unsigned)(hi - lo));
    }
    return t;
}

/* ---- the ops ---- */

static fl_node *matmul_nn(fl_graph *g, fl_node **x) { return fl_matmul(g, x[0], x[1], false, false, NULL); }
static fl_node *matmul_tn(fl_graph *g, fl_node **x) { return fl_matmul(g, x[0], x[1], true, false, NULL); }
static fl_node *matmul_nt(fl_graph *g, fl_node **x) { return fl_matmul(g, x[0], x[1], false, true, NULL); }
static fl_node *matmul_tt(fl_graph *g, fl_node **x) { return fl_matmul(g, x[0], x[1], true, true, NULL); }
static fl_node *add(fl_graph *g, fl_node **x) { return fl_add(g, x[0], x[1], NULL); }
static fl_node *sub(fl_graph *g, fl_node **x) { return fl_sub(g, x[0], x[1], NULL); }
static fl_node *mul(fl_graph *g, fl_node **x) { return fl_mul(g, x[0], x[1], NULL); }
static fl_node *divide(fl_graph *g, fl_node **x) { return fl_div(g, x[0], x[1], NULL); }
static fl_node *add_n(fl_graph *g, fl_node **x) { return fl_add_n(g, x, 3, NULL); }
static fl_node *relu(fl_graph *g, fl_node **x) { return fl_relu(g, x[0], NULL); }
static fl_node *sigmoid(fl_graph *g, fl_node **x) { return fl_sigmoid(g, x[0], NULL); }
static fl_node *tanh_op(fl_graph *g, fl_node **x) { return fl_tanh(g, x[0], NULL); }
static fl_node *softplus(fl_graph *g, fl_node **x) { return fl_softplus(g, x[0], NULL); }
static fl_node *softmax(fl_graph *g, fl_node **x) { return fl_softmax(g, x[0], NULL); }
static fl_node *xent(fl_graph *g, fl_node **x)
{
    return fl_sparse_softmax_cross_entropy_with_logits(g, x[0], x[1], NULL);
}
static fl_node *sum_all(fl_graph *g, fl_node **x) { return fl_reduce_sum(g, x[0], NULL, 0, false, NULL); }
static fl_node *sum_axis1(fl_graph *g, fl_node **x)
{
    const int axes[1] = {1};
    return fl_reduce_sum(g, x[0], axes, 1, false, NULL);
}
static fl_node *mean_axes02_keep(fl_graph *g, fl_node **x)
{
    const int axes[2] = {0, 2};
    return fl_reduce_mean(g, x[0], axes, 2, true, NULL);
}
static fl_node *mean_all(fl_graph *g, fl_node **x) { return fl_reduce_mean(g, x[0], NULL, 0, false, NULL); }
static fl_node *int_mean_axis0(fl_graph *g, fl_node **x)
{
    const int axes[1] = {0};
    return fl_reduce_mean(g, x[0], axes, 1, false, NULL);
}
static fl_node *reshape(fl_graph *g, fl_node **x) { return fl_reshape(g, x[0], fl_shape_make(2, -1, 6), NULL); }
static fl_node *concat0(fl_graph *g, fl_node **x) { return fl_concat(g, x, 2, 0, NULL); }
static fl_node *concat1(fl_graph *g, fl_node **x) { return fl_concat(g, x, 2, 1, NULL); }
static fl_node *slice1(fl_graph *g, fl_node **x) { return fl_slice(g, x[0], 1, 2, 3, NULL); }
static fl_node *split_part(fl_graph *g, fl_node **x)
{
    fl_node *parts[3];
    return fl_split(g, x[0], 3, 0, parts, NULL) == 0 ? fl_mul(g, parts[1], parts[2], NULL) : NULL;
}
static fl_node *cast_to_int(fl_graph *g, fl_node **x) { return fl_cast(g, x[0], FL_INT32, NULL); }
static fl_node *cast_to_float(fl_graph *g, fl_node **x) { return fl_cast(g, x[0], FL_FLOAT32, NULL); }
static fl_node *argmax1(fl_graph *g, fl_node **x) { return fl_argmax(g, x[0], 1, NULL); }
static fl_node *argmax0(fl_graph *g, fl_node **x) { return fl_argmax(g, x[0], 0, NULL); }
static fl_node *equal(fl_graph *g, fl_node **x) { return fl_equal(g, x[0], x[1], NULL); }
static fl_node *identity(fl_graph *g, fl_node **x)
{
    return fl_identity(g, fl_stop_gradient(g, fl_mul(g, x[0], x[0], NULL), NULL), NULL);
}

static fl_node *conv_same_s1(fl_graph *g, fl_node **x) { return fl_conv2d(g, x[0], x[1], 1, 1, FL_SAME, NULL); }
static fl_node *conv_same_s2(fl_graph *g, fl_node **x) { return fl_conv2d(g, x[0], x[1], 2, 2, FL_SAME, NULL); }
static fl_node *conv_valid_s2(fl_graph *g, fl_node **x) { return fl_conv2d(g, x[0], x[1], 2, 1, FL_VALID, NULL); }
static fl_node *pool_2x2_s2(fl_graph *g, fl_node **x) { return fl_max_pool2d(g, x[0], 2, 2, 2, 2, FL_SAME, NULL); }
static fl_node *pool_3x3_s2(fl_graph *g, fl_node **x) { return fl_max_pool2d(g, x[0], 3, 3, 2, 2, FL_SAME, NULL); }
static fl_node *pool_3x3_s1(fl_graph *g, fl_node **x) { return fl_max_pool2d(g, x[0], 3, 3, 1, 1, FL_SAME, NULL); }
static fl_node *pool_valid(fl_graph *g, fl_node **x) { return fl_max_pool2d(g, x[0], 3, 2, 2, 1, FL_VALID, NULL); }

static void test_math(void)
{
    check_case((op_case){"MatMul", matmul_nn, 2, {randf(fl_shape_make(2, 5, 7), 1), randf(fl_shape_make(2, 7, 3), 2)}});
    check_case((op_case){"MatMul transpose_a", matmul_tn, 2, {randf(fl_shape_make(2, 7, 5), 3), randf(fl_shape_make(2, 7, 3), 4)}});
    check_case((op_case){"MatMul transpose_b", matmul_nt, 2, {randf(fl_shape_make(2, 5, 7), 5), randf(fl_shape_make(2, 3, 7), 6)}});
    check_case((op_case){"MatMul both transposed", matmul_tt, 2, {randf(fl_shape_make(2, 7, 5), 7), randf(fl_shape_make(2, 3, 7), 8)}});
    check_case((op_case){"MatMul 130x300 by 300x70", matmul_nn, 2, {randf(fl_shape_make(2, 130, 300), 9), randf(fl_shape_make(2, 300, 70), 10)}});
    check_case((op_case){"Add, bias broadcast", add, 2, {randf(fl_shape_make(2, 6, 4), 11), randf(fl_shape_make(1, 4), 12)}});
    /* The bias gradient (SumToShape) of chapter 1's first convolution, and one
     * whose channels are not a multiple of the kernel's 32-column tile. */
    check_case((op_case){"Add, bias of 32 over [32,28,28,32]", add, 2, {randf(fl_shape_make(4, 32, 28, 28, 32), 97), randf(fl_shape_make(1, 32), 98)}});
    check_case((op_case){"Add, bias of 45 over [9,7,5,45]", add, 2, {randf(fl_shape_make(4, 9, 7, 5, 45), 99), randf(fl_shape_make(1, 45), 100)}});
    check_case((op_case){"Sub, scalar broadcast", sub, 2, {randf(fl_shape_make(2, 6, 4), 13), randf(fl_shape_make(0), 14)}});
    check_case((op_case){"Mul, NHWC by C", mul, 2, {randf(fl_shape_make(4, 2, 3, 3, 5), 15), randf(fl_shape_make(1, 5), 16)}});
    check_case((op_case){"Div, broadcast divisor", divide, 2, {randf(fl_shape_make(2, 6, 4), 17), positive(fl_shape_make(1, 4), 18)}});
    check_case((op_case){"Div, broadcast dividend", divide, 2, {randf(fl_shape_make(1, 4), 19), positive(fl_shape_make(2, 6, 4), 20)}});
    check_case((op_case){"AddN of 3", add_n, 3, {randf(fl_shape_make(2, 4, 5), 21), randf(fl_shape_make(2, 4, 5), 22), randf(fl_shape_make(2, 4, 5), 23)}});
    check_case((op_case){"int32 Add", add, 2, {randi(fl_shape_make(2, 6, 4), -100, 100, 24), randi(fl_shape_make(1, 4), -100, 100, 25)}});
    check_case((op_case){"int32 Sub", sub, 2, {randi(fl_shape_make(1, 9), -100, 100, 26), randi(fl_shape_make(1, 9), -100, 100, 27)}});
    check_case((op_case){"int32 Mul", mul, 2, {randi(fl_shape_make(1, 9), -100, 100, 28), randi(fl_shape_make(0), 2, 5, 29)}});
    check_case((op_case){"int32 Div", divide, 2, {randi(fl_shape_make(1, 9), -100, 100, 30), randi(fl_shape_make(1, 9), 1, 7, 31)}});
    check_case((op_case){"AddN of int32", add_n, 3, {randi(fl_shape_make(1, 8), -9, 9, 32), randi(fl_shape_make(1, 8), -9, 9, 33), randi(fl_shape_make(1, 8), -9, 9, 34)}});
}

static void test_nn(void)
{
    check_case((op_case){"Relu", relu, 1, {randf(fl_shape_make(2, 8, 9), 40)}});
    check_case((op_case){"Sigmoid", sigmoid, 1, {randf(fl_shape_make(2, 8, 9), 41)}});
    check_case((op_case){"Tanh", tanh_op, 1, {randf(fl_shape_make(2, 8, 9), 42)}});
    check_case((op_case){"Softplus", softplus, 1, {randf(fl_shape_make(2, 8, 9), 45)}});
    check_case((op_case){"Softmax", softmax, 1, {randf(fl_shape_make(2, 33, 10), 43)}});
    check_case((op_case){"Softmax over 1000 classes", softmax, 1, {randf(fl_shape_make(2, 3, 1000), 44)}});
    check_case((op_case){"SparseSoftmaxCrossEntropyWithLogits", xent, 2, {randi(fl_shape_make(1, 300), 0, 10, 45), randf(fl_shape_make(2, 300, 10), 46)}});
}

static void test_reduce_and_arrays(void)
{
    check_case((op_case){"Sum of all", sum_all, 1, {randf(fl_shape_make(2, 40, 30), 50)}});
    check_case((op_case){"Sum over axis 1", sum_axis1, 1, {randf(fl_shape_make(3, 4, 500, 3), 51)}});
    check_case((op_case){"Mean over axes 0 and 2, keep_dims", mean_axes02_keep, 1, {randf(fl_shape_make(4, 5, 3, 7, 2), 52)}});
    check_case((op_case){"Mean of 100000", mean_all, 1, {randf(fl_shape_make(1, 100000), 53)}});
    check_case((op_case){"int32 Sum of all", sum_all, 1, {randi(fl_shape_make(2, 40, 30), -1000, 1000, 54)}});
    check_case((op_case){"int32 Mean over axis 0", int_mean_axis0, 1, {randi(fl_shape_make(2, 7, 5), -1000, 1000, 55)}});
    check_case((op_case){"Reshape", reshape, 1, {randf(fl_shape_make(3, 2, 3, 4), 56)}});
    check_case((op_case){"Concat axis 0", concat0, 2, {randf(fl_shape_make(2, 3, 4), 57), randf(fl_shape_make(2, 5, 4), 58)}});
    check_case((op_case){"Concat axis 1", concat1, 2, {randf(fl_shape_make(3, 2, 3, 4), 59), randf(fl_shape_make(3, 2, 1, 4), 60)}});
    check_case((op_case){"int32 Concat axis 1", concat1, 2, {randi(fl_shape_make(2, 3, 2), 0, 9, 61), randi(fl_shape_make(2, 3, 4), 0, 9, 62)}});
    check_case((op_case){"Slice", slice1, 1, {randf(fl_shape_make(3, 2, 6, 3), 63)}});
    check_case((op_case){"Split", split_part, 1, {randf(fl_shape_make(2, 9, 4), 64)}});
    check_case((op_case){"Cast float32 to int32", cast_to_int, 1, {gc_random(fl_shape_make(1, 50), -50.0f, 50.0f, 65)}});
    check_case((op_case){"Cast int32 to float32", cast_to_float, 1, {randi(fl_shape_make(1, 50), -50, 50, 66)}});
    check_case((op_case){"ArgMax axis 1", argmax1, 1, {randf(fl_shape_make(2, 20, 10), 67)}});
    check_case((op_case){"ArgMax axis 0 of int32", argmax0, 1, {randi(fl_shape_make(3, 6, 4, 3), 0, 5, 68)}});
    check_case((op_case){"Equal", equal, 2, {randi(fl_shape_make(2, 5, 4), 0, 3, 69), randi(fl_shape_make(1, 4), 0, 3, 70)}});
    check_case((op_case){"Identity and StopGradient", identity, 1, {randf(fl_shape_make(2, 3, 3), 71)}});
}

static void test_conv(void)
{
    /* 7x7, 3x3 stride 1 SAME: padding 1 and 1, cuDNN pads by itself. */
    check_case((op_case){"Conv2D 3x3 SAME stride 1", conv_same_s1, 2, {randf(fl_shape_make(4, 2, 7, 7, 3), 80), randf(fl_shape_make(4, 3, 3, 3, 4), 81)}});
    /* 2x2 stride 1 SAME: total padding 1, all of it after. */
    check_case((op_case){"Conv2D 2x2 SAME stride 1 (uneven padding)", conv_same_s1, 2, {randf(fl_shape_make(4, 2, 6, 5, 3), 82), randf(fl_shape_make(4, 2, 2, 3, 2), 83)}});
    /* 8x8, 3x3 stride 2 SAME: total 1, uneven; 5x6 gives 2 and 1. */
    check_case((op_case){"Conv2D 3x3 SAME stride 2 (uneven padding)", conv_same_s2, 2, {randf(fl_shape_make(4, 3, 8, 8, 2), 84), randf(fl_shape_make(4, 3, 3, 2, 5), 85)}});
    check_case((op_case){"Conv2D 3x3 SAME stride 2, 5x6", conv_same_s2, 2, {randf(fl_shape_make(4, 2, 5, 6, 2), 86), randf(fl_shape_make(4, 3, 3, 2, 3), 87)}});
    check_case((op_case){"Conv2D 3x2 VALID strides 2,1", conv_valid_s2, 2, {randf(fl_shape_make(4, 2, 9, 6, 3), 88), randf(fl_shape_make(4, 3, 2, 3, 4), 89)}});
    check_case((op_case){"MaxPool 2x2 stride 2 SAME", pool_2x2_s2, 1, {randf(fl_shape_make(4, 2, 8, 8, 3), 90)}});
    check_case((op_case){"MaxPool 3x3 stride 2 SAME (uneven padding)", pool_3x3_s2, 1, {randf(fl_shape_make(4, 2, 8, 7, 3), 91)}});
    check_case((op_case){"MaxPool 3x3 stride 1 SAME", pool_3x3_s1, 1, {randf(fl_shape_make(4, 2, 5, 5, 4), 92)}});
    check_case((op_case){"MaxPool 3x2 VALID strides 2,1", pool_valid, 1, {randf(fl_shape_make(4, 2, 7, 6, 2), 93)}});
    /* Ties: the gradient goes to each window's first maximum, as on the host. */
    check_case((op_case){"MaxPool 2x2 stride 2 SAME, ties", pool_2x2_s2, 1, {ties(fl_shape_make(4, 2, 8, 8, 3), 94)}});
    check_case((op_case){"MaxPool 3x3 stride 1 SAME, ties", pool_3x3_s1, 1, {ties(fl_shape_make(4, 2, 5, 5, 4), 95)}});
    /* Chapter 1's first pooling layer: a grid of many blocks. */
    check_case((op_case){"MaxPool 2x2 stride 2 SAME, [16,28,28,32]", pool_2x2_s2, 1, {randf(fl_shape_make(4, 16, 28, 28, 32), 96)}});
}

/* ---- training: initializers, optimizers, and the memory of a warm step ---- */

typedef struct {
    fl_graph *g;
    fl_node *x, *y, *loss, *train, *vars[4];
} model;

/* A small CNN, all of it on device: conv, pool, dense, loss, optimizer. */
static model build_model(const char *device, fl_optimizer *opt)
{
    model m = {.g = fl_graph_new()};
    fl_graph *g = m.g;
    fl_graph_set_random_seed(g, 5);
    fl_device_scope_push(g, device);
    m.x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 8, 8, 1), "x");
    m.y = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "y");
    m.vars[0] = fl_get_variable(g, "conv", fl_shape_make(4, 3, 3, 1, 4), fl_truncated_normal_initializer(0, 0.3f, 0));
    m.vars[1] = fl_get_variable(g, "conv_bias", fl_shape_make(1, 4), fl_constant_initializer(0.1f));
    m.vars[2] = fl_get_variable(g, "dense", fl_shape_make(2, 64, 3), fl_glorot_uniform_initializer(0));
    m.vars[3] = fl_get_variable(g, "dense_bias", fl_shape_make(1, 3), fl_zeros_initializer());
    fl_node *h = fl_relu(g, fl_add(g, fl_conv2d(g, m.x, m.vars[0], 1, 1, FL_SAME, NULL), m.vars[1], NULL), NULL);
    h = fl_reshape(g, fl_max_pool2d(g, h, 2, 2, 2, 2, FL_SAME, NULL), fl_shape_make(2, -1, 64), NULL);
    fl_node *logits = fl_add(g, fl_matmul(g, h, m.vars[2], false, false, NULL), m.vars[3], NULL);
    m.loss = fl_reduce_mean(g, fl_sparse_softmax_cross_entropy_with_logits(g, m.y, logits, NULL), NULL, 0, false, "loss");
    m.train = fl_minimize(opt, g, m.loss, fl_get_or_create_global_step(g), "train");
    fl_device_pop(g);
    return m;
}

static void batch(fl_tensor **x, fl_tensor **y, unsigned seed)
{
    *x = gc_random(fl_shape_make(4, 6, 8, 8, 1), 0.0f, 1.0f, seed);
    *y = randi(fl_shape_make(1, 6), 0, 3, seed + 1);
}

static int step(fl_session *s, const model *m, unsigned seed, fl_tensor **loss)
{
    fl_tensor *x, *y;
    batch(&x, &y, seed);
    fl_feed feeds[2] = {{m->x, x}, {m->y, y}};
    int rc = fl_session_run(s, feeds, 2, &m->loss, 1, loss, &m->train, 1);
    fl_tensor_free(x);
    fl_tensor_free(y);
    return rc;
}

/* Runs init and `steps` steps, traced or not; returns the session (the
 * caller frees it). */
static fl_session *train_with(const model *m, int steps, bool traced, fl_tensor **last_loss)
{
    fl_session *s = fl_session_new(m->g, NULL);
    fl_session_set_tracing(s, traced);
    fl_node *init = fl_global_variables_initializer(m->g);
    *last_loss = NULL;
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) != 0)
        return s;
    for (int i = 0; i < steps; i++) {
        fl_tensor_free(*last_loss);
        if (step(s, m, 100u + (unsigned)i, last_loss) != 0)
            break;
    }
    return s;
}

static fl_session *train(const model *m, int steps, fl_tensor **last_loss)
{
    return train_with(m, steps, false, last_loss);
}

static void check_training(const char *what, fl_optimizer *(*make)(void))
{
    fl_optimizer *opt_host = make(), *opt_dev = make();
    model host = build_model("/cpu:0", opt_host), dev = build_model(TEST_DEVICE, opt_dev);
    fl_tensor *host_loss, *dev_loss;
    fl_session *hs = train(&host, 3, &host_loss), *ds = train(&dev, 3, &dev_loss);
    char line[160];
    snprintf(line, sizeof line, "%s: loss after 3 steps matches /cpu:0", what);
    if (!host_loss || !dev_loss) {
        ok(false, "%s: trains on both devices", what);
        diag("%s | %s", fl_session_error(hs), fl_session_error(ds));
    } else {
        same_tensor(dev_loss, host_loss, GRADIENT_TOL, line);
        fl_tensor *hv[4] = {0}, *dv[4] = {0};
        fl_session_run(hs, NULL, 0, host.vars, 4, hv, NULL, 0);
        fl_session_run(ds, NULL, 0, dev.vars, 4, dv, NULL, 0);
        for (int i = 0; i < 4; i++) {
            snprintf(line, sizeof line, "%s: %s after 3 steps matches /cpu:0", what, fl_node_name(host.vars[i]));
            same_tensor(dv[i], hv[i], GRADIENT_TOL, line);
        }
        free_all(hv, 4);
        free_all(dv, 4);
    }
    fl_tensor_free(host_loss);
    fl_tensor_free(dev_loss);
    fl_session_free(hs);
    fl_session_free(ds);
    fl_graph_free(host.g);
    fl_graph_free(dev.g);
    fl_optimizer_free(opt_host);
    fl_optimizer_free(opt_dev);
}

static fl_optimizer *sgd(void) { return fl_gradient_descent_optimizer(0.1f); }
static fl_optimizer *momentum(void) { return fl_momentum_optimizer(0.05f, 0.9f, false); }
static fl_optimizer *nesterov(void) { return fl_momentum_optimizer(0.05f, 0.9f, true); }
/* A larger epsilon than usual: with 1e-7 a gradient that is ~0 on one device
 * and a rounding error on the other would move its weight by up to lr. */
static fl_optimizer *adam(void) { return fl_adam_optimizer(0.01f, 0.9f, 0.999f, 1e-3f); }

static fl_device *device_under_test(void)
{
    return strcmp(TEST_DEVICE, "/cpu:0") == 0 ? fl_host_device() : fl_accelerator(0);
}

/* How many times the device's pool has called cudaMalloc, and how many
 * cuDNN plans it keeps, asked of the CUDA module (cuda/cuda_stats.h). */
static uint64_t device_mallocs(fl_device *d)
{
    uint64_t (*mallocs)(void *impl) = NULL;
    if (d && !d->is_host)
        *(void **)&mallocs = cuda_module_symbol("fl_cuda_pool_mallocs");
    return mallocs ? mallocs(d->impl) : 0;
}

static uint64_t graph_replays(fl_device *d)
{
    uint64_t (*replays)(void *impl) = NULL;
    if (d && !d->is_host)
        *(void **)&replays = cuda_module_symbol("fl_cuda_graph_replays");
    return replays ? replays(d->impl) : 0;
}

static int device_plans(fl_device *d)
{
    void (*counts)(void *impl, int *plans, int *nondeterministic) = NULL;
    int plans = 0, nondeterministic = 0;
    if (d && !d->is_host)
        *(void **)&counts = cuda_module_symbol("fl_cuda_conv_plan_counts");
    if (counts)
        counts(d->impl, &plans, &nondeterministic);
    return plans;
}

/* After two steps every buffer exists: the third and later allocate nothing. */
static void test_warm_step(void)
{
    fl_optimizer *opt = fl_adam_optimizer(0.01f, 0.9f, 0.999f, 1e-7f);
    model m = build_model(TEST_DEVICE, opt);
    fl_tensor *loss;
    fl_session *s = train(&m, 2, &loss);
    fl_device *d = device_under_test();
    uint64_t allocations = d ? d->allocations : 0, mallocs = device_mallocs(d);
    int plans = device_plans(d);
    bool ran = loss != NULL;
    for (int i = 0; ran && i < 3; i++) {
        fl_tensor_free(loss);
        loss = NULL;
        ran = step(s, &m, 200u + (unsigned)i, &loss) == 0;
    }
    ok(ran && d, "three warm training steps run");
    ok(d && d->allocations == allocations, "a warm step asks the device for no buffer");
    ok(d && device_mallocs(d) == mallocs, "a warm step makes no cudaMalloc");
    /* conv forward, its filter gradient, the pool: made once, in step 1. */
    if (!ok(d && device_plans(d) == plans && (plans > 0 || d->is_host),
            "a warm step makes no cuDNN plan: the shapes' plans are kept"))
        diag("%d plans after two steps, %d after five", plans, device_plans(d));
    fl_tensor_free(loss);
    fl_session_free(s);
    fl_graph_free(m.g);
    fl_optimizer_free(opt);
}

/* Warm steps are replayed as CUDA graphs (cuda/cuda_graph.c) and compute
 * what op-by-op launches compute: a traced session runs op by op. */
static void test_graph_replay(void)
{
    fl_device *d = device_under_test();
    if (!d || d->is_host) {
        skip("warm steps replayed as CUDA graphs", "the device under test is not a CUDA GPU");
        return;
    }
    fl_optimizer *opt_graph = adam(), *opt_ops = adam();
    model graph_m = build_model(TEST_DEVICE, opt_graph), ops_m = build_model(TEST_DEVICE, opt_ops);
    uint64_t before = d ? graph_replays(d) : 0;
    fl_tensor *graph_loss, *ops_loss;
    fl_session *gs = train(&graph_m, 5, &graph_loss);
    uint64_t replayed = d ? graph_replays(d) - before : 0;
    ok(replayed >= 3, "steps 3 to 5 are replayed as CUDA graphs (%llu replays)", (unsigned long long)replayed);
    fl_session *os = train_with(&ops_m, 5, true, &ops_loss);
    ok(d && graph_replays(d) == before + replayed, "a traced session launches op by op");
    if (graph_loss && ops_loss)
        same_tensor(graph_loss, ops_loss, GRADIENT_TOL, "the replayed steps' loss matches op-by-op launches");
    else
        ok(false, "both sessions train (%s | %s)", fl_session_error(gs), fl_session_error(os));
    fl_tensor_free(graph_loss);
    fl_tensor_free(ops_loss);
    fl_session_free(gs);
    fl_session_free(os);
    fl_graph_free(graph_m.g);
    fl_graph_free(ops_m.g);
    fl_optimizer_free(opt_graph);
    fl_optimizer_free(opt_ops);
}

/* A bad label is found on the device and reported when the run waits. */
static void test_bad_label(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, TEST_DEVICE);
    fl_node *labels = fl_placeholder(g, FL_INT32, fl_shape_make(1, 3), "labels");
    fl_node *logits = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 3, 4), "logits");
    fl_node *loss = fl_sparse_softmax_cross_entropy_with_logits(g, labels, logits, NULL);
    fl_device_pop(g);
    fl_tensor *lv = randi(fl_shape_make(1, 3), 0, 4, 1), *xv = randf(fl_shape_make(2, 3, 4), 2);
    fl_tensor_ints(lv)[1] = 7;
    fl_feed feeds[2] = {{labels, lv}, {logits, xv}};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    /* Two good runs first: the bad one is then a replayed CUDA graph, whose
     * checking kernel must still report into a slot that names its op. */
    fl_tensor_ints(lv)[1] = 3;
    for (int i = 0; i < 2; i++) {
        ok(fl_session_run(s, feeds, 2, &loss, 1, &out, NULL, 0) == 0, "good labels, run %d", i + 1);
        fl_tensor_free(out);
        out = NULL;
    }
    fl_tensor_ints(lv)[1] = 7;
    ok(fl_session_run(s, feeds, 2, &loss, 1, &out, NULL, 0) != 0, "a label out of range fails the run");
    fl_tensor_free(out); /* the fetch may be made before the wait that fails */
    out = NULL;
    contains(fl_session_error(s), "label 7 in row 1 is outside [0, 4)", "and the error names the label and row");
    fl_tensor_ints(lv)[1] = 3;
    ok(fl_session_run(s, feeds, 2, &loss, 1, &out, NULL, 0) == 0, "the next run, with good labels, succeeds");
    fl_tensor_free(out);
    fl_tensor_free(lv);
    fl_tensor_free(xv);
    fl_session_free(s);
    fl_graph_free(g);
}

int main(void)
{
    setenv("FLOWLAB_BACKEND", "cuda", 1); /* before the first flowlab call picks a backend */
    /* Float32's tolerances: TF32 convolutions and products have test_tf32. */
    setenv("FLOWLAB_ALLOW_TF32", "0", 1);
    require_cuda();
    test_math();
    test_nn();
    test_reduce_and_arrays();
    test_conv();
    check_training("GradientDescent", sgd);
    check_training("Momentum", momentum);
    check_training("Momentum (Nesterov)", nesterov);
    check_training("Adam", adam);
    test_warm_step();
    test_graph_replay();
    test_bad_label();
    return done_testing();
}
