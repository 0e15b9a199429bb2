/* opencl_pool.c: free lists of OpenCL buffers, best fit by size.
 * Sizes are rounded up to 256 bytes so near-equal requests share buffers;
 * a free buffer serves a request at most half its size, so a scalar never
 * pins down a whole batch's worth of memory. */
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "opencl_device.h"

static size_t rounded(size_t bytes)
{
    size_t unit = 256; /* also gives a zero-byte tensor a real buffer */
    return bytes == 0 ? unit : (bytes + unit - 1) / unit * unit;
}

void fl_cl_pool_init(fl_cl_pool *p, cl_context context)
{
    *p = (fl_cl_pool){.context = context};
}

/* The smallest free buffer that fits, or -1. */
static int best_fit(const fl_cl_pool *p, size_t bytes)
{
    int best = -1;
    for (int i = 0; i < p->nfree; i++) {
        size_t have = p->free_list[i].bytes;
        if (have < bytes || have > 2 * bytes)
            continue;
        if (best < 0 || have < p->free_list[best].bytes)
            best = i;
    }
    return best;
}

static cl_mem create_buffer(cl_context context, size_t bytes, void *host)
{
    cl_int err;
    cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE | (host ? CL_MEM_USE_HOST_PTR : 0), bytes, host, &err);
    if (err != CL_SUCCESS) {
        fl_cl_fail("clCreateBuffer", err);
        return NULL;
    }
    return m;
}

static void CL_CALLBACK free_host_memory(cl_mem m, void *host)
{
    (void)m;
    free(host);
}

/* Page-aligned host memory, freed when OpenCL destroys the buffer: page
 * alignment is more than any device asks of a base address, and a device
 * given less may copy instead of using the memory itself. */
static cl_mem over_host_memory(cl_context context, size_t bytes)
{
    void *host = NULL;
    if (posix_memalign(&host, 4096, bytes) != 0) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "no host memory for a buffer of %zu bytes", bytes);
        return NULL;
    }
    cl_mem m = create_buffer(context, bytes, host);
    if (!m || clSetMemObjectDestructorCallback(m, free_host_memory, host) != CL_SUCCESS) {
        if (m)
            clReleaseMemObject(m); /* freed below, as no callback was set */
        free(host);
        return NULL;
    }
    return m;
}

void *fl_cl_pool_host_address(cl_mem buffer)
{
    void *host = NULL;
    if (!buffer || clGetMemObjectInfo(buffer, CL_MEM_HOST_PTR, sizeof host, &host, NULL) != CL_SUCCESS)
        return NULL;
    return host;
}

/* A CPU device with unified memory may still keep a copy of its own; a
 * blocking fill through the queue tells: its bytes must appear in ours. */
static bool fill_lands_in_host_memory(cl_context context, cl_command_queue queue)
{
    cl_mem m = over_host_memory(context, 256);
    if (!m)
        return false;
    unsigned char *host = fl_cl_pool_host_address(m), pattern = 0x5a;
    memset(host, 0, 256);
    bool lands = clEnqueueFillBuffer(queue, m, &pattern, 1, 0, 256, 0, NULL, NULL) == CL_SUCCESS &&
                 clFinish(queue) == CL_SUCCESS && host[0] == 0x5a && host[255] == 0x5a;
    clReleaseMemObject(m);
    return lands;
}

bool fl_cl_pool_on_host_memory(fl_cl_pool *p, cl_device_id id, cl_command_queue queue)
{
    cl_device_type type = 0;
    cl_bool unified = CL_FALSE;
    clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    p->on_host_memory = (type & CL_DEVICE_TYPE_CPU) && unified && fill_lands_in_host_memory(p->context, queue);
    return p->on_host_memory;
}

cl_mem fl_cl_pool_take(fl_cl_pool *p, size_t bytes)
{
    bytes = rounded(bytes);
    int i = best_fit(p, bytes);
    if (i >= 0) {
        cl_mem m = p->free_list[i].buffer;
        p->free_list[i] = p->free_list[--p->nfree];
        p->reused++;
        return m;
    }
    cl_mem m = p->on_host_memory ? over_host_memory(p->context, bytes) : create_buffer(p->context, bytes, NULL);
    p->created += m != NULL;
    return m;
}

void fl_cl_pool_give(fl_cl_pool *p, cl_mem buffer)
{
    if (!buffer)
        return;
    size_t bytes = 0;
    if (clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS) {
        clReleaseMemObject(buffer); /* not one of ours after all: do not keep it */
        return;
    }
    if (p->nfree == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->free_list = fl_xrealloc(p->free_list, (size_t)p->cap * sizeof *p->free_list);
    }
    p->free_list[p->nfree++] = (fl_cl_pooled){buffer, bytes};
}

void fl_cl_pool_drain(fl_cl_pool *p)
{
    for (int i = 0; i < p->nfree; i++)
        clReleaseMemObject(p->free_list[i].buffer);
    free(p->free_list);
    p->free_list = NULL;
    p->nfree = p->cap = 0;
}
