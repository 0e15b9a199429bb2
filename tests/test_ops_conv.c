/* test_ops_conv.c: Conv2D and MaxPool through a real session: hand-checked
 * values, a plain reference on random multi-channel inputs, shape inference
 * and its error text, and gradients against central differences. */
#include "flowlab.h"
#include "conv_geometry.h" /* the window arithmetic every backend shares */
#include "tap.h"
#include "gradcheck.h"

static fl_shape nhwc(int n, int h, int w, int c) { return fl_shape_make(4, n, h, w, c); }

/* start, start + step, ... in row-major order: easy to follow by hand. */
static fl_tensor *iota(fl_shape shape, float start, float step)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, shape);
    float *v = fl_tensor_floats(t);
    for (int64_t i = 0; i < fl_shape_size(shape); i++)
        v[i] = start + step * (float)i;
    return t;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static float uniform(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float)((rng_state >> 40) / (double)(1 << 24));
}

static fl_tensor *random_tensor(fl_shape shape)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, shape);
    float *v = fl_tensor_floats(t);
    for (int64_t i = 0; i < fl_shape_size(shape); i++)
        v[i] = uniform(-1.0f, 1.0f);
    return t;
}

/* Distinct values 0.1 apart, shuffled: no two in a window are close enough
 * for a finite-difference step to change which one is the maximum. */
static fl_tensor *distinct_tensor(fl_shape shape)
{
    fl_tensor *t = iota(shape, -1.0f, 0.1f);
    float *v = fl_tensor_floats(t);
    for (int64_t i = fl_shape_size(shape) - 1; i > 0; i--) {
        int64_t j = (int64_t)(uniform(0.0f, 1.0f) * (float)(i + 1)) % (i + 1);
        float tmp = v[i];
        v[i] = v[j];
        v[j] = tmp;
    }
    return t;
}

/* A placeholder shaped like t but with the batch unknown, so every run
 * exercises the run-time shape path as a lab's [None, ...] input does. */
static fl_node *batch_placeholder(fl_graph *g, const fl_tensor *t, const char *name)
{
    fl_shape shape = t->shape;
    shape.dims[0] = -1;
    return fl_placeholder(g, FL_FLOAT32, shape, name);
}

/* Runs fetch with nodes[i] fed values[i]; NULL (and a diagnostic) on failure. */
static fl_tensor *run_fed(fl_graph *g, fl_node *fetch, fl_node *const *nodes,
                          fl_tensor *const *values, int n)
{
    if (!fetch) {
        diag("build failed: %s", fl_graph_error(g));
        return NULL;
    }
    fl_feed feeds[4];
    for (int i = 0; i < n; i++)
        feeds[i] = (fl_feed){nodes[i], values[i]};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    if (!s || fl_session_run(s, feeds, n, &fetch, 1, &out, NULL, 0) != 0) {
        diag("run failed: %s", s ? fl_session_error(s) : fl_last_error());
        out = NULL;
    }
    fl_session_free(s);
    return out;
}

static bool values_match(const fl_tensor *got, fl_shape shape, const float *want, double tol)
{
    char sg[64], sw[64];
    if (!got)
        return false;
    if (!fl_shape_equal(got->shape, shape)) {
        diag("shape %s, want %s", fl_shape_format(got->shape, sg, sizeof sg),
             fl_shape_format(shape, sw, sizeof sw));
        return false;
    }
    const float *v = fl_tensor_floats(got);
    for (int64_t i = 0; i < fl_shape_size(shape); i++)
        if (fabs(v[i] - want[i]) > tol * (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0)) {
            diag("element %lld is %.7g, want %.7g", (long long)i, v[i], want[i]);
            return false;
        }
    return true;
}

/* ---- TensorFlow's window arithmetic, written out plainly ---- */

typedef struct {
    int in, k, stride;
    fl_padding padding;
    int out, pad_before, pad_after;
} size_case;

