/* backend_opencl.c: the OpenCL backend's fl_backend table. /gpu:N is the
 * N-th OpenCL device found (GPUs first, then accelerators, then CPUs such as
 * PoCL's); each device gets its own context and in-order queue. run() only
 * enqueues; wait() is where the host blocks (and hears of kernel faults).
 * While tracing, each op is bracketed by markers whose profiling times say
 * when it really ran (take_timings). */
#include <stdio.h>
#include <string.h>

#include "backend_entry.h"
#include "backend_opencl.h"
#include "launch.h"

#define MAX_DEVICES 16

static const fl_cl_launcher launchers[FL_OP_COUNT] = {
    [FL_OP_FILL] = fl_cl_fill,
    [FL_OP_RANDOM_UNIFORM] = fl_cl_random_uniform,
    [FL_OP_TRUNCATED_NORMAL] = fl_cl_truncated_normal,
    [FL_OP_ASSIGN] = fl_cl_assign,
    [FL_OP_ASSIGN_ADD] = fl_cl_assign_add,
    [FL_OP_MATMUL] = fl_cl_matmul,
    [FL_OP_ADD] = fl_cl_add,
    [FL_OP_SUB] = fl_cl_sub,
    [FL_OP_MUL] = fl_cl_mul,
    [FL_OP_DIV] = fl_cl_div,
    [FL_OP_NEG] = fl_cl_neg,
    [FL_OP_ADD_N] = fl_cl_add_n,
    [FL_OP_SUM_TO_SHAPE] = fl_cl_sum_to_shape,
    [FL_OP_DIV_GRAD_B] = fl_cl_div_grad_b,
    [FL_OP_RELU] = fl_cl_relu,
    [FL_OP_RELU_GRAD] = fl_cl_relu_grad,
    [FL_OP_SIGMOID] = fl_cl_sigmoid,
    [FL_OP_SIGMOID_GRAD] = fl_cl_sigmoid_grad,
    [FL_OP_TANH] = fl_cl_tanh,
    [FL_OP_TANH_GRAD] = fl_cl_tanh_grad,
    [FL_OP_SOFTPLUS] = fl_cl_softplus,
    [FL_OP_SOFTPLUS_GRAD] = fl_cl_softplus_grad,
    [FL_OP_SOFTMAX] = fl_cl_softmax,
    [FL_OP_SOFTMAX_GRAD] = fl_cl_softmax_grad,
    [FL_OP_SPARSE_XENT] = fl_cl_sparse_xent,
    [FL_OP_SPARSE_XENT_GRAD] = fl_cl_sparse_xent_grad,
    [FL_OP_REDUCE_SUM] = fl_cl_reduce_sum,
    [FL_OP_REDUCE_MEAN] = fl_cl_reduce_mean,
    [FL_OP_REDUCE_GRAD] = fl_cl_reduce_grad,
    [FL_OP_RESHAPE] = fl_cl_copy_input0,
    [FL_OP_CONCAT] = fl_cl_concat,
    [FL_OP_SLICE] = fl_cl_slice,
    [FL_OP_SLICE_GRAD] = fl_cl_slice_grad,
    [FL_OP_IDENTITY] = fl_cl_copy_input0,
    [FL_OP_STOP_GRADIENT] = fl_cl_copy_input0,
    [FL_OP_CAST] = fl_cl_cast,
    [FL_OP_ARGMAX] = fl_cl_argmax,
    [FL_OP_EQUAL] = fl_cl_equal,
    [FL_OP_CONV2D] = fl_cl_conv2d,
    [FL_OP_CONV2D_BACKPROP_INPUT] = fl_cl_conv2d_backprop_input,
    [FL_OP_CONV2D_BACKPROP_FILTER] = fl_cl_conv2d_backprop_filter,
    [FL_OP_MAX_POOL] = fl_cl_max_pool,
    [FL_OP_MAX_POOL_GRAD] = fl_cl_max_pool_grad,
    [FL_OP_APPLY_GRADIENT_DESCENT] = fl_cl_apply_gradient_descent,
    [FL_OP_APPLY_MOMENTUM] = fl_cl_apply_momentum,
    [FL_OP_APPLY_ADAM] = fl_cl_apply_adam,
    [FL_OP_FUSED_APPLY_GRADIENT_DESCENT] = fl_cl_fused_apply_gradient_descent,
    [FL_OP_FUSED_APPLY_MOMENTUM] = fl_cl_fused_apply_momentum,
    [FL_OP_FUSED_APPLY_ADAM] = fl_cl_fused_apply_adam,
    [FL_OP_MULTI_APPLY_ADAM] = fl_cl_multi_apply_adam,
    [FL_OP_FUSED_CONV2D] = fl_cl_fused_conv2d,
    [FL_OP_FUSED_MATMUL] = fl_cl_fused_matmul,
    [FL_OP_MAX_POOL_RELU_GRAD] = fl_cl_max_pool_relu_grad,
};

