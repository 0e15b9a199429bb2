/* opencl_call.c: calling a kernel: each kernel's name, setting its arguments
 * one by one and launching it, with the first error kept and reported once;
 * OpenCL's error names. It calls nothing in opencl_device.c, which calls it. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "opencl_device.h"

/* Each kernel's function name in the cl/ kernel files: how opencl_device.c
 * finds it in the built program, and how errors here name it. */
static const char *const kernel_names[FL_CL_KERNEL_COUNT] = {
    [K_BINARY_INT] = "binary_int",
    [K_NEG_FLOAT] = "neg_float", [K_NEG_INT] = "neg_int",
    [K_ACCUMULATE_FLOAT] = "accumulate_float", [K_ACCUMULATE_INT] = "accumulate_int",
    [K_DIV_GRAD_B] = "div_grad_b",
    [K_ACTIVATION] = "activation", [K_ACTIVATION_GRAD] = "activation_grad",
    [K_SOFTMAX] = "softmax", [K_SOFTMAX_GRAD] = "softmax_grad",
    [K_SPARSE_XENT] = "sparse_xent", [K_SPARSE_XENT_GRAD] = "sparse_xent_grad",
    [K_REDUCE_ROWS] = "reduce_rows", [K_REDUCE_COLS] = "reduce_cols",
    [K_REDUCE_GRAD_ROWS] = "reduce_grad_rows", [K_REDUCE_GRAD_COLS] = "reduce_grad_cols",
    [K_REDUCE_FLOAT] = "reduce_float", [K_REDUCE_INT] = "reduce_int",
    [K_REDUCE_GRAD] = "reduce_grad", [K_COPY_WINDOW] = "copy_window",
    [K_CAST_TO_INT] = "cast_to_int", [K_CAST_TO_FLOAT] = "cast_to_float",
    [K_ARGMAX_FLOAT] = "argmax_float", [K_ARGMAX_INT] = "argmax_int",
    [K_EQUAL_FLOAT] = "equal_float", [K_EQUAL_INT] = "equal_int",
    [K_IM2COL] = "im2col", [K_COL2IM] = "col2im", [K_MAX_POOL] = "max_pool",
    [K_MAX_POOL_GRAD] = "max_pool_grad", [K_CONV_PACK_FILTER] = "conv_pack_filter",
    [K_CONV_GEMM] = "conv_gemm", [K_CONV_FILTER_GRAD] = "conv_filter_grad",
    [K_CONV_SUM_SPLITS] = "conv_sum_splits",
    [K_CONV_BACKPROP_INPUT_NARROW] = "conv_backprop_input_narrow",
    [K_CONV_FORWARD_NARROW] = "conv_forward_narrow",
    [K_WINOGRAD_FILTER] = "winograd_filter", [K_WINOGRAD_CONV] = "winograd_conv",
    [K_WINOGRAD_FILTER_GRAD] = "winograd_filter_grad",
    [K_WINOGRAD_FILTER_GRAD_OUTPUT] = "winograd_filter_grad_output",
    [K_BINARY_FLOAT_CHUNKS] = "binary_float_chunks",
    [K_RELU_CHUNKS] = "relu_chunks", [K_RELU_GRAD_CHUNKS] = "relu_grad_chunks",
    [K_BIAS_RELU_CHUNKS] = "bias_relu_chunks",
    [K_APPLY_GRADIENT_DESCENT] = "apply_gradient_descent",
    [K_APPLY_MOMENTUM] = "apply_momentum", [K_APPLY_ADAM] = "apply_adam",
    [K_FUSED_APPLY_GRADIENT_DESCENT] = "fused_apply_gradient_descent",
    [K_FUSED_APPLY_MOMENTUM] = "fused_apply_momentum", [K_FUSED_APPLY_ADAM] = "fused_apply_adam",
};

const char *fl_cl_kernel_name(fl_cl_kernel_id k) { return kernel_names[k]; }

fl_cl_call fl_cl_begin(fl_cl_device *d, fl_cl_kernel_id kernel)
{
    return (fl_cl_call){.d = d, .kernel = kernel, .next = 0, .error = CL_SUCCESS};
}