static void test_window_sizes(void)
{
    const size_case cases[] = {
        {28, 5, 1, FL_SAME, 28, 2, 2}, {4, 3, 2, FL_SAME, 2, 0, 1},    {5, 3, 2, FL_SAME, 3, 1, 1},
        {10, 4, 3, FL_SAME, 4, 1, 2},  {1, 3, 1, FL_SAME, 1, 1, 1},    {6, 1, 4, FL_SAME, 2, 0, 0},
        {7, 2, 2, FL_VALID, 3, 0, 0},  {28, 5, 1, FL_VALID, 24, 0, 0}, {3, 3, 5, FL_VALID, 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const size_case *c = &cases[i];
        int out = fl_conv_output_size(c->in, c->k, c->stride, c->padding);
        int pad = fl_conv_pad_before(c->in, c->k, c->stride, c->padding);
        /* The same axis as a window's height: the padding after is what cuDNN adds by hand. */
        fl_conv_geometry g = {.h = c->in, .kh = c->k, .sh = c->stride, .oh = out, .pad_top = pad};
        int after = fl_conv_pad_bottom(&g);
        ok(out == c->out && pad == c->pad_before && after == c->pad_after,
           "%s in %d k %d stride %d: out %d, pad %d before and %d after",
           c->padding == FL_SAME ? "SAME" : "VALID", c->in, c->k, c->stride, out, pad, after);
    }
    ok(fl_conv_output_size(-1, 3, 2, FL_SAME) == -1, "unknown input size stays unknown");
    ok(fl_conv_output_size(9, -1, 2, FL_SAME) == 5, "SAME output does not depend on the window");
}

/* ---- forward values ---- */

static void check_conv(const char *what, fl_tensor *x, fl_tensor *f, int sh, int sw, fl_padding p,
                       fl_shape want_shape, const float *want)
{
    fl_graph *g = fl_graph_new();
    fl_node *nodes[2] = {batch_placeholder(g, x, "x"), fl_placeholder(g, FL_FLOAT32, f->shape, "f")};
    fl_node *y = fl_conv2d(g, nodes[0], nodes[1], sh, sw, p, NULL);
    fl_tensor *values[2] = {x, f};
    fl_tensor *got = run_fed(g, y, nodes, values, 2);
    ok(values_match(got, want_shape, want, 1e-5), "conv2d %s", what);
    fl_tensor_free(got);
    fl_tensor_free(x);
    fl_tensor_free(f);
    fl_graph_free(g);
}

static void test_conv_forward(void)
{
    const float valid[] = {37, 47, 67, 77};
    check_conv("VALID stride 1, 3x3 image, 2x2 filter", iota(nhwc(1, 3, 3, 1), 1, 1),
               iota(fl_shape_make(4, 2, 2, 1, 1), 1, 1), 1, 1, FL_VALID, nhwc(1, 2, 2, 1), valid);
    const float same[] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
    check_conv("SAME stride 1, 3x3 box filter pads one each side", iota(nhwc(1, 3, 3, 1), 1, 1),
               iota(fl_shape_make(4, 3, 3, 1, 1), 1, 0), 1, 1, FL_SAME, nhwc(1, 3, 3, 1), same);
    const float after[] = {54, 45, 72, 54};
    check_conv("SAME stride 2, 4x4 image: the odd pad goes after", iota(nhwc(1, 4, 4, 1), 1, 1),
               iota(fl_shape_make(4, 3, 3, 1, 1), 1, 0), 2, 2, FL_SAME, nhwc(1, 2, 2, 1), after);
    const float both[] = {16, 33, 28, 69, 117, 87, 76, 123, 88};
    check_conv("SAME stride 2, 5x5 image: pad one each side", iota(nhwc(1, 5, 5, 1), 1, 1),
               iota(fl_shape_make(4, 3, 3, 1, 1), 1, 0), 2, 2, FL_SAME, nhwc(1, 3, 3, 1), both);
    const float valid2[] = {63, 81, 153, 171};
    check_conv("VALID stride 2, 5x5 image", iota(nhwc(1, 5, 5, 1), 1, 1),
               iota(fl_shape_make(4, 3, 3, 1, 1), 1, 0), 2, 2, FL_VALID, nhwc(1, 2, 2, 1), valid2);
    const float strides[] = {12, 15, 18, 30, 33, 36};
    check_conv("VALID strides 2x1, 5x3 image, 3x1 filter", iota(nhwc(1, 5, 3, 1), 1, 1),
               iota(fl_shape_make(4, 3, 1, 1, 1), 1, 0), 2, 1, FL_VALID, nhwc(1, 2, 3, 1), strides);
    const float channels[] = {9, 12, 15, 19, 26, 33};
    check_conv("batch 2, 2 channels in, 3 out", iota(nhwc(2, 1, 1, 2), 1, 1),
               iota(fl_shape_make(4, 1, 1, 2, 3), 1, 1), 1, 1, FL_VALID, nhwc(2, 1, 1, 3), channels);
}

static void check_pool(const char *what, fl_tensor *x, int k, int s, fl_padding p,
                       fl_shape want_shape, const float *want)
{
    fl_graph *g = fl_graph_new();
    fl_node *xn = batch_placeholder(g, x, "x");
    fl_node *y = fl_max_pool2d(g, xn, k, k, s, s, p, NULL);
    fl_tensor *got = run_fed(g, y, &xn, &x, 1);
    ok(values_match(got, want_shape, want, 0), "max_pool %s", what);
    fl_tensor_free(got);
    fl_tensor_free(x);
    fl_graph_free(g);
}

static void test_pool_forward(void)
{
    const float valid[] = {6, 8, 14, 16};
    check_pool("VALID 2x2 stride 2", iota(nhwc(1, 4, 4, 1), 1, 1), 2, 2, FL_VALID,
               nhwc(1, 2, 2, 1), valid);
    const float negative[] = {-1, -2, -4, -6, -7, -9, -16, -17, -19};
    check_pool("SAME 3x3 stride 2 on negatives: padding never wins", iota(nhwc(1, 5, 5, 1), -1, -1),
               3, 2, FL_SAME, nhwc(1, 3, 3, 1), negative);
    const float overlap[] = {5, 6, 8, 9};
    check_pool("VALID 2x2 stride 1 on 3x3", iota(nhwc(1, 3, 3, 1), 1, 1), 2, 1, FL_VALID,
               nhwc(1, 2, 2, 1), overlap);
    const float same[] = {5, 6, 6, 8, 9, 9, 8, 9, 9};
    check_pool("SAME 2x2 stride 1 on 3x3 pads after", iota(nhwc(1, 3, 3, 1), 1, 1), 2, 1, FL_SAME,
               nhwc(1, 3, 3, 1), same);
    const float pixels[] = {1, 8, 4, 5, 2, 6, 3, 7};
    const float per_channel[] = {4, 8};
    check_pool("channels pooled separately", fl_tensor_from_floats(nhwc(1, 2, 2, 2), pixels), 2, 2,
               FL_VALID, nhwc(1, 1, 1, 2), per_channel);
}


/* ---- random multi-channel inputs against a plain reference ---- */

typedef struct {
    fl_shape x, f; /* for pooling, f.dims[0] is the square window */
    int sh, sw;
    fl_padding padding;
} window_case;

/* TensorFlow's rules again, independently of the library: output size and
 * the padding before the first pixel along one axis. */
static void ref_axis(int in, int k, int s, fl_padding p, int *out, int *pad)
{
    *out = p == FL_SAME ? (in + s - 1) / s : (in - k) / s + 1;
    int total = (*out - 1) * s + k - in;
    *pad = p == FL_SAME && total > 0 ? total / 2 : 0;
}

/* pool: max over the window and channel c; otherwise conv with output channel c. */
static float ref_window(const window_case *w, const float *x, const float *f, bool pool, int b,
                        int oy, int ox, int c)
{
    int H = w->x.dims[1], W = w->x.dims[2], C = w->x.dims[3];
    int kh = w->f.dims[0], kw = pool ? kh : w->f.dims[1], co = pool ? 0 : w->f.dims[3];
    int oh, ow, pt, pl;
    ref_axis(H, kh, w->sh, w->padding, &oh, &pt);
    ref_axis(W, kw, w->sw, w->padding, &ow, &pl);
    double acc = pool ? -INFINITY : 0.0;
    for (int i = 0; i < kh; i++)
        for (int j = 0; j < kw; j++) {
            int iy = oy * w->sh - pt + i, ix = ox * w->sw - pl + j;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                continue;
            const float *px = x + ((b * H + iy) * W + ix) * C;
            if (pool)
                acc = px[c] > acc ? px[c] : acc;
            for (int ci = 0; !pool && ci < C; ci++)
                acc += (double)px[ci] * f[((i * kw + j) * C + ci) * co + c];
        }
    return (float)acc;
}

static void check_against_reference(const window_case *w, bool pool)
{
    fl_graph *g = fl_graph_new();
    fl_tensor *values[2] = {random_tensor(w->x), pool ? NULL : random_tensor(w->f)};
    fl_node *nodes[2] = {batch_placeholder(g, values[0], "x"), NULL};
    fl_node *y;
    if (pool) {
        y = fl_max_pool2d(g, nodes[0], w->f.dims[0], w->f.dims[0], w->sh, w->sw, w->padding, NULL);
    } else {
        nodes[1] = fl_placeholder(g, FL_FLOAT32, w->f, "f");
        y = fl_conv2d(g, nodes[0], nodes[1], w->sh, w->sw, w->padding, NULL);
    }
    fl_tensor *got = run_fed(g, y, nodes, values, pool ? 1 : 2);
    bool pass = got != NULL;
    int64_t n = got ? fl_shape_size(got->shape) : 0;
    float *want = malloc((size_t)(n ? n : 1) * sizeof *want);
    for (int64_t i = 0; pass && i < n; i++) {
        const int *d = got->shape.dims;
        int c = (int)(i % d[3]), ox = (int)(i / d[3] % d[2]), oy = (int)(i / d[3] / d[2] % d[1]);
        want[i] = ref_window(w, values[0]->data, pool ? NULL : values[1]->data, pool,
                             (int)(i / d[3] / d[2] / d[1]), oy, ox, c);
    }
    char sx[64], sf[64];
    if (pool)
        snprintf(sf, sizeof sf, "window %dx%d", w->f.dims[0], w->f.dims[0]);
    else
        fl_shape_format(w->f, sf, sizeof sf);
    ok(pass && values_match(got, got->shape, want, 1e-5), "%s %s %s stride %dx%d %s matches the reference",
       pool ? "max_pool" : "conv2d", fl_shape_format(w->x, sx, sizeof sx), sf, w->sh, w->sw,
       w->padding == FL_SAME ? "SAME" : "VALID");
    free(want);
    fl_tensor_free(got);
    fl_tensor_free(values[0]);
    fl_tensor_free(values[1]);
    fl_graph_free(g);
}

static const window_case conv_cases[] = {
    {{4, {2, 5, 5, 2}}, {4, {3, 3, 2, 3}}, 1, 1, FL_SAME},
    {{4, {1, 6, 5, 2}}, {4, {2, 3, 2, 2}}, 1, 1, FL_VALID},
    {{4, {2, 5, 6, 3}}, {4, {3, 3, 3, 2}}, 2, 2, FL_SAME},
    {{4, {1, 7, 6, 2}}, {4, {3, 2, 2, 2}}, 2, 2, FL_VALID},
    {{4, {1, 5, 4, 1}}, {4, {2, 2, 1, 2}}, 2, 1, FL_SAME},
};

static const window_case pool_cases[] = {
    {{4, {2, 5, 5, 2}}, {1, {3}}, 2, 2, FL_SAME},
    {{4, {1, 4, 6, 3}}, {1, {2}}, 2, 2, FL_VALID},
    {{4, {1, 5, 5, 1}}, {1, {3}}, 1, 1, FL_VALID},
    {{4, {1, 3, 4, 2}}, {1, {2}}, 1, 1, FL_SAME},
};

static const int nconv_cases = sizeof conv_cases / sizeof conv_cases[0];
static const int npool_cases = sizeof pool_cases / sizeof pool_cases[0];

static void test_reference(void)
{
    for (int i = 0; i < nconv_cases; i++)
        check_against_reference(&conv_cases[i], false);
    for (int i = 0; i < npool_cases; i++)
        check_against_reference(&pool_cases[i], true);
}

/* ---- shape inference: the output shape when it builds, else the error ---- */

static char result[FL_ERROR_LEN];

static const char *build_result(fl_graph *g, fl_node *y)
{
    if (y)
        fl_shape_format(fl_node_shape(y), result, sizeof result);
    else
        snprintf(result, sizeof result, "%s", fl_graph_error(g) ? fl_graph_error(g) : "(no error)");
    fl_graph_free(g);
    return result;
}

static const char *conv_result(fl_shape x, fl_shape f, int sh, int sw, fl_padding p,
                               const char *name)
{
    fl_graph *g = fl_graph_new();
    fl_node *xn = fl_placeholder(g, FL_FLOAT32, x, "x"), *fn = fl_placeholder(g, FL_FLOAT32, f, "f");
    return build_result(g, fl_conv2d(g, xn, fn, sh, sw, p, name));
}

static const char *pool_result(fl_shape x, int kh, int kw, int s, fl_padding p)
{
    fl_graph *g = fl_graph_new();
    fl_node *xn = fl_placeholder(g, FL_FLOAT32, x, "x");
    return build_result(g, fl_max_pool2d(g, xn, kh, kw, s, s, p, NULL));
}

static void test_shapes(void)
{
    fl_shape mnist = nhwc(-1, 28, 28, 1), w5 = fl_shape_make(4, 5, 5, 1, 32);
    fl_shape free_window = fl_shape_make(4, -1, -1, 3, 8);
    is_string(conv_result(mnist, w5, 1, 1, FL_SAME, NULL), "[?,28,28,32]", "conv SAME keeps 28x28");
    is_string(conv_result(mnist, w5, 1, 1, FL_VALID, NULL), "[?,24,24,32]", "conv VALID 5x5: 24x24");
    is_string(conv_result(mnist, w5, 2, 3, FL_SAME, NULL), "[?,14,10,32]", "conv SAME strides 2x3");
    is_string(conv_result(nhwc(-1, -1, -1, 3), fl_shape_make(4, 3, 3, 3, 8), 2, 2, FL_SAME, NULL),
              "[?,?,?,8]", "unknown height and width propagate");
    is_string(conv_result(nhwc(2, 7, 7, 3), free_window, 2, 2, FL_SAME, NULL), "[2,4,4,8]",
              "SAME needs no window size");
    is_string(conv_result(nhwc(2, 7, 7, 3), free_window, 2, 2, FL_VALID, NULL), "[2,?,?,8]",
              "VALID with an unknown window");
    is_string(conv_result(nhwc(-1, 28, 28, -1), fl_shape_make(4, 5, 5, 3, 8), 2, 2, FL_VALID, NULL),
              "[?,12,12,8]", "unknown input channels are accepted");
    is_string(conv_result(nhwc(-1, 3, 3, 1), fl_shape_make(4, 5, 5, 1, 8), 1, 1, FL_SAME, NULL),
              "[?,3,3,8]", "SAME allows a window larger than the image");
    is_string(pool_result(nhwc(-1, 28, 28, 32), 2, 2, 2, FL_SAME), "[?,14,14,32]", "pool 2x2/2 SAME");
    is_string(pool_result(nhwc(-1, 7, 7, 64), 3, 3, 2, FL_VALID), "[?,3,3,64]", "pool 3x3/2 VALID");
    is_string(pool_result(nhwc(-1, 7, 7, 64), 3, 3, 2, FL_SAME), "[?,4,4,64]", "pool 3x3/2 SAME");
}

static void test_errors(void)
{
    is_string(conv_result(nhwc(8, 28, 28, 3), fl_shape_make(4, 5, 5, 1, 32), 1, 1, FL_SAME, NULL),
              "Conv2D: input [8,28,28,3] has 3 channels but filter [5,5,1,32] expects 1",
              "conv: channel mismatch");
    is_string(conv_result(nhwc(8, 28, 28, 3), fl_shape_make(4, 5, 5, 1, 32), 1, 1, FL_SAME, "conv1"),
              "conv1: input [8,28,28,3] has 3 channels but filter [5,5,1,32] expects 1",
              "conv: the error names the node");
    is_string(conv_result(fl_shape_make(3, 28, 28, 3), fl_shape_make(4, 5, 5, 3, 32), 1, 1, FL_SAME,
                          NULL),
              "Conv2D: input must be [N,H,W,Cin] and filter [KH,KW,Cin,Cout], got [28,28,3] and [5,5,3,32]",
              "conv: rank");
    is_string(conv_result(nhwc(8, 28, 28, 1), fl_shape_make(4, 5, 5, 1, 32), 0, 1, FL_SAME, NULL),
              "Conv2D: strides must be at least 1, got 0 and 1", "conv: stride 0");
    is_string(conv_result(nhwc(-1, 3, 3, 1), fl_shape_make(4, 5, 5, 1, 8), 1, 1, FL_VALID, NULL),
              "Conv2D: filter [5,5,1,8] does not fit in input [?,3,3,1] with VALID padding",
              "conv: VALID window larger than the image");
    is_string(conv_result(nhwc(1, 3, 3, 1), fl_shape_make(4, 0, 3, 1, 1), 1, 1, FL_SAME, NULL),
              "Conv2D: filter [0,3,1,1] has an empty window", "conv: empty window");
    is_string(conv_result(nhwc(1, 3, 3, 1), fl_shape_make(4, 1, 1, 1, 1), 1, 1, (fl_padding)7, NULL),
              "Conv2D: padding must be FL_SAME or FL_VALID, got 7", "conv: bad padding");
    is_string(pool_result(nhwc(1, 4, 4, 1), 0, 2, 1, FL_SAME), "MaxPool: ksize must be at least 1, got 0 and 2",
              "pool: ksize 0");
    is_string(pool_result(nhwc(1, 4, 4, 1), 2, 2, -1, FL_SAME),
              "MaxPool: strides must be at least 1, got -1 and -1", "pool: negative stride");
    is_string(pool_result(nhwc(1, 2, 2, 1), 3, 3, 1, FL_VALID),
              "MaxPool: window 3x3 does not fit in input [1,2,2,1] with VALID padding",
              "pool: VALID window larger than the image");
    is_string(pool_result(fl_shape_make(2, 4, 4), 2, 2, 2, FL_SAME),
              "MaxPool: input must be [N,H,W,C], got [4,4]", "pool: rank");

    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_INT32, nhwc(1, 4, 4, 1), "x");
    fl_node *f = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, 2, 2, 1, 1), "f");
    is_string(build_result(g, fl_conv2d(g, x, f, 1, 1, FL_SAME, NULL)),
              "Conv2D: input 0 (x) is int32, but this op needs float32; use fl_cast", "conv: int32 input");
}

