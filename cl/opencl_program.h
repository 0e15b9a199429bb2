/* opencl_program.h: building a program once per context, through an on-disk
 * cache of program binaries keyed on the device's name, its driver and
 * OpenCL versions, the source and the build options. The directory is
 * $FLOWLAB_CACHE_DIR, else $XDG_CACHE_HOME/flowlab, else ~/.cache/flowlab.
 * A missing, corrupt or unwritable cache only means building from source. */
#ifndef FLOWLAB_OPENCL_PROGRAM_H
#define FLOWLAB_OPENCL_PROGRAM_H

#include <stdint.h>
#include <CL/cl.h>

/* label names the cache file ("kernels", "gemm"). NULL after fl_set_error;
 * a failed build prints its log to stderr. */
cl_program fl_cl_program_build(cl_context context, cl_device_id device, const char *label,
                               const char *source, const char *options);

/* Counts since the process started, for tests and start-up diagnostics. */
typedef struct {
    uint64_t cache_hits;    /* programs loaded from a cached binary */
    uint64_t cache_misses;  /* programs built from source */
    uint64_t cache_writes;  /* binaries written to the cache */
} fl_cl_cache_stats;
fl_cl_cache_stats fl_cl_program_cache_stats(void);

#endif
