/* test_cudnn_engines.c: a convolution, its data gradient and its filter
 * gradient on the GPU, at chapter 1's shapes and batch, agree with the host
 * within TF32's bound whichever cuDNN path each shape keeps: the graph
 * API's engine when it timed faster (conv_engines.c) or the legacy
 * algorithm. FLOWLAB_CUDNN_ENGINES=0, in a child forked before CUDA is
 * touched, keeps every shape on the legacy algorithm. Skipped, with the
 * reason, where flowlab has no CUDA device. */
#include <math.h>
#include <stdio.h>

#include "cuda_tests.h"
#include "gradcheck.h"

/* As test_tf32.c: the largest difference, relative to the host output's
 * root mean square, stays within TF32's 1e-2. */
#define TF32_TOL 1e-2

typedef struct {
    double worst[2][3]; /* per shape: forward, data gradient, filter gradient */
    int graph_plans;    /* plans that run a graph-API engine; -1 unknown */
} outcome;

/* The largest difference between two tensors of count floats, relative to
 * want's root mean square (at least 1). */
static double relative_error(const fl_tensor *want_t, const fl_tensor *have_t, int64_t count)
{
    const float *want = fl_tensor_floats(want_t), *have = fl_tensor_floats(have_t);
    double squares = 0.0, largest = 0.0;
    for (int64_t i = 0; i < count; i++) {
        squares += (double)want[i] * want[i];
        largest = fmax(largest, fabs((double)have[i] - want[i]));
    }
    double rms = count ? sqrt(squares / (double)count) : 0.0;
    return largest / (rms > 1.0 ? rms : 1.0);
}

/* y = conv(x, w) and the gradients of sum(y * r) for x and w, on the host
 * and on /gpu:0; the three errors into worst (negative when a run fails). */
static void compare(fl_shape x_shape, fl_shape w_shape, fl_shape y_shape, double *worst)
{
    fl_tensor *x = gc_random(x_shape, -1.0f, 1.0f, 1), *w = gc_random(w_shape, -0.2f, 0.2f, 2),
              *r = gc_random(y_shape, -1.0f, 1.0f, 3);
    fl_graph *g = fl_graph_new();
    fl_node *outs[6], *ins[6];
    const char *devices[2] = {"/cpu:0", "/gpu:0"};
    for (int d = 0; d < 2; d++) {
        fl_device_scope_push(g, devices[d]);
        fl_node **mine = &ins[3 * d];
        mine[0] = fl_placeholder(g, FL_FLOAT32, x_shape, NULL);
        mine[1] = fl_placeholder(g, FL_FLOAT32, w_shape, NULL);
        mine[2] = fl_placeholder(g, FL_FLOAT32, y_shape, NULL);
        fl_node *y = fl_conv2d(g, mine[0], mine[1], 1, 1, FL_SAME, NULL);
        fl_node *loss = fl_reduce_sum(g, fl_mul(g, y, mine[2], NULL), NULL, 0, false, NULL);
        outs[3 * d] = y;
        fl_gradients(g, loss, mine, 2, &outs[3 * d + 1]);
        fl_device_pop(g);
    }
    fl_feed feeds[6] = {{ins[0], x}, {ins[1], w}, {ins[2], r}, {ins[3], x}, {ins[4], w}, {ins[5], r}};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *got[6] = {0};
    for (int i = 0; i < 3; i++)
        worst[i] = -1.0;
    if (fl_session_run(s, feeds, 6, outs, 6, got, NULL, 0) == 0)
        for (int i = 0; i < 3; i++)
            worst[i] = relative_error(got[i], got[3 + i], fl_shape_size(got[i]->shape));
    else
        diag("%s", fl_session_error(s));
    for (int i = 0; i < 6; i++)
        fl_tensor_free(got[i]);
    fl_session_free(s);
    fl_graph_free(g);
    fl_tensor_free(x);
    fl_tensor_free(w);
    fl_tensor_free(r);
}

/* Chapter 1's two convolutions at its batch of 128. */
static outcome measure(void)
{
    outcome o = {.graph_plans = -1};
    compare(fl_shape_make(4, 128, 28, 28, 1), fl_shape_make(4, 5, 5, 1, 32), fl_shape_make(4, 128, 28, 28, 32),
            o.worst[0]);
    compare(fl_shape_make(4, 128, 14, 14, 32), fl_shape_make(4, 5, 5, 32, 64), fl_shape_make(4, 128, 14, 14, 64),
            o.worst[1]);
    int (*graph_plans)(void *impl) = NULL;
    *(void **)&graph_plans = cuda_module_symbol("fl_cuda_conv_graph_plans");
    fl_device *d = fl_accelerator(0);
    if (graph_plans && d)
        o.graph_plans = graph_plans(d->impl);
    return o;
}

/* The FLOWLAB_CUDNN_ENGINES=0 half, in a child that opens the GPU afresh. */
static void measure_into(void *result) { *(outcome *)result = measure(); }

static void check(const outcome *o, const char *how)
{
    static const char *const shapes[2] = {"conv_1 [128,28,28,1]x[5,5,1,32]", "conv_2 [128,14,14,32]x[5,5,32,64]"};
    static const char *const ops[3] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 3; i++)
            ok(o->worst[s][i] >= 0 && o->worst[s][i] <= TF32_TOL, "%s: %s %s within %.0e of the host (%.2g)", how,
               shapes[s], ops[i], TF32_TOL, o->worst[s][i]);
}

int main(void)
{
    setenv("FLOWLAB_BACKEND", "cuda", 1);
    unsetenv("FLOWLAB_ALLOW_TF32"); /* make test turns TF32 off; the engines are tried only with it on */
    unsetenv("FLOWLAB_CUDNN_ENGINES");
    unsetenv("FLOWLAB_DETERMINISTIC");
    outcome legacy = {.graph_plans = -1}, chosen;
    bool child_ran = measure_in_child("FLOWLAB_CUDNN_ENGINES", "0", &legacy, sizeof legacy, measure_into); /* before this process touches CUDA */
    require_cuda();
    ok(child_ran, "with FLOWLAB_CUDNN_ENGINES=0 a child runs the convolutions");
    ok(legacy.graph_plans == 0, "FLOWLAB_CUDNN_ENGINES=0: no plan runs a graph-API engine (%d)", legacy.graph_plans);
    check(&legacy, "legacy algorithms");
    chosen = measure();
    /* On the H200 all six timed faster through the graph API (the forward
     * of conv_2 by 2.7x); an older GPU may keep the legacy ones. */
    int major = cuda_compute_major();
    if (major >= 9)
        ok(chosen.graph_plans >= 1, "compute capability %d: %d of 6 plans run a graph-API engine (at least one)",
           major, chosen.graph_plans);
    else
        ok(chosen.graph_plans >= 0, "compute capability %d: %d of 6 plans run a graph-API engine", major,
           chosen.graph_plans);
    check(&chosen, "the faster of each");
    return done_testing();
}
