/* opencl_device.h: one opened OpenCL device and the helpers every launcher
 * uses: its context, in-order queue, built program and kernels, buffer pool,
 * scratch memory and the fault record kernels write on bad input.
 * Tensors' data on this backend are cl_mem handles cast to void *. */
#ifndef FLOWLAB_OPENCL_DEVICE_H
#define FLOWLAB_OPENCL_DEVICE_H

#include <pthread.h>
#include <CL/cl.h>

#include "device.h"
#include "gemm.h"
#include "opencl_pool.h"

/* Every kernel of the program joined from the cl/ kernel files; names in opencl_call.c. */
typedef enum {
    K_BINARY_INT, K_NEG_FLOAT, K_NEG_INT, K_ACCUMULATE_FLOAT, K_ACCUMULATE_INT,
    K_DIV_GRAD_B,
    K_ACTIVATION, K_ACTIVATION_GRAD, K_SOFTMAX, K_SOFTMAX_GRAD, K_SPARSE_XENT,
    K_SPARSE_XENT_GRAD,
    K_REDUCE_ROWS, K_REDUCE_COLS, K_REDUCE_GRAD_ROWS, K_REDUCE_GRAD_COLS, K_REDUCE_FLOAT,
    K_REDUCE_INT, K_REDUCE_GRAD,
    K_COPY_WINDOW, K_CAST_TO_INT, K_CAST_TO_FLOAT, K_ARGMAX_FLOAT, K_ARGMAX_INT, K_EQUAL_FLOAT,
    K_EQUAL_INT,
    K_IM2COL, K_COL2IM, K_MAX_POOL, K_MAX_POOL_GRAD,
    K_CONV_PACK_FILTER, K_CONV_GEMM, K_CONV_FILTER_GRAD, K_CONV_SUM_SPLITS,
    K_CONV_BACKPROP_INPUT_NARROW, K_CONV_FORWARD_NARROW,
    K_WINOGRAD_FILTER, K_WINOGRAD_CONV, K_WINOGRAD_FILTER_GRAD, K_WINOGRAD_FILTER_GRAD_OUTPUT,
    K_BINARY_FLOAT_CHUNKS, K_RELU_CHUNKS, K_RELU_GRAD_CHUNKS, K_BIAS_RELU_CHUNKS,
    K_APPLY_GRADIENT_DESCENT, K_APPLY_MOMENTUM, K_APPLY_ADAM,
    K_FUSED_APPLY_GRADIENT_DESCENT, K_FUSED_APPLY_MOMENTUM, K_FUSED_APPLY_ADAM,
    FL_CL_KERNEL_COUNT
} fl_cl_kernel_id;

/* What a kernel records in the fault buffer (common.cl's enum). */
enum { FL_CL_FAULT_NONE, FL_CL_FAULT_LABEL, FL_CL_FAULT_INT_DIVIDE };

#define FL_CL_FAULT_SLOTS 32

/* One op run while tracing: markers enqueued just before and just after its
 * commands. On an in-order queue the first completes when the op can start
 * and the second starts when the op is done, so their profiling times say
 * when the op really ran, not when the host enqueued it. */
typedef struct {
    int node;
    cl_event before, after;
} fl_cl_op_marks;

typedef struct {
    cl_context context;
    cl_device_id id;
    cl_command_queue queue; /* in order, with profiling: each command sees the ones before it */
    cl_command_queue copy_queue; /* copy_out_now's: values finished on `queue` (backend_opencl.c) */
    cl_program program;     /* the cl/ kernel files joined, all but matmul.cl */
    cl_program gemm_program; /* cl/matmul.cl, for cl/gemm.c */
    fl_cl_gemm *gemm;
    cl_kernel kernels[FL_CL_KERNEL_COUNT];
    fl_cl_pool pool;
    cl_mem scratch; /* a packed filter, partial sums, im2col's matrix: grows, then is reused */
    size_t scratch_bytes;
    cl_mem zeros;   /* read where a convolution's window hangs over the edge */
    size_t zeros_bytes;
    cl_mem fault;   /* int[4]: code, op slot, two numbers (common.cl) */
    /* Ops enqueued since the last wait that may record a fault, by slot. */
    struct {
        char op[FL_DEVICE_LEN * 2]; /* the node name */
        int classes;                /* for a label check */
    } fault_ops[FL_CL_FAULT_SLOTS];
    int nfault_ops;
    size_t group; /* work-group size of our launches */
    int chunk;    /* elements per work-item of the *_chunks kernels: many on a CPU, 8 on a GPU */
    int conv_width; /* cl/conv_gemm.cl's float vector width as built: 8 or 16 */
    /* Tracing (fl_cl_device_set_tracing): each op's markers until taken, and
     * one moment seen on both clocks to turn profiling times into host ones. */
    bool tracing;
    fl_cl_op_marks *marks;
    int nmarks, marks_cap;
    bool synced;             /* since tracing was last turned on or off */
    cl_ulong sync_device_ns; /* a marker's end on the profiling clock ... */
    double sync_host_us;     /* ... and on fl_now_us()'s clock */
    pthread_mutex_t lock; /* kernel arguments are per kernel object: one caller at a time */
} fl_cl_device;