/* ---- which devices exist: found once, in a fixed order ---- */

static pthread_once_t found_once = PTHREAD_ONCE_INIT;
static cl_device_id found[MAX_DEVICES];
static int nfound;
static char why_none[FL_ERROR_LEN];
static fl_cl_device *opened[MAX_DEVICES];
static pthread_mutex_t opened_lock = PTHREAD_MUTEX_INITIALIZER;

static void add_devices(cl_platform_id platform, cl_device_type type)
{
    cl_device_id ids[MAX_DEVICES];
    cl_uint n = 0;
    if (clGetDeviceIDs(platform, type, MAX_DEVICES, ids, &n) != CL_SUCCESS)
        return;
    for (cl_uint i = 0; i < n && nfound < MAX_DEVICES; i++)
        found[nfound++] = ids[i];
}

static void find_devices(void)
{
    cl_platform_id platforms[8];
    cl_uint nplatforms = 0;
    cl_int err = clGetPlatformIDs(8, platforms, &nplatforms);
    if (err != CL_SUCCESS || nplatforms == 0) {
        snprintf(why_none, sizeof why_none, "no OpenCL platform found; install PoCL: "
                 "apt-get install pocl-opencl-icd (clGetPlatformIDs: %s)", fl_cl_error_name(err));
        return;
    }
    if (nplatforms > 8)
        nplatforms = 8;
    const cl_device_type order[3] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ACCELERATOR,
                                      CL_DEVICE_TYPE_CPU};
    for (int t = 0; t < 3; t++)
        for (cl_uint p = 0; p < nplatforms; p++)
            add_devices(platforms[p], order[t]);
    if (nfound == 0)
        snprintf(why_none, sizeof why_none, "%u OpenCL platform(s) found but no device; with PoCL, "
                 "check POCL_DEVICES (e.g. POCL_DEVICES=pthread) and clinfo", nplatforms);
}

static int cl_device_count(void)
{
    pthread_once(&found_once, find_devices);
    return nfound;
}

