/* backend_cuda.c: NVIDIA GPUs as flowlab's "/gpu:N", through the CUDA runtime.
 * The fl_backend table: finding devices, opening one (a stream, cuBLAS and
 * cuDNN handles), memory from the pool, copies, wait(), and the kernel
 * table: each op's launcher is in launch_*.c, the kernels in the .cu files.
 * Nothing here waits except wait(): run() records (cuda_graph.c), and every
 * other operation on the stream first flushes what was recorded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_graph.h"

/* ---- which devices exist ---- */

static pthread_once_t counted = PTHREAD_ONCE_INIT;
static int device_count;
static char reason[FL_ERROR_LEN]; /* why there is no device, or why one failed to open */
static pthread_mutex_t reason_lock = PTHREAD_MUTEX_INITIALIZER;

/* No driver, no GPU, or a driver older than this runtime all mean "no CUDA
 * device", not an error: flowlab then runs on /cpu:0 (or OpenCL). */
static void count_devices(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(reason, sizeof reason, "no CUDA device: cudaGetDeviceCount says '%s' (%s); "
                 "nvidia-smi shows whether the driver sees a GPU", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        return;
    }
    if (n == 0)
        snprintf(reason, sizeof reason, "no CUDA device: cudaGetDeviceCount found none");
    device_count = n;
}

static int cuda_device_count(void)
{
    pthread_once(&counted, count_devices);
    return device_count;
}

static const char *cuda_why_unavailable(void)
{
    pthread_once(&counted, count_devices);
    return reason[0] ? reason : "the CUDA devices are available";
}

