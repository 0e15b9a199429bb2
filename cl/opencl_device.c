/* opencl_device.c: opening one OpenCL device: its own context and in-order
 * queue, the kernels built once (through the binary cache), the GEMM of
 * cl/gemm.c, a buffer pool, and the fault buffer kernels report bad input
 * in. The host learns of a fault when it next waits for the device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_device.h"
#include "opencl_program.h"
#include "opencl_sources.h"

/* The embedded file called name, or NULL. */
static const fl_cl_source *source_named(const char *name)
{
    for (int i = 0; i < fl_cl_source_count; i++)
        if (strcmp(fl_cl_sources[i].name, name) == 0)
            return &fl_cl_sources[i];
    return NULL;
}

/* The files the kernels' program starts with: scalar_rules.h (src/: the
 * element-wise rules, shared with the host and CUDA; the GEMM's program
 * starts with it too) and common.cl. */
static bool is_prelude(const char *name)
{
    return strcmp(name, "scalar_rules.h") == 0 || strcmp(name, "common.cl") == 0;
}

/* The rules and common.cl first, since the others use them; then every
 * other file but the GEMM's, which cl/gemm.c wants as a program of its own. */
static char *joined_sources(void)
{
    size_t total = 1;
    for (int i = 0; i < fl_cl_source_count; i++)
        total += fl_cl_sources[i].length + 1;
    char *text = fl_xmalloc(total);
    const fl_cl_source *rules = source_named("scalar_rules.h"), *common = source_named("common.cl");
    strcpy(text, rules ? rules->text : "");
    strcat(text, "\n");
    strcat(text, common ? common->text : "");
    for (int i = 0; i < fl_cl_source_count; i++) {
        const char *name = fl_cl_sources[i].name;
        if (is_prelude(name) || strcmp(name, "matmul.cl") == 0)
            continue;
        strcat(text, "\n");
        strcat(text, fl_cl_sources[i].text);
    }
    return text;
}

/* The GEMM's program: the rules, then matmul.cl. */
static char *gemm_source(const fl_cl_source *matmul)
{
    const fl_cl_source *rules = source_named("scalar_rules.h");
    size_t rules_length = rules ? rules->length : 0;
    char *text = fl_xmalloc(rules_length + 1 + matmul->length + 1);
    strcpy(text, rules ? rules->text : "");
    strcat(text, "\n");
    strcat(text, matmul->text);
    return text;
}

static int create_queue(fl_cl_device *d)
{
    cl_int err;
    d->context = clCreateContext(NULL, 1, &d->id, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return fl_cl_fail("clCreateContext", err);
    /* Profiling costs a few timestamps per command; its events are asked for
     * only while tracing, so untraced runs create none. */
    d->queue = clCreateCommandQueue(d->context, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS)
        return fl_cl_fail("clCreateCommandQueue", err);
    /* A second queue for copies out of values the first has finished, so
     * they do not wait behind the kernels enqueued after them. */
    d->copy_queue = clCreateCommandQueue(d->context, d->id, 0, &err);
    if (err != CL_SUCCESS)
        return fl_cl_fail("clCreateCommandQueue(copies)", err);
    int zeros[4] = {0};
    d->fault = clCreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros,
                              zeros, &err);
    if (err != CL_SUCCESS)
        return fl_cl_fail("clCreateBuffer(fault)", err);
    size_t max_group = 1;
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_group, &max_group, NULL);
    d->group = max_group < 64 ? max_group : 64;
    /* A CPU runs a work-item as a plain loop: give each one thousands of
     * elements. A GPU wants many work-items reading neighbouring vectors. */
    cl_device_type type = 0;
    clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    d->chunk = type & CL_DEVICE_TYPE_CPU ? 4096 : 8;
    fl_cl_pool_init(&d->pool, d->context);
    /* A value a CPU device finished is then read by host ops where it lies
     * (session_copies.c); FLOWLAB_OPENCL_HOST_MEMORY=0 keeps the copies, to compare. */
    const char *host_memory = getenv("FLOWLAB_OPENCL_HOST_MEMORY");
    if (!host_memory || strcmp(host_memory, "0") != 0)
        fl_cl_pool_on_host_memory(&d->pool, d->id, d->queue);
    return 0;
}

