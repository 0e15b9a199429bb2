/* backend_opencl.h: what the OpenCL backend tells tests and tools beyond the
 * fl_backend table: how many buffers each device's pool created or reused,
 * and how its programs were built (cache hits and misses). */
#ifndef FLOWLAB_BACKEND_OPENCL_H
#define FLOWLAB_BACKEND_OPENCL_H

#include <stdint.h>

typedef struct {
    uint64_t buffers_created; /* clCreateBuffer calls by the pool */
    uint64_t buffers_reused;  /* requests the free lists served */
} fl_opencl_pool_stats;

/* Zeros for a device that is not open. */
fl_opencl_pool_stats fl_opencl_pool_stats_of(int index);

#endif
