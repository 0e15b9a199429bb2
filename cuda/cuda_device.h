/* cuda_device.h: what the C files of the CUDA backend share.
 * One fl_cuda_device per opened /gpu:N: its stream (everything for the device
 * is enqueued there, in order), the cuBLAS and cuDNN handles bound to that
 * stream, the memory pool, and the fault record that kernels write into. */
#ifndef FLOWLAB_CUDA_DEVICE_H
#define FLOWLAB_CUDA_DEVICE_H

#include <pthread.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "device.h"
#include "kernels.h"

/* One buffer the pool owns: handed out, or free for the next request of
 * the same size class. */
typedef struct {
    void *ptr;
    size_t bytes; /* the size class, not what was asked for */
    bool in_use;
} fl_cuda_block;

typedef struct {
    fl_cuda_block *blocks;
    int count, capacity;
    uint64_t mallocs; /* cudaMalloc calls so far: a warm step makes none */
} fl_cuda_pool;

/* Pool blocks taken by a stream capture on `thread`: its graph's kernels
 * use them on every replay, so they stay out of the pool (cuda_pool.c). */
typedef struct {
    bool active;
    pthread_t thread;
    void **owned;
    int nowned, capacity;
} fl_cuda_capture;

/* One traced op: events recorded before and after its launches (cuda_trace.c). */
typedef struct {
    int node;
    cudaEvent_t before, after;
    cudaGraphExec_t exec; /* the op as a graph of its own; NULL if launched directly */
} fl_cuda_op_events;

typedef struct fl_cuda_recorder fl_cuda_recorder; /* cuda_graph.c */

typedef struct {
    int index;
    cudaStream_t stream;
    cudaStream_t copy_stream; /* copy_out_now's: values `stream` has finished */
    cublasHandle_t cublas;
    cudnnHandle_t cudnn;
    pthread_mutex_t lock; /* guards pool and pending: two sessions may share a GPU */
    fl_cuda_pool pool;
    /* One fault record per checking op enqueued since the last wait(), so
     * the error names the op: device memory, zero while all is well, and
     * pinned host memory that wait() copies the used records into. */
    fl_cuda_fault *fault;
    fl_cuda_fault *fault_host;
    char fault_ops[FL_CUDA_FAULT_SLOTS][64];
    int nfault_ops;
    void **pending;            /* host buffers being copied in, freed at wait() */
    int npending, pending_capacity;
    fl_cuda_capture capture;
    fl_cuda_recorder *recorder; /* run()'s launches until the next flush */
    void *cublas_workspace;     /* cuBLAS's own, so a capture never allocates */
    bool tracing;
    fl_cuda_op_events *op_events;
    int nop_events, op_events_capacity;
    /* cuDNN's descriptors and algorithm per convolution and pooling shape,
     * made on a shape's first call (conv_plans.c's list of fl_conv_plan). */
    void *conv_plans;
    /* FLOWLAB_DETERMINISTIC=1 at open: only cuDNN algorithms that give the
     * same bits every run (TensorFlow's TF_CUDNN_DETERMINISTIC). */
    bool deterministic;
    /* TF32 tensor cores for convolutions and matrix products: on where the
     * GPU has them (compute capability 8.0 on), as in TensorFlow and
     * PyTorch, unless FLOWLAB_ALLOW_TF32=0 (read at open). */
    bool allow_tf32;
} fl_cuda_device;

/* conv_plans.c: whether FLOWLAB_DETERMINISTIC asks for reproducible runs
 * (set, and neither "0" nor "false"), read by open; and the device's plans
 * destroyed, at close. */
bool fl_cuda_deterministic_requested(void);
void fl_cuda_conv_plans_free(fl_cuda_device *d);
/* conv_plans.c: the TF32 policy for a GPU of this compute capability major. */
bool fl_cuda_tf32_allowed(int major);

/* cuda_fault.c: the fault record for node n's kernel (ops past the last slot
 * share it; the error then names the last of them), and, once wait() has
 * copied the first nslots records to fault_host, 0 or -1 naming the first
 * op that found bad input. */
fl_cuda_fault *fl_cuda_fault_slot(fl_cuda_device *d, const fl_node *n);
int fl_cuda_fault_report(fl_cuda_device *d, int nslots);

/* cuda_call.c: 0, or -1 after fl_set_error("<what>: <the library's words>"). */
int fl_cuda_check(cudaError_t e, const char *what);
int fl_cublas_check(cublasStatus_t s, const char *what);
int fl_cudnn_check(cudnnStatus_t s, const char *what);
int fl_cuda_launched(cudaError_t e); /* a kernel launch's result */

/* cuda_pool.c: device memory by size class; cudaMalloc only on a miss. Buffers
 * go back to the pool at once: the stream runs in order, so the next user
 * of a buffer cannot start before the last one has finished with it. */
void *fl_cuda_pool_get(fl_cuda_device *d, size_t bytes);
void fl_cuda_pool_put(fl_cuda_device *d, void *ptr);
/* cudaFree of every block, or of the free ones only (to retry a failed cudaMalloc). */
void fl_cuda_pool_trim(fl_cuda_device *d, bool everything);
/* Keeps a host buffer alive until the next wait(), which frees it with
 * fl_cuda_free_pending once the stream has finished. */
void fl_cuda_free_after_wait(fl_cuda_device *d, void *host_buffer);
void fl_cuda_free_pending(fl_cuda_device *d);
/* A stream capture on this thread starts: the blocks it takes from now on
 * are its own until end_capture hands them over (count in *n; the caller
 * frees the array and gives each block back with fl_cuda_pool_put_owned
 * when its graph goes). */
void fl_cuda_pool_begin_capture(fl_cuda_device *d);
void **fl_cuda_pool_end_capture(fl_cuda_device *d, int *n);
void fl_cuda_pool_put_owned(fl_cuda_device *d, void **owned, int n);

/* cuda_trace.c: per-op device timing (the fl_backend_tracing group). */
int fl_cuda_set_tracing(void *impl, bool on);
int fl_cuda_take_timings(void *impl, fl_op_timing *out, int max);
void fl_cuda_trace_free(fl_cuda_device *d);

#endif
