/* launch.h: the CUDA backend's op launchers, one per op, each enqueuing on
 * the device's stream exactly what the host kernel of the same op computes
 * (src/host/host_*.c). Same arguments as a host kernel, plus the device;
 * laid out as cl/launch.h. The kernel table is in backend_cuda.c. */
#ifndef FLOWLAB_CUDA_LAUNCH_H
#define FLOWLAB_CUDA_LAUNCH_H

#include "cuda_device.h"

typedef int (*fl_cuda_launcher)(fl_cuda_device *d, const fl_node *n, fl_tensor *const *in,
                                fl_tensor *out, const fl_kernel_ctx *ctx);

#define FL_CUDA_OP(name)                                                                           \
    int name(fl_cuda_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out,           \
             const fl_kernel_ctx *ctx)

/* launch_math.c: element-wise arithmetic, activations, softmax, the loss */
FL_CUDA_OP(fl_cuda_add);
FL_CUDA_OP(fl_cuda_sub);
FL_CUDA_OP(fl_cuda_mul);
FL_CUDA_OP(fl_cuda_div);
FL_CUDA_OP(fl_cuda_neg);
FL_CUDA_OP(fl_cuda_add_n);
FL_CUDA_OP(fl_cuda_sum_to_shape);
FL_CUDA_OP(fl_cuda_div_grad_b);
FL_CUDA_OP(fl_cuda_relu);
FL_CUDA_OP(fl_cuda_relu_grad);
FL_CUDA_OP(fl_cuda_sigmoid);
FL_CUDA_OP(fl_cuda_sigmoid_grad);
FL_CUDA_OP(fl_cuda_tanh);
FL_CUDA_OP(fl_cuda_tanh_grad);
FL_CUDA_OP(fl_cuda_softplus);
FL_CUDA_OP(fl_cuda_softplus_grad);
FL_CUDA_OP(fl_cuda_softmax);
FL_CUDA_OP(fl_cuda_softmax_grad);
FL_CUDA_OP(fl_cuda_sparse_xent);
FL_CUDA_OP(fl_cuda_sparse_xent_grad);
/* launch_array.c: reductions, windows, casts and comparisons */
FL_CUDA_OP(fl_cuda_reduce_sum);
FL_CUDA_OP(fl_cuda_reduce_mean);
FL_CUDA_OP(fl_cuda_reduce_grad);
FL_CUDA_OP(fl_cuda_copy_input0); /* Identity, StopGradient, Reshape */
FL_CUDA_OP(fl_cuda_concat);
FL_CUDA_OP(fl_cuda_slice);
FL_CUDA_OP(fl_cuda_slice_grad);
FL_CUDA_OP(fl_cuda_cast);
FL_CUDA_OP(fl_cuda_argmax);
FL_CUDA_OP(fl_cuda_equal);
/* launch_state.c: values, variables and optimizer updates */
FL_CUDA_OP(fl_cuda_fill);
FL_CUDA_OP(fl_cuda_random_uniform);
FL_CUDA_OP(fl_cuda_truncated_normal);
FL_CUDA_OP(fl_cuda_assign);
FL_CUDA_OP(fl_cuda_assign_add);
FL_CUDA_OP(fl_cuda_apply_gradient_descent);
FL_CUDA_OP(fl_cuda_apply_momentum);
FL_CUDA_OP(fl_cuda_apply_adam);
FL_CUDA_OP(fl_cuda_multi_apply_adam);
/* launch_matmul.c: MatMul through cuBLAS, and FusedMatMul (the session's
 * fusion, src/session_fusion.c) with the bias and ReLU after it */
FL_CUDA_OP(fl_cuda_matmul);
FL_CUDA_OP(fl_cuda_fused_matmul);
/* launch_conv.c: convolution and max-pooling through cuDNN (the plans in
 * conv_plans.c), and the fused FusedConv2D and MaxPoolReluGrad */
FL_CUDA_OP(fl_cuda_conv2d);
FL_CUDA_OP(fl_cuda_fused_conv2d);
FL_CUDA_OP(fl_cuda_conv2d_backprop_input);
FL_CUDA_OP(fl_cuda_conv2d_backprop_filter);
FL_CUDA_OP(fl_cuda_max_pool);
FL_CUDA_OP(fl_cuda_max_pool_grad);
FL_CUDA_OP(fl_cuda_max_pool_relu_grad);

/* Shared by the launchers (launch_array.c): enqueues a device-to-device
 * copy of bytes; nothing when dst is src. */
int fl_cuda_copy(fl_cuda_device *d, void *dst, const void *src, size_t bytes);

/* Shared by the fused launchers (launch_matmul.c): out += bias per column
 * (the bias has one float per column of out), then ReLU when relu, in place. */
int fl_cuda_bias_relu(fl_cuda_device *d, bool relu, const fl_tensor *bias, fl_tensor *out);

#endif
