/* opencl_pool.c: free lists of OpenCL buffers, best fit by size.
 * Sizes are rounded up to 256 bytes so near-equal requests share buffers;
 * a free buffer serves a request at most half its size, so a scalar never
 * pins down a whole batch's worth of memory. */
#include <stdlib.h>

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
    cl_int err;
    cl_mem m = clCreateBuffer(p->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        fl_cl_fail("clCreateBuffer", err);
        return NULL;
    }
    p->created++;
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
