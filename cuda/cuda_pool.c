/* cuda_pool.c: device memory for one GPU, kept and reused, and the host
 * buffers an asynchronous copy still reads, kept until wait().
 * cudaMalloc and cudaFree synchronize the device and cost far more than a
 * kernel, so freed buffers stay in the pool and a later request of the same
 * size class takes one back: after the first step nothing is allocated.
 * One list of blocks, searched by size class; a model has a few hundred. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_device.h"
#include "cuda_stats.h"

/* Powers of two up to 1 MiB, then whole MiBs: a tensor whose batch changes
 * a little still finds its block, and big blocks waste at most 1 MiB. */
static size_t size_class(size_t bytes)
{
    const size_t mib = (size_t)1 << 20;
    size_t size = 256;
    while (size < bytes && size < mib)
        size *= 2;
    if (size >= bytes)
        return size;
    return (bytes + mib - 1) / mib * mib;
}

/* A free block of exactly this size class, marked in use; NULL if none. */
static void *take_free(fl_cuda_pool *p, size_t size)
{
    for (int i = 0; i < p->count; i++)
        if (!p->blocks[i].in_use && p->blocks[i].bytes == size) {
            p->blocks[i].in_use = true;
            return p->blocks[i].ptr;
        }
    return NULL;
}

static void add_block(fl_cuda_pool *p, void *ptr, size_t size)
{
    if (p->count == p->capacity) {
        p->capacity = p->capacity ? p->capacity * 2 : 64;
        p->blocks = fl_xrealloc(p->blocks, (size_t)p->capacity * sizeof *p->blocks);
    }
    p->blocks[p->count++] = (fl_cuda_block){ptr, size, true};
}

/* cudaMalloc, and once more after giving the free blocks back to CUDA when
 * the GPU is full: they may be of the wrong sizes for what is asked now. */
static void *allocate(fl_cuda_device *d, size_t size)
{
    void *ptr = NULL;
    d->pool.mallocs++;
    cudaError_t e = cudaMalloc(&ptr, size);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError(); /* clear it: it is not sticky, but be sure */
        fl_cuda_pool_trim(d, false);
        e = cudaMalloc(&ptr, size);
    }
    if (e != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "cudaMalloc of %zu bytes on /gpu:%d", size, d->index);
        fl_cuda_check(e, what);
        return NULL;
    }
    return ptr;
}

/* ---- a capture's own blocks (called with the lock held) ---- */

static bool capturing_here(const fl_cuda_device *d)
{
    return d->capture.active && pthread_equal(d->capture.thread, pthread_self());
}

static void own(fl_cuda_capture *c, void *ptr)
{
    if (c->nowned == c->capacity) {
        c->capacity = c->capacity ? c->capacity * 2 : 16;
        c->owned = fl_xrealloc(c->owned, (size_t)c->capacity * sizeof *c->owned);
    }
    c->owned[c->nowned++] = ptr;
}

static bool owned(const fl_cuda_capture *c, const void *ptr)
{
    for (int i = 0; i < c->nowned; i++)
        if (c->owned[i] == ptr)
            return true;
    return false;
}

void fl_cuda_pool_begin_capture(fl_cuda_device *d)
{
    pthread_mutex_lock(&d->lock);
    d->capture = (fl_cuda_capture){true, pthread_self(), NULL, 0, 0};
    pthread_mutex_unlock(&d->lock);
}

void **fl_cuda_pool_end_capture(fl_cuda_device *d, int *n)
{
    pthread_mutex_lock(&d->lock);
    void **blocks = d->capture.owned;
    *n = d->capture.nowned;
    d->capture = (fl_cuda_capture){0};
    pthread_mutex_unlock(&d->lock);
    return blocks;
}

/* ---- taking and giving back ---- */

static void give_back(fl_cuda_pool *p, void *ptr)
{
    for (int i = 0; i < p->count; i++)
        if (p->blocks[i].ptr == ptr)
            p->blocks[i].in_use = false;
}

/* While this thread captures a graph, what it takes stays the graph's: the
 * kernels write it on every replay, so no one else may have it meanwhile. */
void *fl_cuda_pool_get(fl_cuda_device *d, size_t bytes)
{
    if (bytes == 0)
        return NULL;
    size_t size = size_class(bytes);
    pthread_mutex_lock(&d->lock);
    void *ptr = take_free(&d->pool, size);
    if (!ptr) {
        ptr = allocate(d, size);
        if (ptr)
            add_block(&d->pool, ptr, size);
    }
    if (ptr && capturing_here(d))
        own(&d->capture, ptr);
    pthread_mutex_unlock(&d->lock);
    return ptr;
}

void fl_cuda_pool_put(fl_cuda_device *d, void *ptr)
{
    if (!ptr)
        return;
    pthread_mutex_lock(&d->lock);
    if (!(capturing_here(d) && owned(&d->capture, ptr)))
        give_back(&d->pool, ptr);
    pthread_mutex_unlock(&d->lock);
}

void fl_cuda_pool_put_owned(fl_cuda_device *d, void **blocks, int n)
{
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < n; i++)
        give_back(&d->pool, blocks[i]);
    pthread_mutex_unlock(&d->lock);
}

/* Called with the lock held (from allocate) or at close. A free block may
 * still be read by work on the stream, so the stream finishes first. */
void fl_cuda_pool_trim(fl_cuda_device *d, bool everything)
{
    cudaStreamSynchronize(d->stream);
    fl_cuda_pool *p = &d->pool;
    int kept = 0;
    for (int i = 0; i < p->count; i++) {
        if (p->blocks[i].in_use && !everything)
            p->blocks[kept++] = p->blocks[i];
        else
            cudaFree(p->blocks[i].ptr);
    }
    p->count = kept;
    if (everything) {
        free(p->blocks);
        p->blocks = NULL;
        p->capacity = 0;
    }
}

uint64_t fl_cuda_pool_mallocs(void *impl)
{
    fl_cuda_device *d = impl;
    pthread_mutex_lock(&d->lock);
    uint64_t mallocs = d->pool.mallocs;
    pthread_mutex_unlock(&d->lock);
    return mallocs;
}

/* ---- host buffers that a copy on the stream still reads ---- */

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

void fl_cuda_free_pending(fl_cuda_device *d)
{
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < d->npending; i++)
        free(d->pending[i]);
    d->npending = 0;
    pthread_mutex_unlock(&d->lock);
}
