/* module_open.c: the CUDA module's entry point, and its definitions of the
 * core functions the backend calls. The module is linked with no symbol of
 * the core (a static program exports none): each function here forwards
 * through the table the core handed fl_cuda_module_open (src/backend_entry.h).
 * Built into libflowlab_cuda.so only, never into the core's library. */
#include <stdarg.h>
#include <stdio.h>

#include "backend_entry.h"

static const fl_module_core *core;

/* The module's one public name besides the counters of cuda_stats.h (cuda/module.map). */
const fl_backend *fl_cuda_module_open(const fl_module_core *from, fl_status *st)
{
    if (from->core_size != sizeof(fl_module_core) || from->backend_size != sizeof(fl_backend) ||
        from->node_size != sizeof(fl_node) || from->tensor_size != sizeof(fl_tensor)) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "the CUDA module was built from other headers than this program "
                      "(rebuild both with make, or unset FLOWLAB_CUDA_MODULE)");
        return NULL;
    }
    core = from;
    return &fl_cuda_backend;
}

/* Formatted here: the core's functions take the finished message. */
void fl_set_error(const char *fmt, ...)
{
    char message[FL_ERROR_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    core->set_error("%s", message);
}

void fl_set_error_code(fl_error_code code, const char *fmt, ...)
{
    char message[FL_ERROR_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    core->set_error_code(code, "%s", message);
}

const char *fl_last_error(void) { return core->last_error(); }

void fl_prefix_error(const char *fmt, ...)
{
    char prefix[FL_ERROR_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, args);
    va_end(args);
    core->prefix_error("%s", prefix);
}

void *fl_xmalloc(size_t bytes) { return core->xmalloc(bytes); }
void *fl_xcalloc(size_t count, size_t size) { return core->xcalloc(count, size); }
void *fl_xrealloc(void *p, size_t bytes) { return core->xrealloc(p, bytes); }
size_t fl_dtype_size(fl_dtype dtype) { return core->dtype_size(dtype); }
size_t fl_tensor_bytes(const fl_tensor *t) { return core->tensor_bytes(t); }
int64_t fl_shape_size(fl_shape shape) { return core->shape_size(shape); }
int fl_check_copy_size(const fl_tensor *from, const fl_tensor *to) { return core->check_copy_size(from, to); }
const fl_op_def *fl_op_def_of(fl_op_kind op) { return core->op_def_of(op); }
int fl_node_writes_inputs(const fl_node *n) { return core->node_writes_inputs(n); }
fl_axis_view fl_view_around(fl_shape shape, int axis) { return core->view_around(shape, axis); }
int64_t fl_slice_begin(const fl_attrs *a, int64_t size) { return core->slice_begin(a, size); }
uint64_t fl_mix_seed(uint64_t a, uint64_t b) { return core->mix_seed(a, b); }

fl_matmul_dims fl_matmul_dims_of(const fl_node *n, fl_shape a, fl_shape out)
{
    return core->matmul_dims_of(n, a, out);
}

void fl_fill_random_uniform(float *out, int64_t n, float minval, float maxval, uint64_t seed)
{
    core->fill_random_uniform(out, n, minval, maxval, seed);
}

void fl_fill_truncated_normal(float *out, int64_t n, float mean, float stddev, uint64_t seed)
{
    core->fill_truncated_normal(out, n, mean, stddev, seed);
}

fl_conv_geometry fl_conv_geometry_of(const fl_node *n, fl_shape image, fl_shape filter)
{
    return core->conv_geometry_of(n, image, filter);
}

fl_conv_geometry fl_pool_geometry_of(const fl_node *n, fl_shape image) { return core->pool_geometry_of(n, image); }
int fl_conv_pad_bottom(const fl_conv_geometry *g) { return core->conv_pad_bottom(g); }
int fl_conv_pad_right(const fl_conv_geometry *g) { return core->conv_pad_right(g); }
double fl_now_us(void) { return core->now_us(); }
