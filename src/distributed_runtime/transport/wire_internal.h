/* wire_internal.h: what the wire protocol's files share and nobody else needs:
 * big-endian integers for the header (so the host's byte order never reaches the wire),
 * the arena protobuf-c allocates in, packing and unpacking a body, and the field checks. */
#ifndef FLOWLAB_DIST_WIRE_INTERNAL_H
#define FLOWLAB_DIST_WIRE_INTERNAL_H

#include <string.h>

#include "wire.h"
#include "wire.pb-c.h" /* generated into build/gen/distributed_runtime/ */

static inline void wire_store_u32(unsigned char *out, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(v >> (24 - 8 * i));
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
/* The same for a message's fields, failing with DATA_LOSS "TYPE: why". A
 * tensor's elements are its tensor_content, or (tail not NULL) the tail. */
int wire_refuse(fl_wire_type type, fl_status *st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int wire_check_field(fl_wire_type type, const char *what, const char *name, fl_status *st); /* a name */
int wire_check_count(fl_wire_type type, const char *what, size_t n, fl_status *st);        /* a list's */
int wire_view_tensor(fl_wire_type type, const char *what, const Tensorflow__TensorProto *t, const fl_wire_bytes *tail,
                     fl_wire_tensor *out, fl_status *st);

/* wire_frame.c: the per-type facts (the body's message, its largest size),
 * and a header's 20 bytes written at h. */
const ProtobufCMessageDescriptor *wire_body_of(fl_wire_type type);
uint32_t wire_max_body(fl_wire_type type);
void wire_write_header(unsigned char *h, fl_wire_type type, uint32_t id, size_t body, size_t tail_len);

/* wire_buf.c: room for len bytes at the buffer's end (NULL when memory runs out). */
unsigned char *wire_extend(fl_wire_buf *buf, size_t len);
int wire_append(fl_wire_buf *buf, const void *bytes, size_t len);

/* wire_put.c: a header with room for a body after it (returned; tail_len
 * bytes follow, appended or lent), and msg (NULL: none) checked as its
 * receiver will, then packed after its header. NULL or -1 with buf->error
 * when a frame is too big or memory runs out, the buffer as it was. */
unsigned char *wire_put_header(fl_wire_buf *buf, fl_wire_type type, uint32_t id, size_t body, size_t tail_len);
int wire_put_message(fl_wire_buf *buf, fl_wire_type type, uint32_t id, const ProtobufCMessage *msg, size_t tail_len);

/* wire_pb.c: the arena: chunks kept from frame to frame, the first maybe a
 * caller's block (a small frame's, on the stack: never freed). */
typedef union wire_chunk {
    struct {
        union wire_chunk *next;
        size_t cap, used; /* bytes after this header */
    };
    max_align_t align; /* the bytes after it are aligned for anything */
} wire_chunk;
struct fl_wire_arena {
    ProtobufCAllocator allocator;
    wire_chunk *first, *current, *borrowed;
    size_t budget, charged;
    bool over_budget; /* an allocation was refused for the budget */
};
void wire_arena_on(fl_wire_arena *a, void *block, size_t cap);
void wire_arena_release(fl_wire_arena *a); /* frees what it malloc'd, not a borrowed block */
void wire_arena_reset(fl_wire_arena *a, size_t budget);
void *wire_arena_alloc(fl_wire_arena *a, size_t size); /* NULL past the budget */
/* The body unpacked as its type's message, with no unknown field and in
 * the form this build encodes; NULL and DATA_LOSS "TYPE: why" otherwise. */
ProtobufCMessage *wire_unpack(const fl_wire_frame *f, fl_wire_arena *a, fl_status *st);
/* The first field a message (or one it holds) has that this build does not
 * know: its number, or 0; *where the message's type. */
uint32_t wire_unknown_field(const ProtobufCMessage *m, const char **where);

/* wire_views.c: a body's checks, which the encoders run too: 0, or -1 with
 * DATA_LOSS "TYPE: why". */
int wire_check_body(fl_wire_type type, const ProtobufCMessage *msg, size_t tail_len, fl_status *st);

/* wire_run_views.c: RUN_PARTITION's and PARTITION_DONE's bodies, checked;
 * with an arena (NULL: only checked) their views are filled in it. */
int wire_view_run(const Flowlab__RunGraphRequest *m, fl_wire_arena *a, fl_wire_run_partition *out, fl_status *st);
int wire_view_done(const Flowlab__RunGraphResponse *m, fl_wire_arena *a, fl_wire_partition_done *out, fl_status *st);

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
