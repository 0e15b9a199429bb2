/* test_host_blas.c: the host's CBLAS fast paths (matmul, conv2d and its two
 * backprops as im2col GEMMs) against the plain reference loops, on odd
 * sizes, every transpose, SAME and VALID, strides 1 and 2. */
#include "gradcheck.h"
#include "conv_geometry.h"
#include "host/host_kernels.h"

#ifndef FL_HAVE_CBLAS
int main(void) { skip_all("built without CBLAS (install libopenblas-dev)"); }
#else

static double max_diff(const fl_tensor *a, const fl_tensor *b)
{
    double worst = 0;
    for (int64_t i = 0; i < fl_shape_size(a->shape); i++) {
        double d = fabs(fl_tensor_floats(a)[i] - fl_tensor_floats(b)[i]);
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* Runs both kernels on the same inputs; out is pre-filled with garbage so a
 * kernel that skips an element is caught. */
static void compare(const char *what, fl_host_kernel fast, fl_host_kernel reference, const fl_node *n,
                    fl_tensor *const *in, fl_shape out_shape)
{
    fl_tensor *a = gc_random(out_shape, 100, 200, 3), *b = gc_random(out_shape, -200, -100, 4);
    fl_kernel_ctx ctx = {0};
    fast(n, in, a, &ctx);
    reference(n, in, b, &ctx);
    double d = max_diff(a, b);
    ok(d < 1e-3, "%s: BLAS and reference agree (max diff %.2g)", what, d);
    fl_tensor_free(a);
    fl_tensor_free(b);
}

static void test_matmul(void)
{
    const int sizes[][3] = {{1, 1, 1}, {7, 13, 5}, {129, 65, 33}};
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 4; t++) {
            int M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
            fl_node n = {.op = FL_OP_MATMUL};
            n.attrs.transpose_a = t & 1;
            n.attrs.transpose_b = t >> 1;
            fl_tensor *in[2] = {gc_random(t & 1 ? fl_shape_make(2, K, M) : fl_shape_make(2, M, K), -1, 1, 1),
                                gc_random(t >> 1 ? fl_shape_make(2, N, K) : fl_shape_make(2, K, N), -1, 1, 2)};
            char what[80];
            snprintf(what, sizeof what, "matmul %dx%dx%d ta=%d tb=%d", M, N, K, t & 1, t >> 1);
            compare(what, fl_host_matmul_blas, fl_host_matmul, &n, in, fl_shape_make(2, M, N));
            fl_tensor_free(in[0]);
            fl_tensor_free(in[1]);
        }
}

static void test_conv(void)
{
    const struct { int n, h, w, c, kh, kw, oc, stride; fl_padding pad; } cases[] = {
        {2, 7, 9, 3, 3, 3, 4, 1, FL_SAME}, {3, 8, 8, 2, 5, 5, 3, 2, FL_SAME},
        {2, 9, 7, 3, 2, 4, 5, 2, FL_VALID}, {1, 28, 28, 1, 5, 5, 8, 1, FL_SAME}};
    for (int i = 0; i < 4; i++) {
        fl_node n = {.op = FL_OP_CONV2D};
        n.attrs.stride_h = n.attrs.stride_w = cases[i].stride;
        n.attrs.padding = cases[i].pad;
        fl_shape xs = fl_shape_make(4, cases[i].n, cases[i].h, cases[i].w, cases[i].c);
        fl_shape fs = fl_shape_make(4, cases[i].kh, cases[i].kw, cases[i].c, cases[i].oc);
        int oh = fl_conv_output_size(cases[i].h, cases[i].kh, cases[i].stride, cases[i].pad);
        int ow = fl_conv_output_size(cases[i].w, cases[i].kw, cases[i].stride, cases[i].pad);
        fl_shape ys = fl_shape_make(4, cases[i].n, oh, ow, cases[i].oc);
        fl_tensor *x = gc_random(xs, -1, 1, 5), *f = gc_random(fs, -1, 1, 6), *dy = gc_random(ys, -1, 1, 7);
        char what[80];
        snprintf(what, sizeof what, "conv case %d forward", i);
        fl_tensor *fwd[2] = {x, f};
        compare(what, fl_host_conv2d_blas, fl_host_conv2d, &n, fwd, ys);
        snprintf(what, sizeof what, "conv case %d backprop input", i);
        fl_tensor *bi[3] = {dy, f, x};
        compare(what, fl_host_conv2d_backprop_input_blas, fl_host_conv2d_backprop_input, &n, bi, xs);
        snprintf(what, sizeof what, "conv case %d backprop filter", i);
        fl_tensor *bf[3] = {dy, x, f};
        compare(what, fl_host_conv2d_backprop_filter_blas, fl_host_conv2d_backprop_filter, &n, bf, fs);
        fl_tensor_free(x);
        fl_tensor_free(f);
        fl_tensor_free(dy);
    }
}

int main(void)
{
    test_matmul();
    test_conv();
    return done_testing();
}
#endif