/* The float vector width cl/conv_gemm.cl is built for (its CONV_WIDTH; see
 * there): 16 where the device prefers vectors of 16 floats (AVX-512 under
 * PoCL), else 8. FLOWLAB_CONV_WIDTH=8 or 16 overrides it, to compare. */
static int conv_vector_width(cl_device_id id)
{
    const char *forced = getenv("FLOWLAB_CONV_WIDTH");
    if (forced && (strcmp(forced, "8") == 0 || strcmp(forced, "16") == 0))
        return atoi(forced);
    cl_uint width = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof width, &width, NULL) != CL_SUCCESS)
        return 8;
    return width >= 16 ? 16 : 8;
}

static int build_kernels(fl_cl_device *d)
{
    char *source = joined_sources(), options[32];
    d->conv_width = conv_vector_width(d->id); /* the convolutions' tiles fit the device */
    snprintf(options, sizeof options, "-DCONV_WIDTH=%d", d->conv_width);
    d->program = fl_cl_program_build(d->context, d->id, "kernels", source, options);
    free(source);
    if (!d->program)
        return -1;
    for (int k = 0; k < FL_CL_KERNEL_COUNT; k++) {
        cl_int err;
        d->kernels[k] = clCreateKernel(d->program, fl_cl_kernel_name(k), &err);
        if (err != CL_SUCCESS) {
            fl_set_error_code(FL_INTERNAL, "clCreateKernel(%s): %s", fl_cl_kernel_name(k), fl_cl_error_name(err));
            return -1;
        }
    }
    return 0;
}

static int build_gemm(fl_cl_device *d)
{
    const fl_cl_source *matmul = source_named("matmul.cl");
    if (!matmul) {
        fl_set_error_code(FL_INTERNAL, "cl/matmul.cl was not embedded into this flowlab");
        return -1;
    }
    char options[64]; /* the GEMM's tile width, from the device's SIMD width */
    fl_cl_gemm_build_options(d->id, options, sizeof options);
    char *source = gemm_source(matmul);
    d->gemm_program = fl_cl_program_build(d->context, d->id, "gemm", source, options);
    free(source);
    if (!d->gemm_program)
        return -1;
    d->gemm = fl_cl_gemm_new(d->context, d->id, d->gemm_program);
    if (!d->gemm) {
        fl_set_error_code(FL_INTERNAL, "fl_cl_gemm_new: %s", fl_cl_gemm_error(NULL));
        return -1;
    }
    return 0;
}

fl_cl_device *fl_cl_device_open(cl_device_id id)
{
    fl_cl_device *d = fl_xcalloc(1, sizeof *d);
    d->id = id;
    pthread_mutex_init(&d->lock, NULL);
    if (create_queue(d) != 0 || build_kernels(d) != 0 || build_gemm(d) != 0) {
        fl_cl_device_close(d);
        return NULL;
    }
    return d;
}

