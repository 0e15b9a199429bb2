/* wire_encode.c: one function per frame type that appends that frame to a buffer.
 * Arguments get the checks the receiving parser would make, so a frame that leaves
 * here is one the other side accepts; a refused one leaves the buffer as it was. */
#include <stdio.h>
#include <string.h>

#include "wire_internal.h"

static int put_u8(fl_wire_buf *buf, unsigned v)
{
    unsigned char byte = (unsigned char)v;
    return wire_append(buf, &byte, 1);
}

static int put_u32(fl_wire_buf *buf, uint32_t v)
{
    unsigned char *out = wire_extend(buf, 4);
    if (!out)
        return -1;
    wire_store_u32(out, v);
    return 0;
}

/* Fails with the frame dropped and "TYPE: what was wrong" in buf->error. */
static int refuse(fl_wire_buf *buf, long start, fl_wire_type type, const char *why)
{
    return wire_abort(buf, start, "%s: %s", fl_wire_type_name(type), why);
}

/* u8 length, then the bytes (no terminating zero). */
static int put_name(fl_wire_buf *buf, long start, fl_wire_type type, const char *what,
                    const char *name)
{
    fl_status why = {0};
    size_t len = name ? strlen(name) : 0;
    if (wire_check_name((const unsigned char *)name, len, &why) != 0)
        return wire_abort(buf, start, "%s: %s %s", fl_wire_type_name(type), what, why.message);
    if (put_u8(buf, (unsigned)len) != 0 || wire_append(buf, name, len) != 0)
        return refuse(buf, start, type, "out of memory");
    return 0;
}

/* dtype u8, rank u8, rank dims as i32, data length u32, then the elements as
 * little-endian words: the host order of the machines people train on, so
 * receiving a tensor there is one memcpy. */
static int put_tensor_head(fl_wire_buf *buf, long start, fl_wire_type type, const fl_tensor *t, size_t *bytes)
{
    fl_status why = {0};
    int64_t count;
    if (!t || !t->data)
        return refuse(buf, start, type, "no tensor given");
    if (t->dtype != FL_FLOAT32 && t->dtype != FL_INT32)
        return refuse(buf, start, type, "dtype is neither float32 nor int32");
    if (wire_check_shape(t->shape.rank, t->shape.dims, &count, &why) != 0)
        return refuse(buf, start, type, why.message);
    if (put_u8(buf, (unsigned)t->dtype) != 0 || put_u8(buf, (unsigned)t->shape.rank) != 0)
        return refuse(buf, start, type, "out of memory");
    for (int i = 0; i < t->shape.rank; i++)
        if (put_u32(buf, (uint32_t)t->shape.dims[i]) != 0)
            return refuse(buf, start, type, "out of memory");
    *bytes = (size_t)count * 4;
    if (put_u32(buf, (uint32_t)*bytes) != 0)
        return refuse(buf, start, type, "out of memory");
    return 0;
}

static int put_tensor(fl_wire_buf *buf, long start, fl_wire_type type, const fl_tensor *t)
{
    size_t bytes;
    unsigned char *out = NULL;
    if (put_tensor_head(buf, start, type, t, &bytes) != 0)
        return -1;
    if (!(out = wire_extend(buf, bytes)))
        return refuse(buf, start, type, "out of memory");
    const unsigned char *src = t->data;
    if (wire_host_is_little_endian()) {
        memcpy(out, src, bytes);
        return 0;
    }
    for (size_t i = 0; i < bytes; i += 4) {
        uint32_t word;
        memcpy(&word, src + i, 4);
        for (int k = 0; k < 4; k++)
            out[i + k] = (unsigned char)(word >> (8 * k));
    }
    return 0;
}

/* ---- the frames ---- */

static int put_hello_frame(fl_wire_buf *buf, fl_wire_type type, uint32_t id, const char *job,
                           uint32_t task_index)
{
    long start = wire_begin(buf, type, id);
    if (start < 0)
        return -1;
    if (task_index > FL_WIRE_MAX_TASK)
        return wire_abort(buf, start, "%s: task index %u over the %u limit",
                          fl_wire_type_name(type), (unsigned)task_index, FL_WIRE_MAX_TASK);
    if (put_u8(buf, FL_WIRE_VERSION) != 0)
        return refuse(buf, start, type, "out of memory");
    if (put_name(buf, start, type, "job name", job) != 0)
        return -1;
    if (put_u32(buf, task_index) != 0)
        return refuse(buf, start, type, "out of memory");
    return wire_end(buf, start);
}

