/* backend_host.c: the host device "/cpu:0" as a backend.
 * Memory is malloc, copies are memcpy, and each op's kernel is the plain C
 * reference kernel from host_*.c, picked from one table. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "host_kernels.h"

static const fl_host_kernel kernels[FL_OP_COUNT] = {
    [FL_OP_FILL] = fl_host_fill,
    [FL_OP_RANDOM_UNIFORM] = fl_host_random_uniform,
    [FL_OP_TRUNCATED_NORMAL] = fl_host_truncated_normal,
    [FL_OP_ASSIGN] = fl_host_assign,
    [FL_OP_ASSIGN_ADD] = fl_host_assign_add,
    [FL_OP_MATMUL] = fl_host_matmul,
    [FL_OP_ADD] = fl_host_add,
    [FL_OP_SUB] = fl_host_sub,
    [FL_OP_MUL] = fl_host_mul,
    [FL_OP_DIV] = fl_host_div,
    [FL_OP_NEG] = fl_host_neg,
    [FL_OP_ADD_N] = fl_host_add_n,
    [FL_OP_SUM_TO_SHAPE] = fl_host_sum_to_shape,
    [FL_OP_DIV_GRAD_B] = fl_host_div_grad_b,
    [FL_OP_RELU] = fl_host_relu,
    [FL_OP_RELU_GRAD] = fl_host_relu_grad,
    [FL_OP_SIGMOID] = fl_host_sigmoid,
    [FL_OP_SIGMOID_GRAD] = fl_host_sigmoid_grad,
    [FL_OP_TANH] = fl_host_tanh,
    [FL_OP_TANH_GRAD] = fl_host_tanh_grad,
    [FL_OP_SOFTPLUS] = fl_host_softplus,
    [FL_OP_SOFTPLUS_GRAD] = fl_host_softplus_grad,
    [FL_OP_SOFTMAX] = fl_host_softmax,
    [FL_OP_SOFTMAX_GRAD] = fl_host_softmax_grad,
    [FL_OP_SPARSE_XENT] = fl_host_sparse_xent,
    [FL_OP_SPARSE_XENT_GRAD] = fl_host_sparse_xent_grad,
    [FL_OP_REDUCE_SUM] = fl_host_reduce_sum,
    [FL_OP_REDUCE_MEAN] = fl_host_reduce_mean,
    [FL_OP_REDUCE_GRAD] = fl_host_reduce_grad,
    [FL_OP_RESHAPE] = fl_host_copy_input0,
    [FL_OP_CONCAT] = fl_host_concat,
    [FL_OP_SLICE] = fl_host_slice,
    [FL_OP_SLICE_GRAD] = fl_host_slice_grad,
    [FL_OP_IDENTITY] = fl_host_copy_input0,
    [FL_OP_STOP_GRADIENT] = fl_host_copy_input0,
    [FL_OP_CAST] = fl_host_cast,
    [FL_OP_ARGMAX] = fl_host_argmax,
    [FL_OP_EQUAL] = fl_host_equal,
    [FL_OP_CONV2D] = fl_host_conv2d,
    [FL_OP_CONV2D_BACKPROP_INPUT] = fl_host_conv2d_backprop_input,
    [FL_OP_CONV2D_BACKPROP_FILTER] = fl_host_conv2d_backprop_filter,
    [FL_OP_MAX_POOL] = fl_host_max_pool,
    [FL_OP_MAX_POOL_GRAD] = fl_host_max_pool_grad,
    [FL_OP_APPLY_GRADIENT_DESCENT] = fl_host_apply_gradient_descent,
    [FL_OP_APPLY_MOMENTUM] = fl_host_apply_momentum,
    [FL_OP_APPLY_ADAM] = fl_host_apply_adam,
    [FL_OP_FUSED_APPLY_GRADIENT_DESCENT] = fl_host_apply_gradient_descent,
    [FL_OP_FUSED_APPLY_MOMENTUM] = fl_host_apply_momentum,
    [FL_OP_FUSED_APPLY_ADAM] = fl_host_apply_adam,
    [FL_OP_MULTI_APPLY_ADAM] = fl_host_multi_apply_adam,
    /* after their product's kernel: see host_run */
    [FL_OP_FUSED_CONV2D] = fl_host_bias_relu,
    [FL_OP_FUSED_MATMUL] = fl_host_bias_relu,
    [FL_OP_MAX_POOL_RELU_GRAD] = fl_host_relu_mask,
};

