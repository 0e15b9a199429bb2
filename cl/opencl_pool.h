/* opencl_pool.h: a per-device pool of OpenCL buffers. Released buffers go
 * on a free list and the next request of a size they fit takes one back, so
 * a warm step (or a second session like the first) creates no buffers. On a
 * device whose memory is the host's, a buffer lies in host memory we made
 * (CL_MEM_USE_HOST_PTR), so the host reads a finished value where it lies. */
#ifndef FLOWLAB_OPENCL_POOL_H
#define FLOWLAB_OPENCL_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <CL/cl.h>

typedef struct {
    cl_mem buffer;
    size_t bytes;
} fl_cl_pooled;

typedef struct {
    cl_context context;
    bool on_host_memory; /* buffers over our own host memory (fl_cl_pool_on_host_memory) */
    fl_cl_pooled *free_list;
    int nfree, cap;
    uint64_t created;   /* clCreateBuffer calls so far */
    uint64_t reused;    /* requests served from the free list */
} fl_cl_pool;

void fl_cl_pool_init(fl_cl_pool *p, cl_context context);
/* NULL after fl_set_error when the device is out of memory. */
cl_mem fl_cl_pool_take(fl_cl_pool *p, size_t bytes);
void fl_cl_pool_give(fl_cl_pool *p, cl_mem buffer);
/* Whether the device's kernels work on a buffer's host memory itself: for a
 * CPU device with unified memory, a write through the queue is checked to
 * land there. From then on the pool makes its buffers so. */
bool fl_cl_pool_on_host_memory(fl_cl_pool *p, cl_device_id id, cl_command_queue queue);
/* Where buffer's bytes lie in this process: NULL unless the pool made it
 * over host memory. */
void *fl_cl_pool_host_address(cl_mem buffer);
/* Releases the free buffers (buffers still taken are the session's). */
void fl_cl_pool_drain(fl_cl_pool *p);

#endif