/* Opens device id: NULL after fl_set_error (a build failure also prints the
 * build log). Closing waits for everything enqueued. */
fl_cl_device *fl_cl_device_open(cl_device_id id);
void fl_cl_device_close(fl_cl_device *d);
/* clFinish, then reports the first fault any kernel recorded since the
 * last wait, naming the op ("label 12 in row 3 is outside [0, 10)"). */
int fl_cl_device_wait(fl_cl_device *d);
/* Tracing, for the backend's set_tracing and take_timings (device.h).
 * Turning it off drops untaken marks. Taking first maps the profiling clock
 * onto the host's (once per traced run), then waits for the ops it takes.
 * The caller holds d->lock for fl_cl_mark and fl_cl_keep_timing. */
int fl_cl_device_set_tracing(fl_cl_device *d, bool on);
int fl_cl_device_take_timings(fl_cl_device *d, fl_op_timing *out, int max);
/* Enqueues a marker after everything enqueued so far; its event into *event. */
int fl_cl_mark(fl_cl_device *d, cl_event *event);
/* Marks the end of node's commands and keeps both marks (owns before from now). */
int fl_cl_keep_timing(fl_cl_device *d, int node, cl_event before);
/* A scratch buffer of at least bytes, valid until the next call. */
cl_mem fl_cl_scratch(fl_cl_device *d, size_t bytes);
/* A buffer of at least bytes that are all zero; kernels only read it. */
cl_mem fl_cl_zeros(fl_cl_device *d, size_t bytes);

/* ---- calling a kernel: set arguments in order, then run ---- */
typedef struct {
    fl_cl_device *d;
    fl_cl_kernel_id kernel;
    cl_uint next;  /* the next argument's index */
    cl_int error;  /* the first failure, CL_SUCCESS while all is well */
} fl_cl_call;

/* The kernel's function name in the cl/ kernel files ("im2col"). */
const char *fl_cl_kernel_name(fl_cl_kernel_id k);
fl_cl_call fl_cl_begin(fl_cl_device *d, fl_cl_kernel_id kernel);
void fl_cl_mem(fl_cl_call *c, const void *buffer); /* a tensor's data */
void fl_cl_int(fl_cl_call *c, int value);
void fl_cl_float(fl_cl_call *c, float value);
void fl_cl_value(fl_cl_call *c, size_t size, const void *value); /* a struct, an int4 */
/* The fault buffer and the slot that names op n (and its number of classes) in a fault report. */
void fl_cl_fault(fl_cl_call *c, const fl_node *n, int classes);
/* Enqueues count work-items (rounded up to whole work-groups: kernels
 * check their bounds); count 0 enqueues nothing. */
int fl_cl_run(fl_cl_call *c, size_t count);
int fl_cl_run_2d(fl_cl_call *c, size_t width, size_t height);
/* For the *_chunks kernels: enough work-items of d->chunk elements each to
 * cover count (whose last argument must be d->chunk). */
int fl_cl_run_chunks(fl_cl_call *c, size_t count);

/* Records "what failed: CL_OUT_OF_RESOURCES (-5)" with fl_set_error; returns -1. */
int fl_cl_fail(const char *what, cl_int err);
const char *fl_cl_error_name(cl_int err);
/* The element count of t, or -1 after fl_set_error when kernels' int
 * indices cannot reach it. */
int fl_cl_count(const fl_tensor *t);
static inline cl_mem fl_cl_buffer(const fl_tensor *t) { return (cl_mem)t->data; }

#endif