void fl_cl_device_close(fl_cl_device *d)
{
    if (!d)
        return;
    if (d->queue)
        clFinish(d->queue);
    fl_cl_device_set_tracing(d, false);
    free(d->marks);
    fl_cl_gemm_free(d->gemm);
    for (int k = 0; k < FL_CL_KERNEL_COUNT; k++)
        if (d->kernels[k])
            clReleaseKernel(d->kernels[k]);
    if (d->program)
        clReleaseProgram(d->program);
    if (d->gemm_program)
        clReleaseProgram(d->gemm_program);
    fl_cl_pool_drain(&d->pool);
    if (d->scratch)
        clReleaseMemObject(d->scratch);
    if (d->fault)
        clReleaseMemObject(d->fault);
    if (d->zeros)
        clReleaseMemObject(d->zeros);
    if (d->queue)
        clReleaseCommandQueue(d->queue);
    if (d->copy_queue)
        clReleaseCommandQueue(d->copy_queue);
    if (d->context)
        clReleaseContext(d->context);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

cl_mem fl_cl_scratch(fl_cl_device *d, size_t bytes)
{
    if (d->scratch && d->scratch_bytes >= bytes)
        return d->scratch;
    if (d->scratch) /* commands still using it keep it alive until they finish */
        clReleaseMemObject(d->scratch);
    cl_int err;
    d->scratch = clCreateBuffer(d->context, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &err);
    if (err != CL_SUCCESS) {
        d->scratch = NULL;
        d->scratch_bytes = 0;
        fl_cl_fail("clCreateBuffer(scratch)", err);
        return NULL;
    }
    d->scratch_bytes = bytes;
    return d->scratch;
}

cl_mem fl_cl_zeros(fl_cl_device *d, size_t bytes)
{
    if (d->zeros && d->zeros_bytes >= bytes)
        return d->zeros;
    if (d->zeros) /* commands still reading it keep it alive until they finish */
        clReleaseMemObject(d->zeros);
    d->zeros_bytes = 0;
    bytes = bytes < 4096 ? 4096 : bytes;
    cl_int err, zero = 0;
    d->zeros = clCreateBuffer(d->context, CL_MEM_READ_ONLY, bytes, NULL, &err);
    if (err == CL_SUCCESS)
        err = clEnqueueFillBuffer(d->queue, d->zeros, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        if (d->zeros)
            clReleaseMemObject(d->zeros);
        d->zeros = NULL;
        fl_cl_fail("a buffer of zeros", err);
        return NULL;
    }
    d->zeros_bytes = bytes;
    return d->zeros;
}

/* Says what the first recorded fault was, then clears it for the next step. */
static int report_fault(fl_cl_device *d, const int *fault)
{
    int slot = fault[1] >= 0 && fault[1] < d->nfault_ops ? fault[1] : 0;
    const char *op = d->nfault_ops ? d->fault_ops[slot].op : "an op";
    if (fault[0] == FL_CL_FAULT_LABEL)
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: label %d in row %d is outside [0, %d)", op, fault[3], fault[2],
                          d->fault_ops[slot].classes);
    else
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: integer division by zero at element %d", op, fault[2]);
    int zeros[4] = {0};
    clEnqueueWriteBuffer(d->queue, d->fault, CL_TRUE, 0, sizeof zeros, zeros, 0, NULL, NULL);
    return -1;
}

