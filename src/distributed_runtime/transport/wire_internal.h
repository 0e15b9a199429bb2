/* wire_internal.h: what the wire protocol's three files share and nobody else needs.
 * Big-endian integers byte by byte (so the host's byte order never reaches the wire),
 * opening and closing a frame in a buffer, and the rule for which bytes a name may hold. */
#ifndef FLOWLAB_DIST_WIRE_INTERNAL_H
#define FLOWLAB_DIST_WIRE_INTERNAL_H

#include <string.h>

#include "wire.h"

/* Bytes a tensor's fixed fields take: dtype, rank, four dims at most, data length. */
#define WIRE_TENSOR_HEAD_MAX (1u + 1u + 4u * FL_MAX_RANK + 4u)

static inline void wire_store_u16(unsigned char *out, uint16_t v)
{
    out[0] = (unsigned char)(v >> 8);
    out[1] = (unsigned char)v;
}

static inline void wire_store_u32(unsigned char *out, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(v >> (24 - 8 * i));
}

static inline uint16_t wire_load_u16(const unsigned char *in)
{
    return (uint16_t)((in[0] << 8) | in[1]);
}

static inline uint32_t wire_load_u32(const unsigned char *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 8) | in[i];
    return v;
}

/* '!'..'~': printable and without spaces, so a name in a log line has clear ends. */
static inline bool wire_name_byte_ok(unsigned char c)
{
    return c > ' ' && c <= '~';
}

/* wire_check.c: the checks encoders and parsers share, so both refuse the same things
 * with the same words. Each returns 0, or -1 with a message that has no frame prefix:
 * "is empty" (the caller says whose name), "shape [3,-1] has a non-positive dimension". */
int wire_check_name(const unsigned char *bytes, size_t len, fl_status *st);
int wire_check_shape(int rank, const int *dims, int64_t *count, fl_status *st);
void wire_format_dims(int rank, const int *dims, char *out, size_t len); /* "[3,-1]" */

/* wire_frame.c: frames are built in place. wire_begin writes a header with a zero
 * length and returns the frame's offset (or -1 when memory runs out); wire_append adds
 * payload bytes; wire_end fills in the payload length, or wire_abort drops the frame. */
long wire_begin(fl_wire_buf *buf, fl_wire_type type, uint32_t id);
int wire_append(fl_wire_buf *buf, const void *bytes, size_t len);
unsigned char *wire_extend(fl_wire_buf *buf, size_t len); /* room for len bytes, or NULL */
int wire_end(fl_wire_buf *buf, long start);
/* wire_end for a frame whose last `following` bytes the caller sends itself. */
int wire_end_before(fl_wire_buf *buf, long start, size_t following);
int wire_abort(fl_wire_buf *buf, long start, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* wire_cursor.c: a cursor that walks a payload, checking that each field's
 * bytes are there before it reads them; every failure says "TYPE: why". */
typedef struct {
    const unsigned char *p;
    size_t left;              /* in memory at p */
    fl_wire_type type;
    fl_status *st;            /* DATA_LOSS, with "TYPE: " before the message */
} wire_cursor;
int wire_cursor_open(wire_cursor *c, const fl_wire_frame *f, bool type_ok, const char *parser, fl_status *st);
int wire_fail(wire_cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int wire_take(wire_cursor *c, size_t n, const char *what, const unsigned char **out);
int wire_get_u8(wire_cursor *c, const char *what, unsigned *v);
int wire_get_u32(wire_cursor *c, const char *what, uint32_t *v);
int wire_get_u64(wire_cursor *c, const char *what, uint64_t *v);
int wire_get_name(wire_cursor *c, const char *what, char out[FL_WIRE_MAX_NAME + 1]);
int wire_get_pooled_name(wire_cursor *c, const char *what, char **pool, const char **out);
int wire_get_tensor(wire_cursor *c, fl_wire_tensor *t);
int wire_finish(wire_cursor *c); /* -1 when bytes are left over */

/* wire_encode.c: the field writers (big-endian; a name u8 length + bytes;
 * a tensor's head and little-endian data). On failure the frame from
 * `start` is dropped and buf->error says why. */
int wire_put_u8(fl_wire_buf *buf, unsigned v);
int wire_put_u32(fl_wire_buf *buf, uint32_t v);
int wire_put_u64(fl_wire_buf *buf, uint64_t v);
int wire_put_name(fl_wire_buf *buf, long start, fl_wire_type type, const char *what, const char *name);
int wire_put_tensor(fl_wire_buf *buf, long start, fl_wire_type type, const fl_tensor *t);
/* All but the data, whose length *bytes the frame's end counts (wire_end_before). */
int wire_put_tensor_head(fl_wire_buf *buf, long start, fl_wire_type type, const fl_tensor *t, size_t *bytes);

/* wire_partition.c: the frames of in-graph replication across tasks. */
bool wire_is_partition_frame(fl_wire_type type);
int wire_parse_partition_frame(const fl_wire_frame *f, fl_wire_message *out, fl_status *st);

/* wire_step_trace.c: PARTITION_DONE's trace field, before its values (a
 * value's data may be the part of the payload received apart, last). */
int wire_put_step_trace(fl_wire_buf *buf, long start, const fl_wire_step_trace *trace);
int wire_get_step_trace(wire_cursor *c, fl_wire_step_trace *out);

/* Tensor elements travel little-endian: on a little-endian host (x86, most
 * ARM) a block of them is a plain memcpy, which matters for 13 MB tensors. */
static inline bool wire_host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

#endif