/* ---- gradients ---- */

/* d sum(y) / d x for each x, through fl_gradients and a session. */
static void check_grads(const char *what, fl_graph *g, fl_node *y, fl_node **xs,
                        fl_tensor **values, int n, const float *const *want)
{
    fl_node *grads[2] = {NULL, NULL};
    if (fl_gradients(g, y, xs, n, grads) != 0)
        diag("fl_gradients: %s", fl_graph_error(g));
    for (int i = 0; i < n; i++) {
        fl_tensor *got = run_fed(g, grads[i], xs, values, n);
        char shape[64];
        ok(values_match(got, values[i]->shape, want[i], 1e-5), "%s: d/d%s, built as %s", what,
           fl_node_name(xs[i]), grads[i] ? fl_shape_format(fl_node_shape(grads[i]), shape, 64) : "-");
        fl_tensor_free(got);
    }
    for (int i = 0; i < n; i++)
        fl_tensor_free(values[i]);
    fl_graph_free(g);
}

/* VALID windows kh x kw, stride 2 for a square window, else 1. */
static void check_pool_grad(const char *what, fl_tensor *x, int kh, int kw, const float *want)
{
    fl_graph *g = fl_graph_new();
    fl_node *xn = batch_placeholder(g, x, "x");
    int s = kh == kw ? kh : 1;
    check_grads(what, g, fl_max_pool2d(g, xn, kh, kw, s, s, FL_VALID, NULL), &xn, &x, 1, &want);
}