int fl_cl_device_wait(fl_cl_device *d)
{
    cl_int err = clFinish(d->queue);
    if (err != CL_SUCCESS)
        return fl_cl_fail("clFinish", err);
    pthread_mutex_lock(&d->lock);
    int rc = 0;
    if (d->nfault_ops > 0) { /* only steps that ran a checking kernel pay for the read */
        int fault[4] = {0};
        err = clEnqueueReadBuffer(d->queue, d->fault, CL_TRUE, 0, sizeof fault, fault, 0, NULL,
                                  NULL);
        if (err != CL_SUCCESS)
            rc = fl_cl_fail("reading the fault buffer", err);
        else if (fault[0] != FL_CL_FAULT_NONE)
            rc = report_fault(d, fault);
        d->nfault_ops = 0;
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

/* ---- tracing: when each op really ran ---- */

int fl_cl_mark(fl_cl_device *d, cl_event *event)
{
    cl_int err = clEnqueueMarkerWithWaitList(d->queue, 0, NULL, event);
    return err == CL_SUCCESS ? 0 : fl_cl_fail("clEnqueueMarkerWithWaitList", err);
}

int fl_cl_keep_timing(fl_cl_device *d, int node, cl_event before)
{
    cl_event after;
    if (fl_cl_mark(d, &after) != 0) {
        clReleaseEvent(before);
        return -1;
    }
    if (d->nmarks == d->marks_cap) {
        d->marks_cap = d->marks_cap ? d->marks_cap * 2 : 256;
        d->marks = fl_xrealloc(d->marks, (size_t)d->marks_cap * sizeof *d->marks);
    }
    d->marks[d->nmarks++] = (fl_cl_op_marks){node, before, after};
    return 0;
}

static void drop_marks(fl_cl_device *d, int count)
{
    if (count == 0) /* marks may still be NULL */
        return;
    for (int i = 0; i < count; i++) {
        clReleaseEvent(d->marks[i].before);
        clReleaseEvent(d->marks[i].after);
    }
    d->nmarks -= count;
    memmove(d->marks, d->marks + count, (size_t)d->nmarks * sizeof *d->marks);
}

/* One moment on both clocks, for the marks taken next. A marker ends before
 * the host sees it end, so each try places the host clock too late by the
 * time it took to hear; the try that heard soonest is the closest, and it
 * errs late, never early. */
static int sync_clocks(fl_cl_device *d)
{
    double best_gap = -1;
    for (int i = 0; i < 5; i++) {
        cl_event marker;
        if (fl_cl_mark(d, &marker) != 0)
            return -1;
        double asked = fl_now_us();
        cl_int err = clWaitForEvents(1, &marker);
        double heard = fl_now_us();
        cl_ulong end = 0;
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
        clReleaseEvent(marker);
        if (err != CL_SUCCESS)
            return fl_cl_fail("reading a marker's profiling time", err);
        if (best_gap < 0 || heard - asked < best_gap) {
            best_gap = heard - asked;
            d->sync_device_ns = end;
            d->sync_host_us = heard;
        }
    }
    return 0;
}

int fl_cl_device_set_tracing(fl_cl_device *d, bool on)
{
    pthread_mutex_lock(&d->lock);
    if (!on)
        drop_marks(d, d->nmarks);
    d->tracing = on;
    d->synced = false;
    pthread_mutex_unlock(&d->lock);
    return 0; /* the queue has profiling on: every marker will have its times */
}

/* Profiling nanoseconds as fl_now_us() microseconds; the difference is taken
 * in integers first, as a double cannot hold nanoseconds since boot exactly. */
static double host_us(const fl_cl_device *d, cl_ulong device_ns)
{
    return d->sync_host_us + (double)(int64_t)(device_ns - d->sync_device_ns) / 1e3;
}

static int timing_of(const fl_cl_device *d, const fl_cl_op_marks *m, fl_op_timing *out)
{
    cl_ulong start = 0, end = 0;
    cl_int err = clWaitForEvents(1, &m->after);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(m->before, CL_PROFILING_COMMAND_END, sizeof start, &start,
                                      NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(m->after, CL_PROFILING_COMMAND_START, sizeof end, &end, NULL);
    if (err != CL_SUCCESS)
        return fl_cl_fail("reading an op's profiling times", err);
    *out = (fl_op_timing){m->node, host_us(d, start), host_us(d, end < start ? start : end)};
    return 0;
}

int fl_cl_device_take_timings(fl_cl_device *d, fl_op_timing *out, int max)
{
    pthread_mutex_lock(&d->lock);
    int count = d->nmarks < max ? d->nmarks : max, rc = 0;
    /* Synced when the ops are taken, not when tracing starts: the session
     * takes them after its run, when the device is idle, so the sync neither
     * delays the run's ops nor waits behind them; and the clocks cannot
     * drift apart much within one run. */
    if (count > 0 && !d->synced)
        rc = sync_clocks(d);
    d->synced = rc == 0;
    for (int i = 0; i < count && rc == 0; i++)
        rc = timing_of(d, &d->marks[i], &out[i]);
    drop_marks(d, rc == 0 ? count : d->nmarks);
    pthread_mutex_unlock(&d->lock);
    return rc == 0 ? count : -1;
}
