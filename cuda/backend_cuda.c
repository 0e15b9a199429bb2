/* backend_cuda.c: NVIDIA GPUs as flowlab's "/gpu:N", through the CUDA runtime.
 * The fl_backend table: finding devices, opening one (a stream, cuBLAS and
 * cuDNN handles), memory from the pool, copies, and wait(). Each op's work
 * is in ops.c, ops_array.c and conv.c; the kernels are in the .cu files.
 * Nothing here waits except wait(): run() and the copies only enqueue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_device.h"

/* ---- errors ---- */

int fl_cuda_check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fl_set_error("%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return -1;
}

int fl_cublas_check(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    fl_set_error("%s: %s", what, cublasGetStatusString(s));
    return -1;
}

int fl_cudnn_check(cudnnStatus_t s, const char *what)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return 0;
    fl_set_error("%s: %s", what, cudnnGetErrorString(s));
    return -1;
}

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
    if (d->stream)
        cudaStreamSynchronize(d->stream);
    fl_cuda_pool_trim(d, true);
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
    for (int i = 0; i < d->npending; i++)
        free(d->pending[i]);
    free(d->pending);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* cuBLAS keeps full float32 (no TF32 tensor cores: the default math mode),
 * so results match the host's to float rounding. */
static int open_libraries(fl_cuda_device *d)
{
    if (fl_cublas_check(cublasCreate(&d->cublas), "cublasCreate") != 0 ||
        fl_cublas_check(cublasSetStream(d->cublas, d->stream), "cublasSetStream") != 0 ||
        fl_cublas_check(cublasSetMathMode(d->cublas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode") != 0)
        return -1;
    if (fl_cudnn_check(cudnnCreate(&d->cudnn), "cudnnCreate") != 0 ||
        fl_cudnn_check(cudnnSetStream(d->cudnn, d->stream), "cudnnSetStream") != 0)
        return -1;
    return 0;
}

static int open_device(fl_cuda_device *d)
{
    if (fl_cuda_check(cudaSetDevice(d->index), "cudaSetDevice") != 0 ||
        fl_cuda_check(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking),
                      "cudaStreamCreate") != 0 ||
        fl_cuda_check(cudaStreamCreateWithFlags(&d->copy_stream, cudaStreamNonBlocking),
                      "cudaStreamCreate(copies)") != 0)
        return -1;
    if (fl_cuda_check(cudaMalloc((void **)&d->fault, sizeof *d->fault), "cudaMalloc") != 0 ||
        fl_cuda_check(cudaMallocHost((void **)&d->fault_host, sizeof *d->fault_host),
                      "cudaMallocHost") != 0 ||
        fl_cuda_check(cudaMemsetAsync(d->fault, 0, sizeof *d->fault, d->stream), "cudaMemset") != 0)
        return -1;
    return open_libraries(d);
}

static void *cuda_open(int index)
{
    fl_cuda_device *d = fl_xcalloc(1, sizeof *d);
    d->index = index;
    pthread_mutex_init(&d->lock, NULL);
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

static void cuda_release(void *impl, void *buffer) { fl_cuda_pool_put(impl, buffer); }

static int copy(fl_cuda_device *d, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    if (bytes == 0)
        return 0;
    cudaSetDevice(d->index);
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

/* On the device's second stream: the first may still be busy with later ops. */
static int cuda_copy_out_now(void *impl, void *host_dst, const void *src, size_t bytes)
{
    fl_cuda_device *d = impl;
    if (bytes == 0)
        return 0;
    cudaSetDevice(d->index);
    if (fl_cuda_check(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, d->copy_stream),
                      "cudaMemcpyAsync") != 0)
        return -1;
    return fl_cuda_check(cudaStreamSynchronize(d->copy_stream), "cudaStreamSynchronize");
}

static void cuda_release_mark(void *impl, void *mark)
{
    (void)impl;
    cudaEventDestroy(mark);
}

void fl_cuda_free_after_wait(fl_cuda_device *d, void *host_buffer)
{
    pthread_mutex_lock(&d->lock);
    if (d->npending == d->pending_capacity) {
        d->pending_capacity = d->pending_capacity ? d->pending_capacity * 2 : 8;
        d->pending = fl_xrealloc(d->pending, (size_t)d->pending_capacity * sizeof *d->pending);
    }
    d->pending[d->npending++] = host_buffer;
    pthread_mutex_unlock(&d->lock);
}

/* ---- running and waiting ---- */

static int cuda_run(void *impl, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                    const fl_kernel_ctx *ctx)
{
    fl_cuda_device *d = impl;
    if (fl_cuda_check(cudaSetDevice(d->index), "cudaSetDevice") != 0)
        return -1;
    for (int i = 0; i < n->ninputs; i++)
        if (!in[i]->data && fl_tensor_bytes(in[i]) > 0) {
            fl_set_error("input %d has no buffer on /gpu:%d (out of GPU memory?)", i, d->index);
            return -1;
        }
    if (n->has_output && !out->data && fl_tensor_bytes(out) > 0) {
        fl_set_error("no buffer for the output on /gpu:%d (out of GPU memory?)", d->index);
        return -1;
    }
    return fl_cuda_run_op(d, n, in, out, ctx);
}

/* The fault a kernel recorded, as the host kernel would have said it. */
static int report_fault(fl_cuda_device *d, const fl_cuda_fault *f)
{
    if (f->code == FL_CUDA_FAULT_LABEL)
        fl_set_error("label %d in row %lld is outside [0, %d)", f->label, f->index, f->classes);
    else
        fl_set_error("integer division by zero at element %lld", f->index);
    /* Clear it, so that the next run starts clean. */
    cudaMemsetAsync(d->fault, 0, sizeof *d->fault, d->stream);
    cudaStreamSynchronize(d->stream);
    return -1;
}

static void free_pending(fl_cuda_device *d)
{
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < d->npending; i++)
        free(d->pending[i]);
    d->npending = 0;
    pthread_mutex_unlock(&d->lock);
}

/* The fault record rides at the end of the stream, so one synchronize
 * covers both the work and the check. An error from a kernel that failed
 * (a bad address) also surfaces here, since launches are asynchronous. */
static int cuda_wait(void *impl)
{
    fl_cuda_device *d = impl;
    if (fl_cuda_check(cudaSetDevice(d->index), "cudaSetDevice") != 0)
        return -1;
    cudaError_t copied = cudaMemcpyAsync(d->fault_host, d->fault, sizeof *d->fault,
                                         cudaMemcpyDeviceToHost, d->stream);
    cudaError_t synced = cudaStreamSynchronize(d->stream);
    free_pending(d);
    if (fl_cuda_check(synced, "running the enqueued work") != 0 ||
        fl_cuda_check(copied, "reading the fault record") != 0)
        return -1;
    if (d->fault_host->code != FL_CUDA_FAULT_NONE)
        return report_fault(d, d->fault_host);
    return 0;
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
    .has_kernel = fl_cuda_has_kernel,
    .run = cuda_run,
    .wait = cuda_wait,
    .why_unavailable = cuda_why_unavailable,
    .marks = {
        .mark = cuda_mark,
        .reached = cuda_reached,
        .copy_out_now = cuda_copy_out_now,
        .release_mark = cuda_release_mark,
    },
    /* No tracing yet: the session times the enqueue on the host. */
};