int fl_wire_put_hello(fl_wire_buf *buf, uint32_t id, const char *job, uint32_t task_index)
{
    return put_hello_frame(buf, FL_WIRE_HELLO, id, job, task_index);
}

int fl_wire_put_hello_ok(fl_wire_buf *buf, uint32_t id, const char *job, uint32_t task_index)
{
    return put_hello_frame(buf, FL_WIRE_HELLO_OK, id, job, task_index);
}

int fl_wire_put_init_done(fl_wire_buf *buf, uint32_t id, bool has_value)
{
    long start = wire_begin(buf, FL_WIRE_INIT_DONE, id);
    if (start < 0)
        return -1;
    if (put_u8(buf, has_value ? 1 : 0) != 0)
        return refuse(buf, start, FL_WIRE_INIT_DONE, "out of memory");
    return wire_end(buf, start);
}

/* IS_INITIALIZED: one name. */
int fl_wire_put_is_initialized(fl_wire_buf *buf, uint32_t id, const char *name)
{
    long start = wire_begin(buf, FL_WIRE_IS_INITIALIZED, id);
    if (start < 0)
        return -1;
    if (put_name(buf, start, FL_WIRE_IS_INITIALIZED, "name", name) != 0)
        return -1;
    return wire_end(buf, start);
}

static int put_empty(fl_wire_buf *buf, fl_wire_type type, uint32_t id)
{
    long start = wire_begin(buf, type, id);
    if (start < 0)
        return -1;
    return wire_end(buf, start);
}

int fl_wire_put_goodbye(fl_wire_buf *buf, uint32_t id)
{
    return put_empty(buf, FL_WIRE_GOODBYE, id);
}

int fl_wire_put_ok(fl_wire_buf *buf, uint32_t id)
{
    return put_empty(buf, FL_WIRE_OK, id);
}

/* u16 code, u16 length, the text. */
int fl_wire_put_error(fl_wire_buf *buf, uint32_t id, fl_wire_error_code code, const char *message)
{
    long start = wire_begin(buf, FL_WIRE_ERROR, id);
    if (start < 0)
        return -1;
    if ((int)code <= 0 || !fl_wire_error_code_known((unsigned)code))
        return wire_abort(buf, start, "ERROR: unknown error code %d", (int)code);
    size_t len = message ? strlen(message) : 0;
    if (len > FL_WIRE_MAX_MESSAGE)
        len = FL_WIRE_MAX_MESSAGE;
    unsigned char *out = wire_extend(buf, 4 + len);
    if (!out)
        return refuse(buf, start, FL_WIRE_ERROR, "out of memory");
    wire_store_u16(out, (uint16_t)code);
    wire_store_u16(out + 2, (uint16_t)len);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)message[i];
        out[4 + i] = (c >= ' ' && c <= '~') ? c : '?';
    }
    return wire_end(buf, start);
}

/* ---- the field writers, lent to wire_partition.c and partition_def.c ---- */

int wire_put_u8(fl_wire_buf *buf, unsigned v) { return put_u8(buf, v); }
int wire_put_u32(fl_wire_buf *buf, uint32_t v) { return put_u32(buf, v); }

int wire_put_u64(fl_wire_buf *buf, uint64_t v)
{
    return put_u32(buf, (uint32_t)(v >> 32)) != 0 || put_u32(buf, (uint32_t)v) != 0 ? -1 : 0;
}

int wire_put_name(fl_wire_buf *buf, long start, fl_wire_type type, const char *what, const char *name)
{
    return put_name(buf, start, type, what, name);
}

int wire_put_tensor(fl_wire_buf *buf, long start, fl_wire_type type, const fl_tensor *t)
{
    return put_tensor(buf, start, type, t);
}

int wire_put_tensor_head(fl_wire_buf *buf, long start, fl_wire_type type, const fl_tensor *t, size_t *bytes)
{
    if (!wire_host_is_little_endian())
        return refuse(buf, start, type, "this host's byte order is not the wire's; copy the value");
    return put_tensor_head(buf, start, type, t, bytes);
}
