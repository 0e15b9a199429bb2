/* test_cuda_convolutions.c: a convolution (with its bias and ReLU, which the
 * session fuses into FusedConv2D) and its three gradients on the GPU agree
 * with the host, through each way the CUDA backend runs one: cuDNN's
 * graph-API engine where it timed faster (conv_engines.c), cuDNN's legacy
 * algorithm (FLOWLAB_CUDNN_ENGINES=0, in a child forked before CUDA is
 * touched). One-channel images (a first layer on grey pictures), uneven
 * SAME padding and VALID windows included. The results stay within TF32's
 * bound. Skipped, with the reason, where flowlab has no CUDA device. */
#include <math.h>
#include <stdio.h>

#include "cuda_tests.h"
#include "gradcheck.h"

/* As test_tf32.c: the largest difference, relative to the host output's
 * root mean square (at least 1). */
#define TF32_TOL 1e-2

typedef struct {
    const char *name;
    int x[4], w[4]; /* [N,H,W,C] and [KH,KW,C,OC] */
    int stride;
    fl_padding padding;
    bool bias_relu;
} conv_case;

static const conv_case cases[] = {
    {"chapter 1's conv_1", {128, 28, 28, 1}, {5, 5, 1, 32}, 1, FL_SAME, true},
    {"chapter 1's conv_2", {128, 14, 14, 32}, {5, 5, 32, 64}, 1, FL_SAME, true},
    {"one channel, stride 2, uneven SAME", {3, 9, 11, 1}, {3, 3, 1, 7}, 2, FL_SAME, false},
    {"one channel, 7x7 VALID, one output", {2, 10, 10, 1}, {7, 7, 1, 1}, 1, FL_VALID, true},
    {"three channels, 129 outputs", {2, 8, 8, 3}, {3, 3, 3, 129}, 1, FL_SAME, false},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* Per case: the output, then the gradients of x and w. */
typedef struct {
    double worst[NCASES][3];
    int graph_plans; /* plans that run a graph-API engine; -1 unknown */
} outcome;

static double relative_error(const fl_tensor *want_t, const fl_tensor *have_t)
{
    const float *want = fl_tensor_floats(want_t), *have = fl_tensor_floats(have_t);
    int64_t count = fl_shape_size(want_t->shape);
    double squares = 0.0, largest = 0.0;
    for (int64_t i = 0; i < count; i++) {
        squares += (double)want[i] * want[i];
        largest = fmax(largest, fabs((double)have[i] - want[i]));
    }
    double rms = count ? sqrt(squares / (double)count) : 0.0;
    return largest / (rms > 1.0 ? rms : 1.0);
}

/* On one device: y = conv(x, w), or relu(conv(x, w) + b), which the
 * session fuses into one FusedConv2D; and the gradients of sum(conv(x, w)
 * * r) for x and w, from a second convolution with no ReLU in its path: a
 * ReLU's mask flips where two float32 roundings of an output near zero
 * differ in sign, and one flip moves a gradient by a tenth of its scale.
 * outs: y, dx, dw. */
static void build(fl_graph *g, const conv_case *c, fl_node **ins, fl_node **outs)
{
    fl_node *conv = fl_conv2d(g, ins[0], ins[1], c->stride, c->stride, c->padding, NULL);
    fl_node *plain = fl_conv2d(g, ins[0], ins[1], c->stride, c->stride, c->padding, NULL);
    ins[3] = fl_placeholder(g, FL_FLOAT32, fl_node_shape(plain), NULL);
    outs[0] = c->bias_relu ? fl_relu(g, fl_add(g, conv, ins[2], NULL), NULL) : conv;
    fl_node *loss = fl_reduce_sum(g, fl_mul(g, plain, ins[3], NULL), NULL, 0, false, NULL);
    fl_gradients(g, loss, ins, 2, &outs[1]);
}

/* One case on /cpu:0 and /gpu:0; its errors into worst (negative when the run fails). */
static void compare(const conv_case *c, double *worst)
{
    fl_shape xs = fl_shape_make(4, c->x[0], c->x[1], c->x[2], c->x[3]);
    fl_shape ws = fl_shape_make(4, c->w[0], c->w[1], c->w[2], c->w[3]), bs = fl_shape_make(1, c->w[3]);
    fl_tensor *x = gc_random(xs, -1.0f, 1.0f, 1), *w = gc_random(ws, -0.2f, 0.2f, 2),
              *b = gc_random(bs, -0.1f, 0.1f, 3), *r = NULL;
    fl_graph *g = fl_graph_new();
    fl_node *ins[2][4], *outs[2][4];
    const char *devices[2] = {"/cpu:0", "/gpu:0"};
    for (int d = 0; d < 2; d++) {
        fl_device_scope_push(g, devices[d]);
        ins[d][0] = fl_placeholder(g, FL_FLOAT32, xs, NULL);
        ins[d][1] = fl_placeholder(g, FL_FLOAT32, ws, NULL);
        ins[d][2] = fl_placeholder(g, FL_FLOAT32, bs, NULL);
        build(g, c, ins[d], outs[d]);
        fl_device_pop(g);
    }
    r = gc_random(fl_node_shape(ins[0][3]), -1.0f, 1.0f, 4);
    int nout = 3;
    fl_feed feeds[8];
    fl_node *fetch[8];
    for (int d = 0; d < 2; d++) {
        const fl_tensor *values[4] = {x, w, b, r};
        for (int i = 0; i < 4; i++)
            feeds[4 * d + i] = (fl_feed){ins[d][i], values[i]};
        for (int i = 0; i < nout; i++)
            fetch[nout * d + i] = outs[d][i];
    }
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *got[8] = {0};
    for (int i = 0; i < 3; i++)
        worst[i] = -1.0;
    if (fl_session_run(s, feeds, 8, fetch, 2 * nout, got, NULL, 0) == 0)
        for (int i = 0; i < nout; i++)
            worst[i] = relative_error(got[i], got[nout + i]);
    else
        diag("%s: %s", c->name, fl_session_error(s));
    for (int i = 0; i < 8; i++)
        fl_tensor_free(got[i]);
    fl_session_free(s);
    fl_graph_free(g);
    fl_tensor *mine[4] = {x, w, b, r};
    for (int i = 0; i < 4; i++)
        fl_tensor_free(mine[i]);
}

static outcome measure(void)
{
    outcome o = {.graph_plans = -1};
    for (int i = 0; i < NCASES; i++)
        compare(&cases[i], o.worst[i]);
    int (*graph_plans)(void *impl) = NULL;
    *(void **)&graph_plans = cuda_module_symbol("fl_cuda_conv_graph_plans");
    fl_device *d = fl_accelerator(0);
    if (graph_plans && d)
        o.graph_plans = graph_plans(d->impl);
    return o;
}

static void measure_into(void *result) { *(outcome *)result = measure(); }

static void check(const outcome *o, const char *how)
{
    static const char *const what[3] = {"output", "image gradient", "filter gradient"};
    for (int c = 0; c < NCASES; c++)
        for (int i = 0; i < 3; i++) {
            ok(o->worst[c][i] >= 0 && o->worst[c][i] <= TF32_TOL, "%s: %s, %s%s within %.0e of the host (%.2g)",
               how, cases[c].name, what[i], i == 0 && cases[c].bias_relu ? " with bias and ReLU" : "", TF32_TOL,
               o->worst[c][i]);
        }
}

int main(void)
{
    setenv("FLOWLAB_BACKEND", "cuda", 1);
    unsetenv("FLOWLAB_ALLOW_TF32"); /* make test turns TF32 off; the engines are tried only with it on */
    unsetenv("FLOWLAB_CUDNN_ENGINES");
    unsetenv("FLOWLAB_DETERMINISTIC");
    outcome legacy = {.graph_plans = -1}, chosen;
    /* The child first: a process that has touched CUDA cannot fork one that uses it. */
    bool child_ran = measure_in_child("FLOWLAB_CUDNN_ENGINES", "0", &legacy, sizeof legacy, measure_into);
    require_cuda();
    ok(child_ran, "with FLOWLAB_CUDNN_ENGINES=0 a child runs every case");
    ok(legacy.graph_plans == 0, "FLOWLAB_CUDNN_ENGINES=0: no plan runs a graph-API engine (%d)", legacy.graph_plans);
    check(&legacy, "legacy cuDNN");
    chosen = measure();
    /* On the H200 conv_2's forward ran 2.7x faster through the graph API;
     * an older GPU may keep every legacy algorithm. */
    int major = cuda_compute_major();
    if (major >= 9)
        ok(chosen.graph_plans >= 1, "compute capability %d: %d plans run a graph-API engine (at least one)", major,
           chosen.graph_plans);
    else
        ok(chosen.graph_plans >= 0, "compute capability %d: %d plans run a graph-API engine", major,
           chosen.graph_plans);
    check(&chosen, "faster cuDNN path");
    return done_testing();
}
