/* opencl_sources.h: the OpenCL C files of cl/ and src/scalar_rules.h, embedded
 * into the library at build time ($(BUILD)/gen/cl_sources.c, made by
 * cl/embed_sources.c), so a program finds its kernels whatever directory it
 * runs from. */
#ifndef FLOWLAB_OPENCL_SOURCES_H
#define FLOWLAB_OPENCL_SOURCES_H

#include <stddef.h>

typedef struct {
    const char *name; /* "nn.cl" */
    const char *text; /* NUL-terminated */
    size_t length;
} fl_cl_source;

extern const fl_cl_source fl_cl_sources[];
extern const int fl_cl_source_count;

#endif