static int cuda_describe(int index, fl_device_info *info)
{
    memset(info, 0, sizeof *info);
    struct cudaDeviceProp prop;
    if (fl_cuda_check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties") != 0)
        return -1;
    snprintf(info->name, sizeof info->name, "/gpu:%d", index);
    snprintf(info->description, sizeof info->description, "%s (compute capability %d.%d, %d SMs)",
             prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    strcpy(info->backend, "cuda");
    info->memory_bytes = prop.totalGlobalMem;
    info->compute_units = prop.multiProcessorCount;
    return 0;
}

/* ---- opening and closing one device ---- */

static void destroy(fl_cuda_device *d)
{
    if (d->recorder && d->stream)
        fl_cuda_flush(d);
    if (d->stream)
        cudaStreamSynchronize(d->stream);
    fl_cuda_recorder_free(d); /* its graphs give their blocks back to the pool */
    fl_cuda_trace_free(d);
    fl_cuda_pool_trim(d, true);
    if (d->cublas_workspace)
        cudaFree(d->cublas_workspace);
    fl_cuda_conv_plans_free(d);
    if (d->cudnn)
        cudnnDestroy(d->cudnn);
    if (d->cublas)
        cublasDestroy(d->cublas);
    if (d->fault)
        cudaFree(d->fault);
    if (d->fault_host)
        cudaFreeHost(d->fault_host);
    if (d->stream)
        cudaStreamDestroy(d->stream);
    if (d->copy_stream)
        cudaStreamDestroy(d->copy_stream);
    fl_cuda_free_pending(d);
    free(d->pending);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* cuBLAS follows the device's TF32 policy: CUBLAS_TF32_TENSOR_OP_MATH
 * rounds the operands of a float32 product to TF32 on tensor cores; the
 * default math mode keeps full float32, so results match the host's to
 * float rounding (FLOWLAB_ALLOW_TF32=0). Its workspace is ours,
 * made once: a captured step must not allocate, and one fixed workspace on
 * one stream keeps cuBLAS's results the same run after run. */
#define CUBLAS_WORKSPACE_BYTES ((size_t)32 << 20) /* NVIDIA's advice for Hopper */

static int open_libraries(fl_cuda_device *d)
{
    if (fl_cuda_check(cudaMalloc(&d->cublas_workspace, CUBLAS_WORKSPACE_BYTES), "cudaMalloc(cuBLAS workspace)") != 0)
        return -1;
    if (fl_cublas_check(cublasCreate(&d->cublas), "cublasCreate") != 0 ||
        fl_cublas_check(cublasSetStream(d->cublas, d->stream), "cublasSetStream") != 0 ||
        fl_cublas_check(cublasSetWorkspace(d->cublas, d->cublas_workspace, CUBLAS_WORKSPACE_BYTES),
                        "cublasSetWorkspace") != 0 ||
        fl_cublas_check(cublasSetMathMode(d->cublas, d->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                        "cublasSetMathMode") != 0)
        return -1;
    if (fl_cudnn_check(cudnnCreate(&d->cudnn), "cudnnCreate") != 0 ||
        fl_cudnn_check(cudnnSetStream(d->cudnn, d->stream), "cudnnSetStream") != 0)
        return -1;
    return 0;
}

static int open_device(fl_cuda_device *d)
{
    d->deterministic = fl_cuda_deterministic_requested();
    int major = 0;
    if (fl_cuda_check(cudaSetDevice(d->index), "cudaSetDevice") != 0 ||
        fl_cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d->index),
                      "cudaDeviceGetAttribute") != 0)
        return -1;
    d->allow_tf32 = fl_cuda_tf32_allowed(major);
    if (fl_cuda_check(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking), "cudaStreamCreate") != 0 ||
        fl_cuda_check(cudaStreamCreateWithFlags(&d->copy_stream, cudaStreamNonBlocking),
                      "cudaStreamCreate(copies)") != 0)
        return -1;
    size_t fault_bytes = FL_CUDA_FAULT_SLOTS * sizeof *d->fault;
    if (fl_cuda_check(cudaMalloc((void **)&d->fault, fault_bytes), "cudaMalloc") != 0 ||
        fl_cuda_check(cudaMallocHost((void **)&d->fault_host, fault_bytes), "cudaMallocHost") != 0 ||
        fl_cuda_check(cudaMemsetAsync(d->fault, 0, fault_bytes, d->stream), "cudaMemset") != 0)
        return -1;
    return open_libraries(d);
}

static void *cuda_open(int index)
{
    fl_cuda_device *d = fl_xcalloc(1, sizeof *d);
    d->index = index;
    pthread_mutex_init(&d->lock, NULL);
    d->recorder = fl_cuda_recorder_new();
    if (open_device(d) == 0)
        return d;
    pthread_mutex_lock(&reason_lock);
    snprintf(reason, sizeof reason, "%s", fl_last_error());
    pthread_mutex_unlock(&reason_lock);
    destroy(d);
    return NULL;
}

static void cuda_close(void *impl)
{
    fl_cuda_device *d = impl;
    cudaSetDevice(d->index);
    destroy(d);
}

/* ---- memory and copies ---- */

static void *cuda_alloc(void *impl, size_t bytes)
{
    fl_cuda_device *d = impl;
    cudaSetDevice(d->index);
    return fl_cuda_pool_get(d, bytes);
}

/* Recorded launches may still use the buffer: they go first, since a
 * trimmed pool could otherwise free it before they run. */
static void cuda_release(void *impl, void *buffer)
{
    fl_cuda_flush(impl);
    fl_cuda_pool_put(impl, buffer);
}

static int copy(fl_cuda_device *d, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    if (bytes == 0)
        return 0;
    cudaSetDevice(d->index);
    if (fl_cuda_flush(d) != 0)
        return -1;
    return fl_cuda_check(cudaMemcpyAsync(dst, src, bytes, kind, d->stream), "cudaMemcpyAsync");
}

static int cuda_copy_in(void *impl, void *dst, const void *host_src, size_t bytes)
{
    return copy(impl, dst, host_src, bytes, cudaMemcpyHostToDevice);
}

static int cuda_copy_out(void *impl, void *host_dst, const void *src, size_t bytes)
{
    return copy(impl, host_dst, src, bytes, cudaMemcpyDeviceToHost);
}

/* ---- marks: copying a finished value while the stream goes on ---- */

static void *cuda_mark(void *impl)
{
    fl_cuda_device *d = impl;
    cudaEvent_t mark;
    cudaSetDevice(d->index);
    if (fl_cuda_flush(d) != 0)
        return NULL;
    if (fl_cuda_check(cudaEventCreateWithFlags(&mark, cudaEventDisableTiming), "cudaEventCreate") != 0)
        return NULL;
    if (fl_cuda_check(cudaEventRecord(mark, d->stream), "cudaEventRecord") != 0) {
        cudaEventDestroy(mark);
        return NULL;
    }
    return mark;
}

static int cuda_reached(void *impl, void *mark, bool block)
{
    fl_cuda_device *d = impl;
    cudaSetDevice(d->index);
    cudaError_t e = block ? cudaEventSynchronize(mark) : cudaEventQuery(mark);
    if (e == cudaErrorNotReady) {
        cudaGetLastError(); /* not an error: keep it from the next launch's check */
        return 0;
    }
    return fl_cuda_check(e, block ? "cudaEventSynchronize" : "cudaEventQuery") == 0 ? 1 : -1;
}

/* On the device's second stream, finished on return: the first may still
 * be busy with later ops (the value was finished before a reached mark). */
static int copy_now(fl_cuda_device *d, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    if (bytes == 0 || src == dst)
        return 0;
    cudaSetDevice(d->index);
    if (fl_cuda_check(cudaMemcpyAsync(dst, src, bytes, kind, d->copy_stream), "cudaMemcpyAsync") != 0)
        return -1;
    return fl_cuda_check(cudaStreamSynchronize(d->copy_stream), "cudaStreamSynchronize");
}

static int cuda_copy_out_now(void *impl, void *host_dst, const void *src, size_t bytes)
{
    return copy_now(impl, host_dst, src, bytes, cudaMemcpyDeviceToHost);
}

/* ---- copies within the device: for fetches and feeds that stay on it ---- */

static int cuda_copy_within(void *impl, void *dst, const void *src, size_t bytes)
{
    return copy(impl, dst, src, bytes, cudaMemcpyDeviceToDevice);
}

static int cuda_copy_within_now(void *impl, void *dst, const void *src, size_t bytes)
{
    return copy_now(impl, dst, src, bytes, cudaMemcpyDeviceToDevice);
}

static void cuda_release_mark(void *impl, void *mark)
{
    (void)impl;
    cudaEventDestroy(mark);
}

/* ---- running and waiting ---- */

/* The kernel table: which launcher (launch_*.c) enqueues each op, as
 * cl/backend_opencl.c has it. Identity, StopGradient and Reshape alias
 * their input (the session gives them input 0's buffer), so
 * fl_cuda_copy_input0 has nothing to do for them. */
static const fl_cuda_launcher launchers[FL_OP_COUNT] = {
    [FL_OP_FILL] = fl_cuda_fill,
    [FL_OP_RANDOM_UNIFORM] = fl_cuda_random_uniform,
    [FL_OP_TRUNCATED_NORMAL] = fl_cuda_truncated_normal,
    [FL_OP_ASSIGN] = fl_cuda_assign,
    [FL_OP_ASSIGN_ADD] = fl_cuda_assign_add,
    [FL_OP_MATMUL] = fl_cuda_matmul,
    [FL_OP_ADD] = fl_cuda_add,
    [FL_OP_SUB] = fl_cuda_sub,
    [FL_OP_MUL] = fl_cuda_mul,
    [FL_OP_DIV] = fl_cuda_div,
    [FL_OP_NEG] = fl_cuda_neg,
    [FL_OP_ADD_N] = fl_cuda_add_n,
    [FL_OP_SUM_TO_SHAPE] = fl_cuda_sum_to_shape,
    [FL_OP_DIV_GRAD_B] = fl_cuda_div_grad_b,
    [FL_OP_RELU] = fl_cuda_relu,
    [FL_OP_RELU_GRAD] = fl_cuda_relu_grad,
    [FL_OP_SIGMOID] = fl_cuda_sigmoid,
    [FL_OP_SIGMOID_GRAD] = fl_cuda_sigmoid_grad,
    [FL_OP_TANH] = fl_cuda_tanh,
    [FL_OP_TANH_GRAD] = fl_cuda_tanh_grad,
    [FL_OP_SOFTPLUS] = fl_cuda_softplus,
    [FL_OP_SOFTPLUS_GRAD] = fl_cuda_softplus_grad,
    [FL_OP_SOFTMAX] = fl_cuda_softmax,
    [FL_OP_SOFTMAX_GRAD] = fl_cuda_softmax_grad,
    [FL_OP_SPARSE_XENT] = fl_cuda_sparse_xent,
    [FL_OP_SPARSE_XENT_GRAD] = fl_cuda_sparse_xent_grad,
    [FL_OP_REDUCE_SUM] = fl_cuda_reduce_sum,
    [FL_OP_REDUCE_MEAN] = fl_cuda_reduce_mean,
    [FL_OP_REDUCE_GRAD] = fl_cuda_reduce_grad,
    [FL_OP_RESHAPE] = fl_cuda_copy_input0,
    [FL_OP_CONCAT] = fl_cuda_concat,
    [FL_OP_SLICE] = fl_cuda_slice,
    [FL_OP_SLICE_GRAD] = fl_cuda_slice_grad,
    [FL_OP_IDENTITY] = fl_cuda_copy_input0,
    [FL_OP_STOP_GRADIENT] = fl_cuda_copy_input0,
    [FL_OP_CAST] = fl_cuda_cast,
    [FL_OP_ARGMAX] = fl_cuda_argmax,
    [FL_OP_EQUAL] = fl_cuda_equal,
    [FL_OP_CONV2D] = fl_cuda_conv2d,
    [FL_OP_CONV2D_BACKPROP_INPUT] = fl_cuda_conv2d_backprop_input,
    [FL_OP_CONV2D_BACKPROP_FILTER] = fl_cuda_conv2d_backprop_filter,
    [FL_OP_MAX_POOL] = fl_cuda_max_pool,
    [FL_OP_MAX_POOL_GRAD] = fl_cuda_max_pool_grad,
    [FL_OP_APPLY_GRADIENT_DESCENT] = fl_cuda_apply_gradient_descent,
    [FL_OP_APPLY_MOMENTUM] = fl_cuda_apply_momentum,
    [FL_OP_APPLY_ADAM] = fl_cuda_apply_adam,
    [FL_OP_MULTI_APPLY_ADAM] = fl_cuda_multi_apply_adam,
    [FL_OP_FUSED_CONV2D] = fl_cuda_fused_conv2d,
    [FL_OP_FUSED_MATMUL] = fl_cuda_fused_matmul,
    [FL_OP_MAX_POOL_RELU_GRAD] = fl_cuda_max_pool_relu_grad,
};

static bool cuda_has_kernel(fl_op_kind op) { return op >= 0 && op < FL_OP_COUNT && launchers[op] != NULL; }

static int cuda_run(void *impl, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                    const fl_kernel_ctx *ctx)
{
    fl_cuda_device *d = impl;
    if (fl_cuda_check(cudaSetDevice(d->index), "cudaSetDevice") != 0)
        return -1;
    for (int i = 0; i < n->ninputs; i++)
        if (!in[i]->data && fl_tensor_bytes(in[i]) > 0) {
            fl_set_error_code(FL_RESOURCE_EXHAUSTED, "input %d has no buffer on /gpu:%d (out of GPU memory?)", i,
                              d->index);
            return -1;
        }
    if (n->has_output && !out->data && fl_tensor_bytes(out) > 0) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "no buffer for the output on /gpu:%d (out of GPU memory?)", d->index);
        return -1;
    }
    if (!cuda_has_kernel(n->op)) {
        fl_set_error_code(FL_UNIMPLEMENTED, "the CUDA backend has no kernel for %s", fl_op_def_of(n->op)->type);
        return -1;
    }
    if (d->tracing)
        return fl_cuda_traced_run(d, launchers[n->op], n, in, out, ctx);
    return fl_cuda_record(d, launchers[n->op], n, in, out, ctx);
}

