/* host_kernels.h: the reference kernels of the host device "/cpu:0".
 * Plain, readable C: every accelerator backend is tested against these.
 * A kernel gets the node (for its attrs), its inputs and an output already
 * sized to the run-time shape; it returns 0, or -1 after fl_set_error. */
#ifndef FLOWLAB_HOST_KERNELS_H
#define FLOWLAB_HOST_KERNELS_H

#include "device.h" /* fl_kernel_ctx */

typedef int (*fl_host_kernel)(const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                              const fl_kernel_ctx *ctx);

#define FL_HOST_KERNEL(name) \
    int name(const fl_node *n, fl_tensor *const *in, fl_tensor *out, const fl_kernel_ctx *ctx)

/* host_parallel.c: fn(args, begin, end) over [0, count), cut into one
 * range per core; small loops run on the calling thread alone. */
typedef void fl_range_fn(void *args, int64_t begin, int64_t end);
void fl_parallel_for(int64_t count, fl_range_fn *fn, void *args);

/* host_state.c */
FL_HOST_KERNEL(fl_host_fill);
FL_HOST_KERNEL(fl_host_random_uniform);
FL_HOST_KERNEL(fl_host_truncated_normal);
FL_HOST_KERNEL(fl_host_assign);
FL_HOST_KERNEL(fl_host_assign_add);
/* host_optimizers.c */
FL_HOST_KERNEL(fl_host_apply_gradient_descent);
FL_HOST_KERNEL(fl_host_apply_momentum);
FL_HOST_KERNEL(fl_host_apply_adam);
FL_HOST_KERNEL(fl_host_multi_apply_adam);
/* host_math.c */
FL_HOST_KERNEL(fl_host_matmul);
FL_HOST_KERNEL(fl_host_add);
FL_HOST_KERNEL(fl_host_sub);
FL_HOST_KERNEL(fl_host_mul);
FL_HOST_KERNEL(fl_host_div);
FL_HOST_KERNEL(fl_host_neg);
FL_HOST_KERNEL(fl_host_add_n);
FL_HOST_KERNEL(fl_host_sum_to_shape);
FL_HOST_KERNEL(fl_host_div_grad_b);
/* host_nn.c */
FL_HOST_KERNEL(fl_host_relu);
FL_HOST_KERNEL(fl_host_relu_grad);
FL_HOST_KERNEL(fl_host_sigmoid);
FL_HOST_KERNEL(fl_host_sigmoid_grad);
FL_HOST_KERNEL(fl_host_tanh);
FL_HOST_KERNEL(fl_host_tanh_grad);
FL_HOST_KERNEL(fl_host_softplus);
FL_HOST_KERNEL(fl_host_softplus_grad);
FL_HOST_KERNEL(fl_host_softmax);
FL_HOST_KERNEL(fl_host_softmax_grad);
FL_HOST_KERNEL(fl_host_sparse_xent);
FL_HOST_KERNEL(fl_host_sparse_xent_grad);
/* host_reduce.c */
FL_HOST_KERNEL(fl_host_reduce_sum);
FL_HOST_KERNEL(fl_host_reduce_mean);
FL_HOST_KERNEL(fl_host_reduce_grad);
/* host_array.c */
FL_HOST_KERNEL(fl_host_copy_input0); /* Identity, StopGradient, Reshape */
FL_HOST_KERNEL(fl_host_concat);
FL_HOST_KERNEL(fl_host_slice);
FL_HOST_KERNEL(fl_host_slice_grad);
FL_HOST_KERNEL(fl_host_cast);
FL_HOST_KERNEL(fl_host_argmax);
FL_HOST_KERNEL(fl_host_equal);
/* host_conv.c */
FL_HOST_KERNEL(fl_host_conv2d);
FL_HOST_KERNEL(fl_host_conv2d_backprop_input);
FL_HOST_KERNEL(fl_host_conv2d_backprop_filter);
FL_HOST_KERNEL(fl_host_max_pool);
FL_HOST_KERNEL(fl_host_max_pool_grad);
/* host_fused.c: the session's fused ops (session_fusion.c) are the op
 * fl_host_product_of names (Conv2D for FusedConv2D; op itself for any
 * other), then one of these over its output, in place. */
fl_op_kind fl_host_product_of(fl_op_kind op);
FL_HOST_KERNEL(fl_host_bias_relu);
FL_HOST_KERNEL(fl_host_relu_mask);

/* host_blas.c, when built with CBLAS (FL_HAVE_CBLAS): the same ops as GEMMs. */
FL_HOST_KERNEL(fl_host_matmul_blas);
FL_HOST_KERNEL(fl_host_conv2d_blas);
FL_HOST_KERNEL(fl_host_conv2d_backprop_input_blas);
FL_HOST_KERNEL(fl_host_conv2d_backprop_filter_blas);

/* The kernel /cpu:0 runs for op: the CBLAS one where it exists, unless
 * FLOWLAB_HOST_REFERENCE=1 asks for the plain loops (tests compare both). */
fl_host_kernel fl_host_kernel_for(fl_op_kind op);

#endif
