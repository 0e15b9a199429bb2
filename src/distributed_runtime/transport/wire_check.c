/* wire_check.c: the rules a name and a shape must follow on the wire.
 * The encoders and the parsers both call these, so a sender refuses exactly what a
 * receiver would, in the same words. */
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
