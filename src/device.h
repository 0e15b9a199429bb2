/* device.h: the backend seam. One table of small functions per backend
 * (host, OpenCL, CUDA, remote): a required core and optional groups, each
 * group wrapped once with its fallback (device.c), and a registry that maps
 * device names to devices. The session talks to devices only through these. */
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

/* The optional groups. A backend fills a whole group or leaves it all NULL;
 * callers use the fl_device_* wrappers below, never the members.
 *
 * Marks, so that a value one device has finished can be copied
 * while that device goes on with the rest of its queue (all NULL: the
 * session waits for the whole device instead). mark() returns a handle on
 * everything enqueued so far, or NULL after fl_set_error.
 * reached(impl, mark, block) says whether the device is past the mark:
 * 1 yes, 0 not yet (only when block is false), -1 on error.
 * copy_out_now() is a blocking copy_out that does not queue behind work
 * enqueued after a reached mark; src must have been written before that
 * mark.
 * wait_any (may be NULL alone) is for a device whose marks are reached out
 * of order, by other tasks (a task's rendezvous: a Recv's value arrives when
 * its sender sends it): the executor, with nothing it can start, must not
 * block on one mark, as the value that would let it send what another task
 * needs to produce that mark may be the next to arrive. wait_any waits a
 * short while for any mark to be reached, then the executor looks again: 0,
 * or -1 after fl_set_error_code (a deadline passed, the step aborted). */
typedef struct {
    void *(*mark)(void *impl);
    int (*reached)(void *impl, void *mark, bool block);
    int (*copy_out_now)(void *impl, void *host_dst, const void *src, size_t bytes);
    void (*release_mark)(void *impl, void *mark);
    int (*wait_any)(void *impl);
} fl_backend_marks;

/* Timing by the device itself (all NULL: the session times run()
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

/* For a device whose variables live in another process (a ps task): the saver and the readiness check ask it by name instead of
 * copying the session's buffer, which only mirrors the last value read.
 * has_value: 1, 0, or -1 on error. write: gives the variable a value
 * whether or not it had one (a restore). Each waits for its answer. */
typedef struct {
    int (*has_value)(void *impl, const char *name);
    int (*read)(void *impl, const char *name, void *host_dst, size_t bytes);
    int (*write)(void *impl, const char *name, const fl_tensor *host_value);
} fl_backend_variables;

/* For a device that keeps some buffers in this process's memory (a remote
 * device's copy of a variable): address_of(impl, buffer) says where, so that
 * a copy between it and another device goes straight there instead of
 * through a host staging buffer; NULL for a buffer that is not there.
 * wrap (may be NULL) makes a buffer over host bytes themselves, which the
 * device's kernels then read where they lie (a PoCL CPU device: no copy);
 * NULL when it cannot. unwrap releases such a buffer, never the bytes. */
typedef struct {
    void *(*address_of)(void *impl, void *buffer);
    void *(*wrap)(void *impl, void *host, size_t bytes);
    void (*unwrap)(void *impl, void *buffer);
} fl_backend_host_memory;

/* Copies between two buffers of one device, for fetches and feeds that stay
 * on it (all NULL: such fetches and feeds are refused). copy is enqueued on
 * the device's queue, ordered with its ops; copy_now blocks until done and
 * does not queue behind work enqueued after a reached mark (src must have
 * been written before that mark), as copy_out_now. */
typedef struct {
    int (*copy)(void *impl, void *dst, const void *src, size_t bytes);
    int (*copy_now)(void *impl, void *dst, const void *src, size_t bytes);
} fl_backend_device_copies;

/* The core every backend fills, then the optional groups. */
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
    fl_backend_host_memory host_memory; /* optional */
    fl_backend_device_copies device_copies; /* optional */
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

/* The host device, always present. */
fl_device *fl_host_device(void);
/* "/gpu:N" of the active accelerator backend, or NULL (fl_last_error says
 * which devices exist). */
fl_device *fl_accelerator(int index);
int fl_accelerator_count(void);
/* Lists the devices that exist, as "/cpu:0, /gpu:0" into buf. */
const char *fl_device_list(char *buf, size_t len);
void *fl_device_alloc(fl_device *d, size_t bytes);

/* ---- device.c: the optional groups, each with its fallback ---- */
/* A mark behind everything enqueued on d so far: 0 with *mark set, or 0
 * with *mark NULL on a device without marks (wait for all of it instead);
 * -1 on error. */
int fl_device_mark(fl_device *d, void **mark);
/* Whether d is past mark: 1, 0 (not yet; only when !block), -1 on error. A
 * NULL mark stands for the whole queue: blocking waits for d to be idle. */
int fl_device_reached(fl_device *d, void *mark, bool block);
void fl_device_release_mark(fl_device *d, void *mark); /* NULL: nothing */
/* Whether d's marks are reached out of order (wait on any, not on one),
 * and that wait: 0, or -1 with the error set. */
bool fl_device_waits_on_any(const fl_device *d);
int fl_device_wait_any(fl_device *d);
/* A blocking copy out of a value finished before a reached mark, not queued
 * behind later work where the device can (else copy_out, then wait). */
int fl_device_copy_out_now(fl_device *d, void *host_dst, const void *src, size_t bytes);
/* Device timing: 0 when d now times (or stops timing) its ops, -1 when it
 * cannot (the session times run() on the host instead). */
int fl_device_set_tracing(fl_device *d, bool on);
/* Up to max timings, in run order; 0 on a device that does not time. */
int fl_device_take_timings(fl_device *d, fl_op_timing *out, int max);
/* A variable by name, for the saver and the readiness check. Where d keeps
 * its variables in this process, the session's own buffer holds the value
 * and its own record says whether there is one (here). */
int fl_device_variable_has_value(fl_device *d, const char *name, bool here);
int fl_device_read_variable(fl_device *d, const char *name, void *host_dst, const void *buffer, size_t bytes);
int fl_device_write_variable(fl_device *d, const char *name, void *buffer, const fl_tensor *value);
/* Where buffer lies in this process's memory (a host device's: the buffer
 * itself), or NULL when it lies in the device's own memory. */
void *fl_device_host_memory(const fl_device *d, const void *buffer);
/* A buffer of d over bytes in host memory, which d's kernels read in place;
 * NULL (no error set) where d cannot. Released by fl_device_unwrap. */
void *fl_device_wrap_host_memory(fl_device *d, void *host, size_t bytes);
void fl_device_unwrap(fl_device *d, void *buffer);
/* A copy between two of d's buffers: enqueued, or (now) finished on return.
 * -1 (FL_UNIMPLEMENTED) on a device that cannot copy within itself. */
int fl_device_copy_within(fl_device *d, void *dst, const void *src, size_t bytes, bool now);
/* Whether d can: else values cannot stay on it (a remote task's device). */
bool fl_device_can_copy_within(const fl_device *d);
/* ---- device_buffer.c: the device a name such as "/gpu:0" stands for, in
 * this process; NULL with fl_last_error naming the devices there are ---- */
fl_device *fl_device_named(const char *name);

#endif