#ifdef FL_HAVE_CBLAS
static const fl_host_kernel blas_kernels[FL_OP_COUNT] = {
    [FL_OP_MATMUL] = fl_host_matmul_blas,
    [FL_OP_CONV2D] = fl_host_conv2d_blas,
    [FL_OP_CONV2D_BACKPROP_INPUT] = fl_host_conv2d_backprop_input_blas,
    [FL_OP_CONV2D_BACKPROP_FILTER] = fl_host_conv2d_backprop_filter_blas,
};
#endif

fl_host_kernel fl_host_kernel_for(fl_op_kind op)
{
#ifdef FL_HAVE_CBLAS
    /* Read once: the choice holds for the process. Atomic, as several task
     * server threads may ask first at once (they store the same answer). */
    static atomic_int use_reference = -1;
    if (atomic_load(&use_reference) < 0) {
        const char *env = getenv("FLOWLAB_HOST_REFERENCE");
        atomic_store(&use_reference, env && strcmp(env, "1") == 0);
    }
    if (!atomic_load(&use_reference) && blas_kernels[op])
        return blas_kernels[op];
#endif
    return kernels[op];
}

static int host_device_count(void) { return 1; }

static int host_describe(int index, fl_device_info *info)
{
    (void)index;
    memset(info, 0, sizeof *info);
    strcpy(info->name, "/cpu:0");
    #ifdef FL_HAVE_CBLAS
    strcpy(info->description, "host CPU (C kernels; matmul and conv2d through OpenBLAS)");
#else
    strcpy(info->description, "host CPU (plain C reference kernels)");
#endif
    strcpy(info->backend, "host");
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    info->memory_bytes = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    info->compute_units = cores > 0 ? (int)cores : 1;
    return 0;
}

static void *host_open(int index)
{
    (void)index;
    static int host_state; /* the host needs none; any non-NULL pointer will do */
    return &host_state;
}

static void host_close(void *impl) { (void)impl; }
/* NULL when malloc fails: the session says RESOURCE_EXHAUSTED for that run. */
static void *host_alloc(void *impl, size_t bytes) { (void)impl; return malloc(bytes ? bytes : 1); }
static void host_release(void *impl, void *buffer) { (void)impl; free(buffer); }

static int host_copy(void *impl, void *dst, const void *src, size_t bytes)
{
    (void)impl;
    memcpy(dst, src, bytes);
    return 0;
}

static bool host_has_kernel(fl_op_kind op) { return kernels[op] != NULL; }

static int host_run(void *impl, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                    const fl_kernel_ctx *ctx)
{
    (void)impl;
    fl_op_kind product = fl_host_product_of(n->op); /* a fused op: its product first */
    if (product != n->op && fl_host_kernel_for(product)(n, in, out, ctx) != 0)
        return -1;
    return fl_host_kernel_for(n->op)(n, in, out, ctx);
}

static int host_wait(void *impl) { (void)impl; return 0; }

static const char *host_why_unavailable(void) { return "the host is always available"; }

const fl_backend fl_host_backend = {
    .name = "host",
    .device_count = host_device_count,
    .describe = host_describe,
    .open = host_open,
    .close = host_close,
    .alloc = host_alloc,
    .release = host_release,
    .copy_in = host_copy,
    .copy_out = host_copy,
    .has_kernel = host_has_kernel,
    .run = host_run,
    .wait = host_wait,
    .why_unavailable = host_why_unavailable,
    .device_copies = {.copy = host_copy, .copy_now = host_copy},
    /* No marks: run() has finished the op when it returns. No tracing:
     * host kernels run inside run(), so the session's own clock times them. */
};
