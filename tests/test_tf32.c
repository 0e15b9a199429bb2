/* test_tf32.c: the CUDA backend's TF32 policy. On a GPU that has TF32
 * (compute capability 8.0 on) convolutions and matrix products use it by
 * default, as TensorFlow's and PyTorch's do: their results then differ from
 * the host's by more than float32 rounding, but stay within TF32's own,
 * looser bound. FLOWLAB_ALLOW_TF32=0 brings float32 back. The policy is read
 * when the device opens, so the FLOWLAB_ALLOW_TF32=0 half runs in a child
 * forked before anything touches CUDA. Skipped, with the reason, where
 * flowlab has no CUDA device. */
#include <math.h>
#include <stdio.h>

#include "gradcheck.h"
#include "cuda_tests.h"

/* Errors are measured against the output's root mean square (at least 1):
 * a product's rounding error grows with its terms, not with its value, so
 * an output that happens to sum to nearly zero carries as much absolute
 * error as any other. Float32 differs from the host by rounding alone;
 * TF32 keeps 10 bits of mantissa, about 5e-4 per product, and sums of
 * thousands of products stay well inside 1e-2 of the output's scale. */
#define FLOAT32_TOL 1e-4
#define TF32_TOL 1e-2

/* Chapter 1's second convolution and first dense layer, at a small batch. */
static fl_node *conv(fl_graph *g, fl_node *x, fl_node *w) { return fl_conv2d(g, x, w, 1, 1, FL_SAME, NULL); }
static fl_node *dense(fl_graph *g, fl_node *x, fl_node *w) { return fl_matmul(g, x, w, false, false, NULL); }

typedef fl_node *(*binary_op)(fl_graph *g, fl_node *a, fl_node *b);

/* The largest difference between /gpu:0 and /cpu:0, relative to the host
 * output's root mean square; a negative number when the run fails. */
static double gpu_error(binary_op op, fl_shape a_shape, fl_shape b_shape)
{
    fl_tensor *a = gc_random(a_shape, -2.0f, 2.0f, 1), *b = gc_random(b_shape, -2.0f, 2.0f, 2);
    fl_graph *g = fl_graph_new();
    fl_node *outs[2], *ins[4];
    const char *devices[2] = {"/cpu:0", "/gpu:0"};
    for (int d = 0; d < 2; d++) {
        fl_device_scope_push(g, devices[d]);
        ins[2 * d] = fl_placeholder(g, FL_FLOAT32, a_shape, NULL);
        ins[2 * d + 1] = fl_placeholder(g, FL_FLOAT32, b_shape, NULL);
        outs[d] = op(g, ins[2 * d], ins[2 * d + 1]);
        fl_device_pop(g);
    }
    fl_feed feeds[4] = {{ins[0], a}, {ins[1], b}, {ins[2], a}, {ins[3], b}};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *got[2] = {0};
    double worst = -1.0;
    if (fl_session_run(s, feeds, 4, outs, 2, got, NULL, 0) == 0) {
        const float *want = fl_tensor_floats(got[0]), *have = fl_tensor_floats(got[1]);
        int64_t count = fl_shape_size(fl_node_shape(outs[0]));
        double squares = 0.0, largest = 0.0;
        for (int64_t i = 0; i < count; i++) {
            squares += (double)want[i] * want[i];
            largest = fmax(largest, fabs((double)have[i] - want[i]));
        }
        double rms = count ? sqrt(squares / (double)count) : 0.0;
        worst = largest / (rms > 1.0 ? rms : 1.0);
    } else
        diag("%s", fl_session_error(s));
    fl_tensor_free(got[0]);
    fl_tensor_free(got[1]);
    fl_session_free(s);
    fl_graph_free(g);
    fl_tensor_free(a);
    fl_tensor_free(b);
    return worst;
}

typedef struct {
    double conv, dense;
    int tf32; /* the device's own answer (cuda_stats.h); -1 unknown */
} errors;

static errors measure(void)
{
    errors e = {gpu_error(conv, fl_shape_make(4, 8, 14, 14, 32), fl_shape_make(4, 5, 5, 32, 64)),
                gpu_error(dense, fl_shape_make(2, 64, 3136), fl_shape_make(2, 3136, 256)), -1};
    void (*policy)(void *impl, int *tf32, int *measured) = NULL;
    *(void **)&policy = cuda_module_symbol("fl_cuda_math_policy");
    fl_device *d = fl_accelerator(0);
    int measured = 0;
    if (policy && d)
        policy(d->impl, &e.tf32, &measured);
    return e;
}

/* The FLOWLAB_ALLOW_TF32=0 half, in a child that opens the GPU afresh. */
static void measure_into(void *result) { *(errors *)result = measure(); }

int main(void)
{
    setenv("FLOWLAB_BACKEND", "cuda", 1);
    unsetenv("FLOWLAB_ALLOW_TF32");
    /* The child first: a process that has touched CUDA cannot fork one that uses it. */
    errors off = {-1.0, -1.0, -1}, on;
    bool child_ran = measure_in_child("FLOWLAB_ALLOW_TF32", "0", &off, sizeof off, measure_into);
    require_cuda();
    int major = cuda_compute_major();
    bool has_tf32 = major >= 8;
    ok(child_ran, "with FLOWLAB_ALLOW_TF32=0 a child runs the convolution and the product");
    ok(off.tf32 == 0, "FLOWLAB_ALLOW_TF32=0: the device says TF32 is off");
    ok(off.conv >= 0 && off.conv <= FLOAT32_TOL, "TF32 off: Conv2D within float32's %.0e of the host (%.2g)",
       FLOAT32_TOL, off.conv);
    ok(off.dense >= 0 && off.dense <= FLOAT32_TOL, "TF32 off: MatMul within float32's %.0e of the host (%.2g)",
       FLOAT32_TOL, off.dense);
    on = measure();
    ok(on.tf32 == (has_tf32 ? 1 : 0), "by default TF32 is %s on this GPU (compute capability %d)",
       has_tf32 ? "on" : "off", major);
    ok(on.conv >= 0 && on.conv <= TF32_TOL, "TF32 on: Conv2D within TF32's %.0e of the host (%.2g)", TF32_TOL,
       on.conv);
    ok(on.dense >= 0 && on.dense <= TF32_TOL, "TF32 on: MatMul within TF32's %.0e of the host (%.2g)", TF32_TOL,
       on.dense);
    if (has_tf32)
        ok(on.dense > FLOAT32_TOL, "TF32 on: the product really is rounded to TF32 (%.2g > %.0e)", on.dense,
           FLOAT32_TOL);
    else
        skip("TF32 rounding", "this GPU has no TF32 (compute capability below 8.0)");
    return done_testing();
}
