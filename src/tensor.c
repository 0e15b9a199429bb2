/* tensor.c: shapes, dtypes and host tensors.
 * A tensor is a dtype, a shape and a row-major host buffer; nothing more. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* Which thread is main: only it may exit(); another thread that runs out of
 * memory for the runtime's own small records aborts, as exit() there would
 * race the main thread through the exit handlers (OpenBLAS's among them). */
static pthread_t main_thread;
__attribute__((constructor)) static void note_main_thread(void) { main_thread = pthread_self(); }

static _Noreturn void out_of_memory(size_t count, size_t size)
{
    fprintf(stderr, "flowlab: out of memory allocating %zu x %zu bytes\n", count, size);
    if (pthread_equal(pthread_self(), main_thread))
        exit(1);
    abort();
}

void *fl_xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        out_of_memory(1, bytes);
    return p;
}

void *fl_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory(count, size);
    return p;
}

void *fl_xrealloc(void *p, size_t bytes)
{
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q)
        out_of_memory(1, bytes);
    return q;
}

char *fl_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(fl_xmalloc(n), s, n);
}

fl_shape fl_shape_make(int rank, ...)
{
    fl_shape shape = {0};
    if (rank < 0 || rank > FL_MAX_RANK) {
        shape.rank = -1; /* rejected by every builder with a message */
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_shape_make: rank %d; a tensor has rank 0 to %d", rank,
                          FL_MAX_RANK);
        return shape;
    }
    shape.rank = rank;
    va_list args;
    va_start(args, rank);
    for (int i = 0; i < rank; i++)
        shape.dims[i] = va_arg(args, int);
    va_end(args);
    return shape;
}

/* Saturates at INT64_MAX (four dims of 2^31 overflow 64 bits): no tensor
 * is that large, so the size limit refuses it before anything allocates. */
int64_t fl_shape_size(fl_shape shape)
{
    int64_t size = 1;
    for (int i = 0; i < shape.rank; i++) {
        if (shape.dims[i] < 0)
            return -1;
        if (shape.dims[i] > 0 && size > INT64_MAX / shape.dims[i])
            size = INT64_MAX;
        else
            size *= shape.dims[i];
    }
    return size;
}

bool fl_shape_known(fl_shape shape) { return shape.rank >= 0 && fl_shape_size(shape) >= 0; }

bool fl_shape_equal(fl_shape a, fl_shape b)
{
    if (a.rank != b.rank)
        return false;
    for (int i = 0; i < a.rank; i++)
        if (a.dims[i] != b.dims[i])
            return false;
    return true;
}

const char *fl_shape_format(fl_shape shape, char *buf, size_t len)
{
    size_t used = 0;
    used += (size_t)snprintf(buf + used, len - used, "[");
    for (int i = 0; i < shape.rank && used < len; i++) {
        const char *sep = i ? "," : "";
        if (shape.dims[i] < 0)
            used += (size_t)snprintf(buf + used, len - used, "%s?", sep);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%d", sep, shape.dims[i]);
    }
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

const char *fl_dtype_name(fl_dtype dtype)
{
    if (dtype == FL_UINT8)
        return "uint8";
    return dtype == FL_INT32 ? "int32" : "float32";
}

size_t fl_dtype_size(fl_dtype dtype) { return dtype == FL_UINT8 ? 1 : 4; }

/* SIZE_MAX when the bytes would not fit a size_t (see fl_shape_size). */
size_t fl_tensor_bytes(const fl_tensor *t)
{
    int64_t count = fl_shape_size(t->shape);
    size_t width = fl_dtype_size(t->dtype);
    if (count < 0 || (uint64_t)count > SIZE_MAX / width)
        return SIZE_MAX;
    return (size_t)count * width;
}

fl_tensor *fl_tensor_new(fl_dtype dtype, fl_shape shape)
{
    if (!fl_shape_known(shape)) {
        char buf[64];
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "fl_tensor_new: shape %s must be fully known", fl_shape_format(shape, buf, sizeof buf));
        return NULL;
    }
    size_t bytes = fl_tensor_bytes(&(fl_tensor){.dtype = dtype, .shape = shape});
    char buf[64];
    if (fl_check_tensor_bytes(bytes) != 0) {
        fl_prefix_error("fl_tensor_new: %s %s: ", fl_dtype_name(dtype), fl_shape_format(shape, buf, sizeof buf));
        return NULL;
    }
    void *data = calloc(bytes ? bytes : 1, 1);
    if (!data) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "fl_tensor_new: out of memory for %s %s (%zu bytes)",
                          fl_dtype_name(dtype), fl_shape_format(shape, buf, sizeof buf), bytes);
        return NULL;
    }
    fl_tensor *t = fl_xcalloc(1, sizeof *t); /* host memory, its own */
    t->dtype = dtype;
    t->shape = shape;
    t->data = data;
    return t;
}

/* The from_* makers copy values: NULL is a caller's mistake, said, not
 * read through. */
static bool have_values(const void *values, const char *caller)
{
    if (!values)
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: values is NULL; fl_tensor_new makes a zero-filled tensor",
                          caller);
    return values != NULL;
}

