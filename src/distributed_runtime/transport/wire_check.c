/* wire_check.c: the rules a name, a list, a shape and a tensor must follow on the
 * wire. The encoders and the parsers both call these, so a sender refuses exactly
 * what a receiver would, in the same words; a refusal names the frame type. */
#include <stdarg.h>
#include <stdio.h>

#include "wire_internal.h"

int wire_check_name(const unsigned char *bytes, size_t len, fl_status *st)
{
    if (len == 0) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "is empty");
        return -1;
    }
    if (len > FL_WIRE_MAX_NAME) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "is %zu bytes, over the %u limit", len, FL_WIRE_MAX_NAME);
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        if (!wire_name_byte_ok(bytes[i])) {
            fl_status_set(st, FL_INVALID_ARGUMENT, "is not printable (byte 0x%02x at offset %zu)", bytes[i], i);
            return -1;
        }
    return 0;
}

/* "[3,-1]", with the dims as they arrived rather than fl_shape_format's "?". */
void wire_format_dims(int rank, const int *dims, char *out, size_t len)
{
    size_t used = (size_t)snprintf(out, len, "[");
    for (int i = 0; i < rank && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, i ? ",%d" : "%d", dims[i]);
    if (used < len)
        snprintf(out + used, len - used, "]");
}

int wire_check_shape(int rank, const int *dims, int64_t *count, fl_status *st)
{
    if (rank < 0 || rank > FL_MAX_RANK) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "rank %d over the limit of %d", rank, FL_MAX_RANK);
        return -1;
    }
    char shape[64];
    wire_format_dims(rank, dims, shape, sizeof shape);
    const int64_t max_count = FL_WIRE_MAX_PAYLOAD / 4;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] <= 0) {
            fl_status_set(st, FL_INVALID_ARGUMENT, "shape %s has a non-positive dimension", shape);
            return -1;
        }
        n *= dims[i]; /* n <= 2^24 before, dims < 2^31: no overflow in 64 bits */
        if (n > max_count) {
            fl_status_set(st, FL_INVALID_ARGUMENT, "shape %s has more than %lld elements, over the %u-byte limit",
                          shape, (long long)max_count, FL_WIRE_MAX_PAYLOAD);
            return -1;
        }
    }
    *count = n;
    return 0;
}

/* ---- the fields of a frame's message ---- */

int wire_refuse(fl_wire_type type, fl_status *st, const char *fmt, ...)
{
    char why[FL_STATUS_MESSAGE_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(why, sizeof why, fmt, args);
    va_end(args);
    return fl_status_set(st, FL_DATA_LOSS, "%s: %s", fl_wire_type_name(type), why);
}

int wire_check_field(fl_wire_type type, const char *what, const char *name, fl_status *st)
{
    fl_status why = {0};
    if (wire_check_name((const unsigned char *)name, name ? strlen(name) : 0, &why) != 0)
        return wire_refuse(type, st, "%s %s", what, why.message);
    return 0;
}

int wire_check_count(fl_wire_type type, const char *what, size_t n, fl_status *st)
{
    return n > FL_WIRE_MAX_LIST ? wire_refuse(type, st, "%zu %s, over the %d limit", n, what, FL_WIRE_MAX_LIST) : 0;
}

/* Rank and dims, each dim narrowed to an int only once it is known to fit. */
static int view_shape(fl_wire_type type, const Tensorflow__TensorShapeProto *s, fl_wire_tensor *out, fl_status *st)
{
    fl_status why = {0};
    if (!s)
        return wire_refuse(type, st, "a tensor without its tensor_shape");
    if (s->n_dim > FL_MAX_RANK)
        return wire_refuse(type, st, "rank %zu over the limit of %d", s->n_dim, FL_MAX_RANK);
    out->shape.rank = (int)s->n_dim;
    for (size_t i = 0; i < s->n_dim; i++) {
        int64_t size = s->dim[i]->size;
        if (size > INT32_MAX)
            return wire_refuse(type, st, "dimension %zu is %lld, over the 2^31-1 limit", i, (long long)size);
        out->shape.dims[i] = size < INT32_MIN ? -1 : (int)size;
    }
    if (wire_check_shape(out->shape.rank, out->shape.dims, &out->count, &why) != 0)
        return wire_refuse(type, st, "%s", why.message);
    return 0;
}

int wire_view_tensor(fl_wire_type type, const char *what, const Tensorflow__TensorProto *t, const fl_wire_bytes *tail,
                     fl_wire_tensor *out, fl_status *st)
{
    memset(out, 0, sizeof *out);
    if (!t)
        return wire_refuse(type, st, "%s has no tensor", what);
    if (t->dtype != TENSORFLOW__DATA_TYPE__DT_FLOAT && t->dtype != TENSORFLOW__DATA_TYPE__DT_INT32)
        return wire_refuse(type, st, "%s: dtype %d is neither 1 (DT_FLOAT) nor 3 (DT_INT32)", what, (int)t->dtype);
    out->dtype = t->dtype == TENSORFLOW__DATA_TYPE__DT_FLOAT ? FL_FLOAT32 : FL_INT32;
    if (view_shape(type, t->tensor_shape, out, st) != 0)
        return -1;
    if (tail && t->tensor_content.len)
        return wire_refuse(type, st, "%s: %zu bytes in the head's tensor_content; the elements are the tail", what,
                    t->tensor_content.len);
    size_t bytes = tail ? tail->len : t->tensor_content.len;
    if ((uint64_t)bytes != (uint64_t)out->count * 4) {
        char shape[64];
        wire_format_dims(out->shape.rank, out->shape.dims, shape, sizeof shape);
        return wire_refuse(type, st, "%s: %s %s needs %lld data bytes, the frame says %zu", what,
                    out->dtype == FL_FLOAT32 ? "float32" : "int32", shape, (long long)out->count * 4, bytes);
    }
    out->data = tail ? tail->data : t->tensor_content.data;
    out->bytes = bytes;
    return 0;
}
