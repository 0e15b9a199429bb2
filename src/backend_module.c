/* backend_module.c: opening a backend built as a shared module (the CUDA
 * backend), as TensorFlow opens its CUDA libraries: with dlopen, at run time,
 * handing it the table of core functions it calls (backend_entry.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_entry.h"

static const fl_module_core core = {
    .core_size = sizeof(fl_module_core),
    .backend_size = sizeof(fl_backend),
    .node_size = sizeof(fl_node),
    .tensor_size = sizeof(fl_tensor),
    .set_error = fl_set_error,
    .set_error_code = fl_set_error_code,
    .last_error = fl_last_error,
    .prefix_error = fl_prefix_error,
    .xmalloc = fl_xmalloc,
    .xcalloc = fl_xcalloc,
    .xrealloc = fl_xrealloc,
    .dtype_size = fl_dtype_size,
    .tensor_bytes = fl_tensor_bytes,
    .shape_size = fl_shape_size,
    .check_copy_size = fl_check_copy_size,
    .op_def_of = fl_op_def_of,
    .node_writes_inputs = fl_node_writes_inputs,
    .view_around = fl_view_around,
    .slice_begin = fl_slice_begin,
    .matmul_dims_of = fl_matmul_dims_of,
    .mix_seed = fl_mix_seed,
    .fill_random_uniform = fl_fill_random_uniform,
    .fill_truncated_normal = fl_fill_truncated_normal,
    .conv_geometry_of = fl_conv_geometry_of,
    .pool_geometry_of = fl_pool_geometry_of,
    .conv_pad_bottom = fl_conv_pad_bottom,
    .conv_pad_right = fl_conv_pad_right,
    .now_us = fl_now_us,
};

static const char *module_path(const fl_backend_entry *e)
{
    const char *path = e->module_path_env ? getenv(e->module_path_env) : NULL;
    return path && path[0] ? path : e->module_path;
}

/* The handle stays open for the life of the process even when the module
 * refuses: its libraries (cuDNN) do not expect to be unloaded. */
const fl_backend *fl_backend_module_open(const fl_backend_entry *e, fl_status *st)
{
    const char *path = module_path(e);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        fl_status_set(st, FL_NOT_FOUND, "the %s backend's module did not open: %s (build it with make, or point %s "
                      "at it)", e->name, dlerror(), e->module_path_env);
        return NULL;
    }
    fl_module_open_fn open_module;
    /* POSIX's way to turn dlsym's void * into a function pointer. */
    *(void **)&open_module = dlsym(handle, e->module_open);
    if (!open_module) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s has no %s: it is not a flowlab %s module", path, e->module_open,
                      e->name);
        return NULL;
    }
    const fl_backend *b = open_module(&core, st);
    if (b && strcmp(b->name, e->name) != 0) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s holds the %s backend, not %s", path, b->name, e->name);
        return NULL;
    }
    return b;
}
