/* launch.h: the OpenCL backend's op launchers, one per op, each enqueuing
 * the kernels that compute exactly what the host kernel of the same op does
 * (src/host/host_*.c). Same arguments as a host kernel, plus the device. */
#ifndef FLOWLAB_OPENCL_LAUNCH_H
#define FLOWLAB_OPENCL_LAUNCH_H

#include "conv_geometry.h"
#include "opencl_device.h"

typedef int (*fl_cl_launcher)(fl_cl_device *d, const fl_node *n, fl_tensor *const *in,
                              fl_tensor *out, const fl_kernel_ctx *ctx);

#define FL_CL_OP(name) \
    int name(fl_cl_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out, \
             const fl_kernel_ctx *ctx)

/* launch_math.c: element-wise arithmetic, activations, softmax, the loss */
FL_CL_OP(fl_cl_add);
FL_CL_OP(fl_cl_sub);
FL_CL_OP(fl_cl_mul);
FL_CL_OP(fl_cl_div);
FL_CL_OP(fl_cl_neg);
FL_CL_OP(fl_cl_add_n);
FL_CL_OP(fl_cl_sum_to_shape);
FL_CL_OP(fl_cl_div_grad_b);
FL_CL_OP(fl_cl_relu);
FL_CL_OP(fl_cl_relu_grad);
FL_CL_OP(fl_cl_sigmoid);
FL_CL_OP(fl_cl_sigmoid_grad);
FL_CL_OP(fl_cl_tanh);
FL_CL_OP(fl_cl_tanh_grad);
FL_CL_OP(fl_cl_softplus);
FL_CL_OP(fl_cl_softplus_grad);
FL_CL_OP(fl_cl_softmax);
FL_CL_OP(fl_cl_softmax_grad);
FL_CL_OP(fl_cl_sparse_xent);
FL_CL_OP(fl_cl_sparse_xent_grad);
/* launch_array.c: reductions, windows, casts and comparisons */
FL_CL_OP(fl_cl_reduce_sum);
FL_CL_OP(fl_cl_reduce_mean);
FL_CL_OP(fl_cl_reduce_grad);
FL_CL_OP(fl_cl_copy_input0); /* Identity, StopGradient, Reshape */
FL_CL_OP(fl_cl_concat);
FL_CL_OP(fl_cl_slice);
FL_CL_OP(fl_cl_slice_grad);
FL_CL_OP(fl_cl_cast);
FL_CL_OP(fl_cl_argmax);
FL_CL_OP(fl_cl_equal);
/* launch_state.c: values, variables and optimizer updates */
FL_CL_OP(fl_cl_fill);
FL_CL_OP(fl_cl_random_uniform);
FL_CL_OP(fl_cl_truncated_normal);
FL_CL_OP(fl_cl_assign);
FL_CL_OP(fl_cl_assign_add);
FL_CL_OP(fl_cl_apply_gradient_descent);
FL_CL_OP(fl_cl_apply_momentum);
FL_CL_OP(fl_cl_apply_adam);
FL_CL_OP(fl_cl_fused_apply_gradient_descent);
FL_CL_OP(fl_cl_fused_apply_momentum);
FL_CL_OP(fl_cl_fused_apply_adam);
FL_CL_OP(fl_cl_multi_apply_adam);
/* launch_matmul.c: MatMul (CLBlast or cl/gemm.h) */
FL_CL_OP(fl_cl_matmul);
/* launch_conv.c: convolution and pooling */
FL_CL_OP(fl_cl_conv2d);
FL_CL_OP(fl_cl_conv2d_backprop_input);
FL_CL_OP(fl_cl_conv2d_backprop_filter);
FL_CL_OP(fl_cl_max_pool);
FL_CL_OP(fl_cl_max_pool_grad);

/* Shared by the launchers: enqueue a copy of bytes from src to dst, and
 * fill a buffer with a 4-byte pattern. */
int fl_cl_copy(fl_cl_device *d, const void *src, void *dst, size_t bytes);
int fl_cl_fill_bytes(fl_cl_device *d, void *dst, uint32_t pattern, size_t bytes);
/* Enqueues global work-items (each rounded up to whole groups) in
 * work-groups of local, for kernels shaped around their own group size. */
int fl_cl_run_groups(fl_cl_call *c, cl_uint dims, const size_t *global, const size_t *local);
/* Parallel float sums (reduce.cl), divided by divisor (1 for a plain sum):
 * of each row of x [rows, len] into out[rows], and over the middle axis of
 * x [outer, count, inner] into out[outer, inner]. */
int fl_cl_sum_rows(fl_cl_device *d, const void *x, int rows, int len, float divisor, void *out);
int fl_cl_sum_cols(fl_cl_device *d, const void *x, int outer, int count, int inner,
                   float divisor, void *out);