static void test_hand_gradients(void)
{
    fl_graph *g = fl_graph_new();
    fl_tensor *cv[2] = {iota(nhwc(1, 3, 3, 1), 1, 1), iota(fl_shape_make(4, 2, 2, 1, 1), 1, 1)};
    fl_node *cx[2] = {batch_placeholder(g, cv[0], "x"), fl_placeholder(g, FL_FLOAT32, cv[1]->shape, "f")};
    const float dx[] = {1, 3, 2, 4, 10, 6, 3, 7, 4}, df[] = {12, 16, 24, 28};
    const float *conv_want[2] = {dx, df};
    check_grads("conv2d VALID 3x3 * 2x2", g, fl_conv2d(g, cx[0], cx[1], 1, 1, FL_VALID, NULL), cx,
                cv, 2, conv_want);

    const float ties[] = {1, 0, 0, 0}, row[] = {1, 3, 2}, overlap[] = {0, 2, 0}, shared[] = {1, 1, 0};
    check_pool_grad("max_pool ties go to the first", iota(nhwc(1, 2, 2, 1), 5, 0), 2, 2, ties);
    check_pool_grad("max_pool overlapping windows add up",
                    fl_tensor_from_floats(nhwc(1, 1, 3, 1), row), 1, 2, overlap);
    check_pool_grad("max_pool ties across overlapping windows", iota(nhwc(1, 1, 3, 1), 4, 0), 1, 2,
                    shared);
}

