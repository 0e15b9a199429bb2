/* device.h: the backend seam. One table of small functions per backend
 * (host, OpenCL, CUDA) and a registry that maps device names to devices.
 * The session talks to devices only through this table. */
#ifndef FLOWLAB_DEVICE_H
#define FLOWLAB_DEVICE_H

#include "runtime.h"

typedef struct fl_device fl_device;

/* What every kernel gets besides its node, inputs and output. */
typedef struct {
    uint64_t seed; /* the session's seed, mixed into random ops' own seeds */
} fl_kernel_ctx;

/* When one op really ran on a device, for the session's timeline. Times are
 * host CLOCK_MONOTONIC microseconds, fl_now_us()'s clock. */
typedef struct {
    int node; /* node id */
    double start_us, end_us;
} fl_op_timing;

/* Optional marks, so that a value one device has finished can be copied
 * while that device goes on with the rest of its queue (all NULL: the
 * session waits for the whole device instead). mark() returns a handle on
 * everything enqueued so far, or NULL after fl_set_error.
 * reached(impl, mark, block) says whether the device is past the mark:
 * 1 yes, 0 not yet (only when block is false), -1 on error.
 * copy_out_now() is a blocking copy_out that does not queue behind work
 * enqueued after a reached mark; src must have been written before that
 * mark. */
typedef struct {
    void *(*mark)(void *impl);
    int (*reached)(void *impl, void *mark, bool block);
    int (*copy_out_now)(void *impl, void *host_dst, const void *src, size_t bytes);
    void (*release_mark)(void *impl, void *mark);
} fl_backend_marks;

/* Optional timing by the device itself (all NULL: the session times run()
 * on the host, which for an asynchronous device is only the enqueue).
 * set_tracing(impl, true) makes the device time each op it runs from now
 * on; 0 when it can, -1 when it cannot. set_tracing(impl, false) stops and
 * drops what was not taken. take_timings moves up to max timings, in run
 * order, into out and returns how many (it waits for those ops to finish);
 * -1 on error. */
typedef struct {
    int (*set_tracing)(void *impl, bool on);
    int (*take_timings)(void *impl, fl_op_timing *out, int max);
} fl_backend_tracing;

/* The core every backend fills, then the optional groups. */
/* Optional, for a device whose variables live in another process (a ps
 * task): the saver and the readiness check ask it by name instead of
 * copying the session's buffer, which only mirrors the last value read.
 * has_value: 1, 0, or -1 on error. write: gives the variable a value
 * whether or not it had one (a restore). Each waits for its answer. */
typedef struct {
    int (*has_value)(void *impl, const char *name);
    int (*read)(void *impl, const char *name, void *host_dst, size_t bytes);
    int (*write)(void *impl, const char *name, const fl_tensor *host_value);
} fl_backend_variables;

typedef struct fl_backend {
    const char *name; /* "host", "opencl", "cuda" */
    int (*device_count)(void);
    int (*describe)(int index, fl_device_info *info);
    void *(*open)(int index); /* the backend's own state for one device */
    void (*close)(void *impl);
    void *(*alloc)(void *impl, size_t bytes);
    void (*release)(void *impl, void *buffer);
    /* Copies are enqueued on the device's queue; host memory must stay valid
     * until the next wait. */
    int (*copy_in)(void *impl, void *dst, const void *host_src, size_t bytes);
    int (*copy_out)(void *impl, void *host_dst, const void *src, size_t bytes);
    /* Optional: where a buffer kept in this process's memory lies (a remote
     * device's copy of a variable), so that a copy between it and another
     * device goes straight there instead of through a host staging buffer. */
    void *(*host_memory)(void *impl, void *buffer);
    bool (*has_kernel)(fl_op_kind op);
    /* Enqueues the node's kernel; in and out hold this backend's buffers. */
    int (*run)(void *impl, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
               const fl_kernel_ctx *ctx);
    int (*wait)(void *impl); /* until everything enqueued has finished */
    /* Why device_count() is 0, with a hint: "no OpenCL platform found; ..." */
    const char *(*why_unavailable)(void);
    fl_backend_marks marks;     /* optional */
    fl_backend_tracing tracing; /* optional */
    fl_backend_variables variables; /* optional */
} fl_backend;

struct fl_device {
    const fl_backend *backend;
    void *impl;
    int index;           /* within its backend */
    char name[32];       /* "/cpu:0", "/gpu:1" */
    bool is_host;
    uint64_t allocations; /* buffers allocated so far: a warm step adds none */
};

extern const fl_backend fl_host_backend;
extern const fl_backend fl_opencl_backend; /* cl/backend_opencl.c, when the build has OpenCL */
extern const fl_backend fl_cuda_backend;   /* cuda/backend_cuda.c, inside the CUDA module only */

/* The backend behind /gpu:N, or NULL when there are no accelerators. */
const fl_backend *fl_active_backend(void);
/* The host device, always present. */
fl_device *fl_host_device(void);
/* "/gpu:N" of the active accelerator backend, or NULL (fl_last_error says
 * which devices exist). */
fl_device *fl_accelerator(int index);
int fl_accelerator_count(void);
/* Lists the devices that exist, as "/cpu:0, /gpu:0" into buf. */
const char *fl_device_list(char *buf, size_t len);
void *fl_device_alloc(fl_device *d, size_t bytes);

#endif