fl_tensor *fl_tensor_from_floats(fl_shape shape, const float *values)
{
    if (!have_values(values, "fl_tensor_from_floats"))
        return NULL;
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, shape);
    if (t)
        memcpy(t->data, values, fl_tensor_bytes(t));
    return t;
}

fl_tensor *fl_tensor_from_ints(fl_shape shape, const int32_t *values)
{
    if (!have_values(values, "fl_tensor_from_ints"))
        return NULL;
    fl_tensor *t = fl_tensor_new(FL_INT32, shape);
    if (t)
        memcpy(t->data, values, fl_tensor_bytes(t));
    return t;
}

fl_tensor *fl_tensor_copy(const fl_tensor *src)
{
    if (!src) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_tensor_copy: no tensor given");
        return NULL;
    }
    if (src->device) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_tensor_copy: the tensor lies on %s; read it with "
                          "fl_device_buffer_read", src->device);
        return NULL;
    }
    fl_tensor *t = fl_tensor_new(src->dtype, src->shape);
    if (t)
        memcpy(t->data, src->data, fl_tensor_bytes(t));
    return t;
}

void fl_tensor_free(fl_tensor *t)
{
    if (!t)
        return;
    if (!t->borrowed && !t->device) /* a device's buffer is its owner's to release */
        free(t->data);
    free(t);
}

float *fl_tensor_floats(const fl_tensor *t) { return t && t->dtype == FL_FLOAT32 ? t->data : NULL; }

int32_t *fl_tensor_ints(const fl_tensor *t) { return t && t->dtype == FL_INT32 ? t->data : NULL; }

float fl_tensor_scalar(const fl_tensor *t)
{
    if (!t || fl_shape_size(t->shape) < 1)
        return 0.0f;
    if (t->device && strcmp(t->device, "/cpu:0") != 0) { /* its data is a device's pointer: never read here */
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_tensor_scalar: the tensor lies on %s; read it with "
                          "fl_device_buffer_read", t->device);
        return NAN;
    }
    if (t->dtype == FL_UINT8)
        return (float)((uint8_t *)t->data)[0];
    return t->dtype == FL_INT32 ? (float)((int32_t *)t->data)[0] : ((float *)t->data)[0];
}

fl_axis_view fl_view_around(fl_shape shape, int axis)
{
    fl_axis_view v = {1, shape.dims[axis], 1};
    for (int d = 0; d < axis; d++)
        v.outer *= shape.dims[d];
    for (int d = axis + 1; d < shape.rank; d++)
        v.inner *= shape.dims[d];
    return v;
}

/* ---- reshape targets, shared by fl_reshape and fl_tensor_reshape ---- */

const char *fl_reshape_target_format(fl_shape s, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < s.rank && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "", s.dims[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

int fl_reshape_target_check(fl_shape target, fl_status *st)
{
    if (target.rank < 0 || target.rank > FL_MAX_RANK) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "the target shape's rank must be 0 to %d", FL_MAX_RANK);
        return -1;
    }
    int inferred = 0;
    for (int i = 0; i < target.rank; i++) {
        if (target.dims[i] < -1) {
            fl_status_set(st, FL_INVALID_ARGUMENT,
                          "dimension %d of the target is %d; only -1 (inferred) may be negative", i, target.dims[i]);
            return -1;
        }
        inferred += target.dims[i] == -1;
    }
    if (inferred <= 1)
        return 0;
    char text[64];
    return fl_status_set(st, FL_INVALID_ARGUMENT, "only one dimension may be -1, got %s",
                         fl_reshape_target_format(target, text, sizeof text));
    return -1;
}

int fl_reshape_target_resolve(fl_shape target, int64_t count, fl_shape *out)
{
    int64_t known = 1;
    int inferred = -1;
    for (int i = 0; i < target.rank; i++) {
        if (target.dims[i] == -1)
            inferred = i;
        else
            known *= target.dims[i];
    }
    *out = target;
    if (inferred < 0)
        return known == count ? 0 : -1;
    if (known == 0 || count % known != 0)
        return -1;
    out->dims[inferred] = (int)(count / known);
    return 0;
}

int fl_tensor_reshape(fl_tensor *t, fl_shape shape)
{
    if (!t) {
        fl_set_error("fl_tensor_reshape: no tensor given");
        return -1;
    }
    char have[64], want[64];
    fl_status st = {0};
    int64_t count = fl_shape_size(t->shape);
    fl_reshape_target_format(shape, want, sizeof want);
    fl_shape_format(t->shape, have, sizeof have);
    if (fl_reshape_target_check(shape, &st) != 0) {
        fl_set_error_code(st.code, "fl_tensor_reshape: cannot reshape %s into %s: %s", have, want, st.message);
        return -1;
    }
    fl_shape resolved;
    if (fl_reshape_target_resolve(shape, count, &resolved) != 0) {
        fl_set_error("fl_tensor_reshape: cannot reshape %s (%lld elements) into %s; a reshape keeps the "
                     "number of elements (one dimension may be -1)", have, (long long)count, want);
        return -1;
    }
    t->shape = resolved;
    return 0;
}