static int cl_describe(int index, fl_device_info *info)
{
    memset(info, 0, sizeof *info);
    if (index < 0 || index >= cl_device_count())
        return -1;
    cl_device_id id = found[index];
    char name[96] = "", version[64] = "";
    cl_ulong memory = 0;
    cl_uint units = 0;
    clGetDeviceInfo(id, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    clGetDeviceInfo(id, CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
    clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof memory, &memory, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    snprintf(info->name, sizeof info->name, "/gpu:%d", index);
    snprintf(info->description, sizeof info->description, "%s (%s)", name, version);
    strcpy(info->backend, "opencl");
    info->memory_bytes = memory;
    info->compute_units = (int)units;
    return 0;
}

static void *cl_open(int index)
{
    if (index < 0 || index >= cl_device_count())
        return NULL;
    fl_cl_device *d = fl_cl_device_open(found[index]);
    pthread_mutex_lock(&opened_lock);
    opened[index] = d;
    if (!d) /* the registry asks why_unavailable() for the reason */
        snprintf(why_none, sizeof why_none, "%s", fl_last_error());
    pthread_mutex_unlock(&opened_lock);
    return d;
}

static void cl_close(void *impl)
{
    pthread_mutex_lock(&opened_lock);
    for (int i = 0; i < MAX_DEVICES; i++)
        if (opened[i] == impl)
            opened[i] = NULL;
    pthread_mutex_unlock(&opened_lock);
    fl_cl_device_close(impl);
}

static void *cl_alloc(void *impl, size_t bytes)
{
    fl_cl_device *d = impl;
    pthread_mutex_lock(&d->lock);
    cl_mem m = fl_cl_pool_take(&d->pool, bytes);
    pthread_mutex_unlock(&d->lock);
    return m;
}

static void cl_release(void *impl, void *buffer)
{
    fl_cl_device *d = impl;
    pthread_mutex_lock(&d->lock);
    fl_cl_pool_give(&d->pool, buffer);
    pthread_mutex_unlock(&d->lock);
}

/* On a device whose pool lies in host memory (opencl_pool.h): where a buffer's bytes are. */
static void *cl_address_of(void *impl, void *buffer)
{
    fl_cl_device *d = impl;
    return d->pool.on_host_memory ? fl_cl_pool_host_address(buffer) : NULL;
}

/* A buffer over host bytes themselves, where the pool's own lie there too
 * (CL_MEM_USE_HOST_PTR: PoCL's CPU devices read them in place, at any
 * alignment); NULL elsewhere, and the session copies instead. */
static void *cl_wrap(void *impl, void *host, size_t bytes)
{
    fl_cl_device *d = impl;
    if (!d->pool.on_host_memory)
        return NULL;
    cl_int err;
    cl_mem m = clCreateBuffer(d->pool.context, CL_MEM_USE_HOST_PTR | CL_MEM_READ_WRITE, bytes, host, &err);
    return err == CL_SUCCESS && fl_cl_pool_host_address(m) == host ? m : NULL;
}

static void cl_unwrap(void *impl, void *buffer)
{
    (void)impl;
    clReleaseMemObject(buffer);
}

/* Non-blocking, as the seam allows: the host memory stays valid until wait. */
static int cl_copy_in(void *impl, void *dst, const void *host_src, size_t bytes)
{
    fl_cl_device *d = impl;
    if (bytes == 0)
        return 0;
    cl_int err = clEnqueueWriteBuffer(d->queue, (cl_mem)dst, CL_FALSE, 0, bytes, host_src, 0, NULL,
                                      NULL);
    return err == CL_SUCCESS ? 0 : fl_cl_fail("clEnqueueWriteBuffer", err);
}

static int cl_copy_out(void *impl, void *host_dst, const void *src, size_t bytes)
{
    fl_cl_device *d = impl;
    if (bytes == 0)
        return 0;
    cl_int err = clEnqueueReadBuffer(d->queue, (cl_mem)src, CL_FALSE, 0, bytes, host_dst, 0, NULL,
                                     NULL);
    return err == CL_SUCCESS ? 0 : fl_cl_fail("clEnqueueReadBuffer", err);
}

/* ---- marks: copying a finished value while the queue goes on ---- */

static void *cl_mark(void *impl)
{
    fl_cl_device *d = impl;
    cl_event mark;
    if (fl_cl_mark(d, &mark) != 0)
        return NULL;
    cl_int err = clFlush(d->queue); /* a mark nobody submitted is never reached */
    if (err != CL_SUCCESS) {
        clReleaseEvent(mark);
        fl_cl_fail("clFlush", err);
        return NULL;
    }
    return mark;
}

static int cl_reached(void *impl, void *mark, bool block)
{
    (void)impl;
    cl_event event = mark;
    cl_int status, err = block ? clWaitForEvents(1, &event) : CL_SUCCESS;
    if (err != CL_SUCCESS && err != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        return fl_cl_fail("clWaitForEvents", err);
    err = clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    if (err != CL_SUCCESS)
        return fl_cl_fail("clGetEventInfo", err);
    if (status < 0) /* the device's wait() says which kernel failed */
        return fl_cl_fail("a command before the mark", status);
    return status == CL_COMPLETE ? 1 : 0;
}

/* On the device's second queue: the first may still be busy with later ops. */
static int cl_copy_out_now(void *impl, void *host_dst, const void *src, size_t bytes)
{
    fl_cl_device *d = impl;
    if (bytes == 0)
        return 0;
    cl_int err = clEnqueueReadBuffer(d->copy_queue, (cl_mem)src, CL_TRUE, 0, bytes, host_dst, 0,
                                     NULL, NULL);
    return err == CL_SUCCESS ? 0 : fl_cl_fail("clEnqueueReadBuffer", err);
}

/* ---- copies within the device: for fetches and feeds that stay on it ---- */

static int cl_copy_within(void *impl, void *dst, const void *src, size_t bytes)
{
    return fl_cl_copy(impl, src, dst, bytes);
}

/* On the second queue, as cl_copy_out_now, and finished on return. */
static int cl_copy_within_now(void *impl, void *dst, const void *src, size_t bytes)
{
    fl_cl_device *d = impl;
    if (bytes == 0 || src == dst)
        return 0;
    cl_int err = clEnqueueCopyBuffer(d->copy_queue, (cl_mem)src, (cl_mem)dst, 0, 0, bytes, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return fl_cl_fail("clEnqueueCopyBuffer", err);
    err = clFinish(d->copy_queue);
    return err == CL_SUCCESS ? 0 : fl_cl_fail("clFinish", err);
}

static void cl_release_mark(void *impl, void *mark)
{
    (void)impl;
    clReleaseEvent(mark);
}

static bool cl_has_kernel(fl_op_kind op) { return launchers[op] != NULL; }

/* Aliased outputs (Identity, Reshape, ...) already are their input. */
static int launch(fl_cl_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                  const fl_kernel_ctx *ctx)
{
    bool aliased = fl_op_def_of(n->op)->sig.aliases != FL_ALIAS_NONE && out->data == in[0]->data;
    if (aliased && launchers[n->op] == fl_cl_copy_input0)
        return 0;
    return launchers[n->op](d, n, in, out, ctx);
}

/* While tracing: the op's commands between two markers (opencl_device.h). */
static int launch_timed(fl_cl_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                        const fl_kernel_ctx *ctx)
{
    cl_event before;
    if (fl_cl_mark(d, &before) != 0)
        return -1;
    if (launch(d, n, in, out, ctx) != 0) {
        clReleaseEvent(before);
        return -1;
    }
    return fl_cl_keep_timing(d, n->id, before);
}

static int cl_run(void *impl, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                  const fl_kernel_ctx *ctx)
{
    fl_cl_device *d = impl;
    if (!launchers[n->op]) {
        fl_set_error_code(FL_UNIMPLEMENTED, "the OpenCL backend has no kernel for %s", fl_node_op_type(n));
        return -1;
    }
    pthread_mutex_lock(&d->lock);
    int rc = d->tracing ? launch_timed(d, n, in, out, ctx) : launch(d, n, in, out, ctx);
    pthread_mutex_unlock(&d->lock);
    return rc;
}

static int cl_wait(void *impl) { return fl_cl_device_wait(impl); }

static int cl_set_tracing(void *impl, bool on) { return fl_cl_device_set_tracing(impl, on); }

static int cl_take_timings(void *impl, fl_op_timing *out, int max)
{
    return fl_cl_device_take_timings(impl, out, max);
}

static const char *cl_why_unavailable(void)
{
    cl_device_count();
    return why_none[0] ? why_none : "the OpenCL devices are available";
}

fl_opencl_pool_stats fl_opencl_pool_stats_of(int index)
{
    fl_opencl_pool_stats s = {0, 0};
    pthread_mutex_lock(&opened_lock);
    fl_cl_device *d = index >= 0 && index < MAX_DEVICES ? opened[index] : NULL;
    if (d) {
        pthread_mutex_lock(&d->lock);
        s = (fl_opencl_pool_stats){d->pool.created, d->pool.reused};
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_unlock(&opened_lock);
    return s;
}

const fl_backend fl_opencl_backend = {
    .name = "opencl",
    .device_count = cl_device_count,
    .describe = cl_describe,
    .open = cl_open,
    .close = cl_close,
    .alloc = cl_alloc,
    .release = cl_release,
    .copy_in = cl_copy_in,
    .copy_out = cl_copy_out,
    .has_kernel = cl_has_kernel,
    .run = cl_run,
    .wait = cl_wait,
    .why_unavailable = cl_why_unavailable,
    .marks = {
        .mark = cl_mark,
        .reached = cl_reached,
        .copy_out_now = cl_copy_out_now,
        .release_mark = cl_release_mark,
    },
    .tracing = {
        .set_tracing = cl_set_tracing,
        .take_timings = cl_take_timings,
    },
    .host_memory = {.address_of = cl_address_of, .wrap = cl_wrap, .unwrap = cl_unwrap},
    .device_copies = {.copy = cl_copy_within, .copy_now = cl_copy_within_now},
};

/* The registry's entry (src/backend_entry.h): linked into every program. */
const fl_backend_entry fl_cl_backend_entry = {.name = "opencl", .linked = &fl_opencl_backend};

#if defined(__SANITIZE_ADDRESS__)
/* Under AddressSanitizer: PoCL and the LLVM inside it keep some compiler
 * state for the life of the process, which LeakSanitizer reports when a
 * program is built from source. Those leaks are theirs; ours still count.
 * This hook is LeakSanitizer's own way to take suppressions from a program;
 * it lives here because this file is in every program that can open PoCL. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libpocl.so\n"
           "leak:libLLVM\n"
           "leak:libOpenCL.so\n";
}
#endif
