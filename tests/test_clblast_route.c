/* test_clblast_route.c: on a GPU-type OpenCL device MatMul and the
 * convolutions' GEMMs go through CLBlast. There is no such device here, so
 * FLOWLAB_CL_GEMM=clblast forces that route on whatever OpenCL device exists
 * and the results are compared with /cpu:0. */
#include <stdlib.h>

#include "gradcheck.h"

static fl_tensor *run_on(const char *device, fl_node *(*build)(fl_graph *, fl_node **), fl_tensor **inputs, int n)
{
    fl_graph *g = fl_graph_new();
    fl_node *x[4];
    fl_device_scope_push(g, device);
    for (int i = 0; i < n; i++)
        x[i] = fl_constant(g, inputs[i], NULL);
    fl_node *y = build(g, x);
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    if (!y || fl_session_run(s, NULL, 0, &y, 1, &out, NULL, 0) != 0)
        diag("%s: %s", device, fl_graph_error(g) ? fl_graph_error(g) : fl_session_error(s));
    fl_session_free(s);
    fl_graph_free(g);
    return out;
}

static double max_diff(const fl_tensor *a, const fl_tensor *b)
{
    double worst = 0;
    for (int64_t i = 0; a && b && i < fl_shape_size(a->shape); i++)
        worst = fmax(worst, fabs(fl_tensor_floats(a)[i] - fl_tensor_floats(b)[i]));
    return a && b ? worst : INFINITY;
}

static fl_node *matmul_nn(fl_graph *g, fl_node **x) { return fl_matmul(g, x[0], x[1], false, false, NULL); }
static fl_node *matmul_tt(fl_graph *g, fl_node **x) { return fl_matmul(g, x[1], x[0], true, true, NULL); }
static fl_node *conv(fl_graph *g, fl_node **x) { return fl_conv2d(g, x[2], x[3], 2, 2, FL_SAME, NULL); }

static fl_node *conv_filter_grad(fl_graph *g, fl_node **x)
{
    fl_node *y = fl_conv2d(g, x[2], x[3], 1, 1, FL_VALID, NULL);
    fl_node *grad;
    fl_gradients(g, fl_reduce_sum(g, fl_mul(g, y, y, NULL), NULL, 0, false, NULL), &x[3], 1, &grad);
    return grad;
}

int main(void)
{
    setenv("FLOWLAB_CL_GEMM", "clblast", 1);
    fl_device_info devices[8];
    int n = fl_list_devices(devices, 8);
    if (n < 2 || strcmp(devices[1].backend, "opencl") != 0)
        skip_all("no OpenCL device to run CLBlast on");
    fl_tensor *in[4] = {gc_random(fl_shape_make(2, 37, 29), -1, 1, 1), gc_random(fl_shape_make(2, 29, 23), -1, 1, 2),
                        gc_random(fl_shape_make(4, 3, 9, 11, 5), -1, 1, 3), gc_random(fl_shape_make(4, 3, 3, 5, 7), -1, 1, 4)};
    struct { const char *what; fl_node *(*build)(fl_graph *, fl_node **); double tol; } cases[] = {
        {"MatMul 37x29 by 29x23", matmul_nn, 1e-4},
        {"MatMul with both operands transposed", matmul_tt, 1e-4},
        {"Conv2D stride 2 SAME", conv, 1e-4},
        {"Conv2D filter gradient", conv_filter_grad, 1e-2},
    };
    for (int i = 0; i < 4; i++) {
        fl_tensor *gpu = run_on("/gpu:0", cases[i].build, in, 4), *cpu = run_on("/cpu:0", cases[i].build, in, 4);
        double d = max_diff(gpu, cpu);
        ok(d <= cases[i].tol, "%s through CLBlast matches /cpu:0 (max difference %.2g, tolerance %.0e)", cases[i].what,
           d, cases[i].tol);
        fl_tensor_free(gpu);
        fl_tensor_free(cpu);
    }
    for (int i = 0; i < 4; i++)
        fl_tensor_free(in[i]);
    return done_testing();
}