void fl_cl_value(fl_cl_call *c, size_t size, const void *value)
{
    cl_int err = clSetKernelArg(c->d->kernels[c->kernel], c->next++, size, value);
    if (c->error == CL_SUCCESS)
        c->error = err;
}

void fl_cl_mem(fl_cl_call *c, const void *buffer)
{
    cl_mem m = (cl_mem)buffer;
    fl_cl_value(c, sizeof m, &m);
}

void fl_cl_int(fl_cl_call *c, int value)
{
    cl_int v = value;
    fl_cl_value(c, sizeof v, &v);
}

void fl_cl_float(fl_cl_call *c, float value)
{
    cl_float v = value;
    fl_cl_value(c, sizeof v, &v);
}

void fl_cl_fault(fl_cl_call *c, const fl_node *n, int classes)
{
    fl_cl_device *d = c->d;
    int slot = d->nfault_ops < FL_CL_FAULT_SLOTS ? d->nfault_ops++ : FL_CL_FAULT_SLOTS - 1;
    snprintf(d->fault_ops[slot].op, sizeof d->fault_ops[slot].op, "%s", n->name);
    d->fault_ops[slot].classes = classes;
    fl_cl_mem(c, d->fault);
    fl_cl_int(c, slot);
}

static size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

static int enqueue(fl_cl_call *c, cl_uint dims, const size_t *global, const size_t *local)
{
    char what[96];
    snprintf(what, sizeof what, "setting the arguments of %s", fl_cl_kernel_name(c->kernel));
    if (c->error != CL_SUCCESS)
        return fl_cl_fail(what, c->error);
    cl_int err = clEnqueueNDRangeKernel(c->d->queue, c->d->kernels[c->kernel], dims, NULL, global,
                                        local, 0, NULL, NULL);
    snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", fl_cl_kernel_name(c->kernel));
    return err == CL_SUCCESS ? 0 : fl_cl_fail(what, err);
}

int fl_cl_run(fl_cl_call *c, size_t count)
{
    if (count == 0)
        return 0;
    size_t local = c->d->group, global = round_up(count, local);
    return enqueue(c, 1, &global, &local);
}

int fl_cl_run_chunks(fl_cl_call *c, size_t count)
{
    if (count == 0)
        return 0;
    size_t items = (count + (size_t)c->d->chunk - 1) / (size_t)c->d->chunk;
    size_t local = c->d->chunk > 8 ? 1 : c->d->group, global = round_up(items, local);
    return enqueue(c, 1, &global, &local);
}

int fl_cl_run_2d(fl_cl_call *c, size_t width, size_t height)
{
    if (width == 0 || height == 0)
        return 0;
    size_t local[2] = {c->d->group, 1};
    size_t global[2] = {round_up(width, local[0]), height};
    return enqueue(c, 2, global, local);
}

int fl_cl_count(const fl_tensor *t)
{
    int64_t n = fl_shape_size(t->shape);
    if (n > INT_MAX - 4096) { /* kernels index with int; leave room for rounding */
        char shape[64];
        fl_set_error_code(FL_UNIMPLEMENTED, "a tensor of shape %s is too large for the OpenCL kernels (2^31 elements)",
                          fl_shape_format(t->shape, shape, sizeof shape));
        return -1;
    }
    return (int)n;
}

int fl_cl_fail(const char *what, cl_int err)
{
    fl_set_error_code(FL_INTERNAL, "%s failed: %s (%d)", what, fl_cl_error_name(err), (int)err);
    return -1;
}

const char *fl_cl_error_name(cl_int err)
{
    switch (err) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_PLATFORM: return "CL_INVALID_PLATFORM";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_PROGRAM: return "CL_INVALID_PROGRAM";
    case CL_INVALID_PROGRAM_EXECUTABLE: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL: return "CL_INVALID_KERNEL";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_DIMENSION: return "CL_INVALID_WORK_DIMENSION";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "an OpenCL error";
    }
}