/* launch_matmul.c: whether d multiplies through CLBlast (GPU-type devices,
 * or FLOWLAB_CL_GEMM=clblast) rather than cl/gemm.c; and C = op(A) op(B)
 * (+ C when accumulate), the row-major matrices starting at the given
 * offsets, counted in floats, inside their buffers. */
bool fl_cl_use_clblast(const fl_cl_device *d);
int fl_cl_gemm_at(fl_cl_device *d, bool ta, bool tb, int m, int n, int k, const void *a,
                  size_t a_at, const void *b, size_t b_at, void *c, size_t c_at, bool accumulate);

/* What a GEMM-like kernel does to each result before storing it: add a
 * per-column bias (NULL: none), then max(0, v) when relu is set. */
typedef struct fl_cl_epilogue {
    const void *bias; /* a device buffer of `columns` floats, or NULL */
    bool relu;
} fl_cl_epilogue;

/* C[m, n] = op(A) op(B), then the epilogue (NULL: none) on each result:
 * in the GEMM's store on CPU-type devices, after CLBlast in one more pass
 * on GPU-type ones. Row-major, offsets 0. */
int fl_cl_gemm_epilogue(fl_cl_device *d, bool ta, bool tb, int m, int n, int k, const void *a,
                        const void *b, void *c, const fl_cl_epilogue *epilogue);
/* MatMul node n's product (its transposes kept), then the epilogue (NULL: none). */
int fl_cl_matmul_epilogue(fl_cl_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                          const fl_cl_epilogue *epilogue);

/* launch_conv.c: MaxPoolGrad's dx from the pool's input x and dy; with
 * relu_mask also zero where the window's maximum is <= 0, i.e.
 * ReluGrad(MaxPoolGrad(...), x) when x is a Relu's output. */
int fl_cl_max_pool_grad_masked(fl_cl_device *d, const fl_conv_geometry *g, const void *x, const void *dy,
                               bool relu_mask, void *dx);

/* launch_fused.c: the session's fused ops (src/session_fusion.c) */
FL_CL_OP(fl_cl_fused_conv2d);
FL_CL_OP(fl_cl_fused_matmul);
FL_CL_OP(fl_cl_max_pool_relu_grad);
/* launch_epilogue.c: the epilogue as a pass of its own over y [count
 * floats, rows of columns], in place, for products whose kernel cannot
 * apply it (CLBlast's). */
int fl_cl_bias_relu(fl_cl_device *d, void *y, int count, int columns, const fl_cl_epilogue *e);

/* launch_conv_gemm.c: the convolutions as implicit GEMM (conv_gemm.cl), for
 * CPU-type devices; each enqueues its kernels and returns 0, or -1 after
 * fl_set_error. Conv2D applies `epilogue` (NULL: none) as it stores y. */
int fl_cl_conv2d_implicit(fl_cl_device *d, const fl_conv_geometry *g, const void *x,
                          const void *filter, const fl_cl_epilogue *epilogue, void *y);
int fl_cl_conv2d_backprop_input_implicit(fl_cl_device *d, const fl_conv_geometry *g,
                                         const void *dy, const void *filter, void *dx);
int fl_cl_conv2d_backprop_filter_implicit(fl_cl_device *d, const fl_conv_geometry *g,
                                          const void *x, const void *dy, void *dfilter);

/* launch_conv_winograd.c: 5x5 stride-1 convolutions by Winograd's F(4x4, 5x5)
 * (conv_winograd.cl), for CPU-type devices: whether they apply to g (and are
 * not turned off by FLOWLAB_WINOGRAD=0), Conv2D with its epilogue (NULL:
 * none), and Conv2DBackpropInput. Each returns 0, or -1 after fl_set_error. */
bool fl_cl_winograd_applies(const fl_cl_device *d, const fl_conv_geometry *g);
int fl_cl_conv2d_winograd(fl_cl_device *d, const fl_conv_geometry *g, const void *x,
                          const void *filter, const fl_cl_epilogue *epilogue, void *y);
int fl_cl_conv2d_backprop_input_winograd(fl_cl_device *d, const fl_conv_geometry *g, const void *dy,
                                         const void *filter, void *dx);
/* Conv2DBackpropFilter by F(5x5, 4x4) (conv_winograd_filter_grad.cl), where
 * fl_cl_winograd_applies: dfilter = the correlation of x with dy. */
int fl_cl_conv2d_backprop_filter_winograd(fl_cl_device *d, const fl_conv_geometry *g, const void *x,
                                          const void *dy, void *dfilter);

/* conv.cl and conv_gemm.cl take a geometry by value as their `geom`, thirteen ints. */
_Static_assert(sizeof(fl_conv_geometry) == 13 * sizeof(cl_int),
               "fl_conv_geometry must match conv.cl's geom");

#endif
