/* wire_cursor.c: the cursor every parser walks a payload with, trusting
 * nothing: each read first checks that its bytes are there, and every
 * count, dim, dtype and name is checked before it is used. Failures say
 * "TYPE: why". Shared by wire_parse.c, wire_partition.c and partition_def.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire_internal.h"

/* Every parse message starts with the frame type: "PULL: name is empty". */
int wire_fail(wire_cursor *c, const char *fmt, ...)
{
    char why[FL_STATUS_MESSAGE_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(why, sizeof why, fmt, args);
    va_end(args);
    return fl_status_set(c->st, FL_DATA_LOSS, "%s: %s", fl_wire_type_name(c->type), why);
}

int wire_cursor_open(wire_cursor *c, const fl_wire_frame *f, bool type_ok, const char *parser, fl_status *st)
{
    *c = (wire_cursor){f->payload, f->payload_len, f->type, st};
    if (!type_ok)
        return wire_fail(c, "not a frame for the %s parser", parser);
    return 0;
}

int wire_take(wire_cursor *c, size_t n, const char *what, const unsigned char **out)
{
    *out = NULL;
    if (n > c->left)
        return wire_fail(c, "payload ends inside the %s (needs %zu bytes, %zu left)", what, n, c->left);
    *out = c->p;
    c->p += n;
    c->left -= n;
    return 0;
}

int wire_get_u8(wire_cursor *c, const char *what, unsigned *v)
{
    const unsigned char *b;
    if (wire_take(c, 1, what, &b) != 0)
        return -1;
    *v = b[0];
    return 0;
}

int wire_get_u32(wire_cursor *c, const char *what, uint32_t *v)
{
    const unsigned char *b;
    if (wire_take(c, 4, what, &b) != 0)
        return -1;
    *v = wire_load_u32(b);
    return 0;
}

/* No bytes may follow the last field: they would mean sender and receiver disagree. */
int wire_finish(wire_cursor *c)
{
    if (c->left != 0)
        return wire_fail(c, "%zu trailing byte%s after the last field", c->left, c->left == 1 ? "" : "s");
    return 0;
}

/* ---- fields ---- */

/* u8 length, then that many bytes; copied out with a terminating zero. */
int wire_get_name(wire_cursor *c, const char *what, char out[FL_WIRE_MAX_NAME + 1])
{
    unsigned len;
    const unsigned char *bytes;
    fl_status why = {0};
    if (wire_get_u8(c, what, &len) != 0 || wire_take(c, len, what, &bytes) != 0)
        return -1;
    if (wire_check_name(bytes, len, &why) != 0)
        return wire_fail(c, "%s %s", what, why.message);
    memcpy(out, bytes, len);
    out[len] = '\0';
    return 0;
}

/* A name copied into a storage block at *pool, which moves past it. */
int wire_get_pooled_name(wire_cursor *c, const char *what, char **pool, const char **out)
{
    char name[FL_WIRE_MAX_NAME + 1];
    if (wire_get_name(c, what, name) != 0)
        return -1;
    size_t len = strlen(name) + 1;
    memcpy(*pool, name, len);
    *out = *pool;
    *pool += len;
    return 0;
}

static int get_shape(wire_cursor *c, fl_wire_tensor *t)
{
    unsigned rank;
    if (wire_get_u8(c, "rank", &rank) != 0)
        return -1;
    if (rank > FL_MAX_RANK)
        return wire_fail(c, "rank %u over the limit of %d", rank, FL_MAX_RANK);
    t->shape.rank = (int)rank;
    for (unsigned i = 0; i < rank; i++) {
        uint32_t dim;
        if (wire_get_u32(c, "shape", &dim) != 0)
            return -1;
        t->shape.dims[i] = (int32_t)dim; /* i32 on the wire: 0xffffffff reads as -1 */
    }
    fl_status why = {0};
    if (wire_check_shape(t->shape.rank, t->shape.dims, &t->count, &why) != 0)
        return wire_fail(c, "%s", why.message);
    return 0;
}

/* dtype u8, rank u8, dims i32, data length u32, data. */
int wire_get_tensor(wire_cursor *c, fl_wire_tensor *t)
{
    unsigned dtype;
    uint32_t bytes;
    memset(t, 0, sizeof *t);
    if (wire_get_u8(c, "dtype", &dtype) != 0)
        return -1;
    if (dtype != FL_FLOAT32 && dtype != FL_INT32)
        return wire_fail(c, "dtype %u is neither 0 (float32) nor 1 (int32)", dtype);
    t->dtype = (fl_dtype)dtype;
    if (get_shape(c, t) != 0 || wire_get_u32(c, "data length", &bytes) != 0)
        return -1;
    if ((uint64_t)bytes != (uint64_t)t->count * 4) {
        char shape[64];
        wire_format_dims(t->shape.rank, t->shape.dims, shape, sizeof shape);
        return wire_fail(c, "%s %s needs %lld data bytes, the frame says %u",
                    dtype == FL_FLOAT32 ? "float32" : "int32", shape, (long long)t->count * 4,
                    (unsigned)bytes);
    }
    t->bytes = bytes;
    return wire_take(c, bytes, "tensor data", &t->data);
}

int wire_get_u64(wire_cursor *c, const char *what, uint64_t *v)
{
    uint32_t high, low;
    if (wire_get_u32(c, what, &high) != 0 || wire_get_u32(c, what, &low) != 0)
        return -1;
    *v = (uint64_t)high << 32 | low;
    return 0;
}