static fl_node *build_conv(fl_graph *g, fl_node **xs, void *user)
{
    const window_case *w = user;
    return fl_conv2d(g, xs[0], xs[1], w->sh, w->sw, w->padding, NULL);
}

static fl_node *build_pool(fl_graph *g, fl_node **xs, void *user)
{
    const window_case *w = user;
    int k = w->f.dims[0];
    return fl_max_pool2d(g, xs[0], k, k, w->sh, w->sw, w->padding, NULL);
}

static void test_gradcheck(void)
{
    char what[128], sx[64], sf[64];
    for (int i = 0; i < nconv_cases; i++) {
        const window_case *w = &conv_cases[i];
        fl_tensor *values[2] = {random_tensor(w->x), random_tensor(w->f)};
        snprintf(what, sizeof what, "conv2d %s * %s stride %dx%d %s", fl_shape_format(w->x, sx, 64),
                 fl_shape_format(w->f, sf, 64), w->sh, w->sw, w->padding == FL_SAME ? "SAME" : "VALID");
        gradcheck(what, build_conv, (void *)w, 2, values, 1e-2);
        fl_tensor_free(values[0]);
        fl_tensor_free(values[1]);
    }
    for (int i = 0; i < npool_cases; i++) {
        const window_case *w = &pool_cases[i];
        fl_tensor *x = distinct_tensor(w->x);
        snprintf(what, sizeof what, "max_pool %s %dx%d stride %dx%d %s", fl_shape_format(w->x, sx, 64),
                 w->f.dims[0], w->f.dims[0], w->sh, w->sw, w->padding == FL_SAME ? "SAME" : "VALID");
        gradcheck(what, build_pool, (void *)w, 1, &x, 1e-2);
        fl_tensor_free(x);
    }
}

int main(void)
{
    test_window_sizes();
    test_conv_forward();
    test_pool_forward();
    test_reference();
    test_shapes();
    test_errors();
    test_hand_gradients();
    test_gradcheck();
    return done_testing();
}