/* The fault records ride at the end of the stream, so one synchronize
 * covers both the work and the check; only a step that ran a checking
 * kernel pays for the copy. An error from a kernel that failed (a bad
 * address) also surfaces here, since launches are asynchronous. */
static int cuda_wait(void *impl)
{
    fl_cuda_device *d = impl;
    if (fl_cuda_check(cudaSetDevice(d->index), "cudaSetDevice") != 0)
        return -1;
    int flushed = fl_cuda_flush(d); /* on failure the stream still finishes what was enqueued */
    int nslots = d->nfault_ops;
    d->nfault_ops = 0;
    cudaError_t copied = nslots ? cudaMemcpyAsync(d->fault_host, d->fault, nslots * sizeof *d->fault,
                                                  cudaMemcpyDeviceToHost, d->stream)
                                : cudaSuccess;
    cudaError_t synced = cudaStreamSynchronize(d->stream);
    fl_cuda_free_pending(d);
    if (flushed != 0)
        return -1;
    if (fl_cuda_check(synced, "running the enqueued work") != 0 ||
        fl_cuda_check(copied, "reading the fault records") != 0)
        return -1;
    return fl_cuda_fault_report(d, nslots);
}

const fl_backend fl_cuda_backend = {
    .name = "cuda",
    .device_count = cuda_device_count,
    .describe = cuda_describe,
    .open = cuda_open,
    .close = cuda_close,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .copy_in = cuda_copy_in,
    .copy_out = cuda_copy_out,
    .has_kernel = cuda_has_kernel,
    .run = cuda_run,
    .wait = cuda_wait,
    .why_unavailable = cuda_why_unavailable,
    .marks = {
        .mark = cuda_mark,
        .reached = cuda_reached,
        .copy_out_now = cuda_copy_out_now,
        .release_mark = cuda_release_mark,
    },
    .tracing = {
        .set_tracing = fl_cuda_set_tracing,
        .take_timings = fl_cuda_take_timings,
    },
    .device_copies = {.copy = cuda_copy_within, .copy_now = cuda_copy_within_now},
};
