/* launch.cuh: the one launch shape every element-wise kernel here uses.
 * A grid-stride loop over n elements: a fixed, modest grid that works for
 * any n (int64) without overflowing gridDim, one element per step. */
#ifndef FLOWLAB_CUDA_LAUNCH_CUH
#define FLOWLAB_CUDA_LAUNCH_CUH

#include <stdint.h>

#include "kernels.h"

static const int fl_threads = 256;

/* Enough blocks to fill a large GPU several times over; more only adds
 * scheduling overhead, since each thread loops. */
static inline unsigned fl_blocks(int64_t n)
{
    int64_t blocks = (n + fl_threads - 1) / fl_threads;
    if (blocks > 4096)
        blocks = 4096;
    return blocks > 0 ? (unsigned)blocks : 1u;
}

__device__ inline int64_t fl_first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline int64_t fl_grid_stride() { return (int64_t)gridDim.x * blockDim.x; }

/* Records the first fault of a run; later ones keep the first's details.
 * The backend's one atomic: which of two bad elements is reported may vary
 * between runs, but no computed value depends on it. */
__device__ inline void fl_report_fault(fl_cuda_fault *f, int code, long long index, int label,
                                       int classes)
{
    if (atomicCAS(&f->code, 0, code) != 0)
        return;
    f->index = index;
    f->label = label;
    f->classes = classes;
}

#endif
