/* wire_frame.c: the wire protocol's frames as a whole, not their bodies.
 * What each type carries (its body's message, how big, whether a tail may follow),
 * the 20-byte header (written, and checked as its bytes arrive), cutting frames out
 * of a byte stream. */
#include <stdio.h>
#include <string.h>

#include "wire_internal.h"

static const unsigned char MAGIC[4] = {'F', 'L', 'W', 'P'};

typedef struct {
    const char *name;                      /* NULL: the number is no type */
    const ProtobufCMessageDescriptor *body; /* NULL: an empty body, or REGISTER_PARTITION's own */
    uint32_t max_body;                     /* refused from the header above this */
    bool tail;                             /* SEND_TENSOR's elements follow the body */
    fl_wire_type reply;                    /* 0: no request */
} type_info;

/* Largest bodies, in protobuf's bytes: a name is a tag, a 2-byte length and
 * 255 bytes; a u32 a tag and up to 5 bytes; a u64 up to 10; a nonce or
 * proof a tag, a length and 32 bytes. A frame that carries no tensor is
 * small, so a 60 MB IS_INITIALIZED is refused before it is buffered. */
#define NAME_FIELD (1u + 2u + FL_WIRE_MAX_NAME)
#define U32_FIELD (1u + 5u)
#define U64_FIELD (1u + 10u)
#define BLOCK_FIELD (1u + 1u + FL_WIRE_PROOF_BYTES)

static const type_info TYPES[FL_WIRE_TYPE_COUNT] = {
    [FL_WIRE_HELLO] = {"HELLO", &flowlab__hello__descriptor, NAME_FIELD + U32_FIELD, false, FL_WIRE_HELLO_OK},
    [FL_WIRE_HELLO_OK] = {"HELLO_OK", &flowlab__hello__descriptor, NAME_FIELD + U32_FIELD, false, 0},
    [FL_WIRE_INIT_DONE] = {"INIT_DONE", &flowlab__is_initialized_response__descriptor, 2, false, 0},
    [FL_WIRE_GOODBYE] = {"GOODBYE", NULL, 0, false, FL_WIRE_OK},
    [FL_WIRE_OK] = {"OK", NULL, 0, false, 0},
    [FL_WIRE_ERROR] = {"ERROR", &flowlab__error__descriptor, U32_FIELD + 1 + 2 + FL_WIRE_MAX_MESSAGE, false, 0},
    [FL_WIRE_IS_INITIALIZED] = {"IS_INITIALIZED", &flowlab__is_initialized_request__descriptor, NAME_FIELD, false,
                                FL_WIRE_INIT_DONE},
    [FL_WIRE_REGISTER_PARTITION] = {"REGISTER_PARTITION", NULL, FL_WIRE_MAX_PAYLOAD, false,
                                    FL_WIRE_PARTITION_REGISTERED},
    [FL_WIRE_PARTITION_REGISTERED] = {"PARTITION_REGISTERED", &flowlab__register_graph_response__descriptor,
                                      U64_FIELD, false, 0},
    [FL_WIRE_RUN_PARTITION] = {"RUN_PARTITION", &flowlab__run_graph_request__descriptor, FL_WIRE_MAX_PAYLOAD, false,
                               FL_WIRE_PARTITION_DONE},
    [FL_WIRE_PARTITION_DONE] = {"PARTITION_DONE", &flowlab__run_graph_response__descriptor, FL_WIRE_MAX_PAYLOAD,
                                false, 0},
    [FL_WIRE_SEND_TENSOR] = {"SEND_TENSOR", &flowlab__send_tensor_request__descriptor, 4096, true, FL_WIRE_OK},
    [FL_WIRE_ABORT_STEP] = {"ABORT_STEP", &flowlab__abort_step_request__descriptor, U64_FIELD, false, FL_WIRE_OK},
    [FL_WIRE_DEREGISTER_PARTITION] = {"DEREGISTER_PARTITION", &flowlab__deregister_graph_request__descriptor,
                                      U64_FIELD, false, FL_WIRE_OK},
    [FL_WIRE_CHALLENGE] = {"CHALLENGE", &flowlab__challenge__descriptor, BLOCK_FIELD, false, 0},
    [FL_WIRE_PROOF] = {"PROOF", &flowlab__proof__descriptor, 2 * BLOCK_FIELD, false, FL_WIRE_SERVER_PROOF},
    [FL_WIRE_SERVER_PROOF] = {"SERVER_PROOF", &flowlab__server_proof__descriptor, BLOCK_FIELD, false, 0},
};

/* A number with no name is no type: the numbers between two groups of types too. */
static bool type_known(int type)
{
    return type > 0 && type < FL_WIRE_TYPE_COUNT && TYPES[type].name != NULL;
}

const char *fl_wire_type_name(int type)
{
    return type_known(type) ? TYPES[type].name : "?";
}

/* PROOF's reply is SERVER_PROOF, then HELLO_OK. */
int fl_wire_reply_type(int request_type)
{
    return type_known(request_type) ? (int)TYPES[request_type].reply : 0;
}

const ProtobufCMessageDescriptor *wire_body_of(fl_wire_type type)
{
    return type_known((int)type) ? TYPES[type].body : NULL;
}

uint32_t wire_max_body(fl_wire_type type)
{
    return type_known((int)type) ? TYPES[type].max_body : 0;
}

/* ---- writing and reading the header ---- */

void wire_write_header(unsigned char *h, fl_wire_type type, uint32_t id, size_t body, size_t tail_len)
{
    memcpy(h, MAGIC, 4);
    h[4] = FL_WIRE_VERSION;
    h[5] = (unsigned char)type;
    h[6] = h[7] = 0;
    wire_store_u32(h + 8, id);
    wire_store_u32(h + 12, (uint32_t)body);
    wire_store_u32(h + 16, (uint32_t)tail_len);
}

/* ---- decoding ---- */

/* The magic as hex and as text, of however many bytes have arrived (1 to 4). */
static void bad_magic(const unsigned char *b, size_t n, fl_status *st)
{
    char hex[9] = "", text[5] = "";
    for (size_t i = 0; i < n; i++) {
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
        text[i] = (b[i] >= ' ' && b[i] <= '~') ? (char)b[i] : '.';
    }
    fl_status_set(st, FL_DATA_LOSS, "bad magic 0x%s (\"%s\"), expected 0x464c5750 (\"FLWP\")", hex, text);
}

/* The lengths, once all 20 bytes are in: each within its type's limits. */
static int check_lengths(const unsigned char *b, fl_status *st)
{
    const type_info *t = &TYPES[b[5]];
    uint32_t body = wire_load_u32(b + 12), tail = wire_load_u32(b + 16);
    if (body > t->max_body)
        return fl_status_set(st, FL_DATA_LOSS, "%s: body length %u over the %u limit for this frame type", t->name,
                             (unsigned)body, (unsigned)t->max_body);
    if (tail > 0 && !t->tail)
        return fl_status_set(st, FL_DATA_LOSS, "%s: tail length %u; only SEND_TENSOR has a tail", t->name,
                             (unsigned)tail);
    if (tail > FL_WIRE_MAX_PAYLOAD - body)
        return fl_status_set(st, FL_DATA_LOSS, "%s: body and tail of %u + %u bytes, over the %u limit", t->name,
                             (unsigned)body, (unsigned)tail, FL_WIRE_MAX_PAYLOAD);
    return 0;
}

/* Checks the header fields among the first len bytes; 0 when all of those are valid. */
static int check_header(const unsigned char *b, size_t len, fl_status *st)
{
    size_t n = len < 4 ? len : 4;
    if (memcmp(b, MAGIC, n) != 0) {
        bad_magic(b, n, st);
        return -1;
    }
    if (len > 4 && b[4] != FL_WIRE_VERSION)
        return fl_status_set(st, FL_DATA_LOSS, "version %u not supported (this build speaks version %u)", b[4],
                             FL_WIRE_VERSION);
    if (len > 5 && !type_known(b[5]))
        return fl_status_set(st, FL_DATA_LOSS, "unknown frame type %u", b[5]);
    if (len >= 8 && (b[6] | b[7]) != 0)
        return fl_status_set(st, FL_DATA_LOSS, "%s: flags 0x%02x%02x not supported (must be 0)",
                             fl_wire_type_name(b[5]), b[6], b[7]);
    return len < FL_WIRE_HEADER_BYTES ? 0 : check_lengths(b, st);
}

fl_wire_frame fl_wire_frame_announced(const void *header)
{
    const unsigned char *b = header;
    uint32_t body = wire_load_u32(b + 12), tail = wire_load_u32(b + 16);
    return (fl_wire_frame){.type = (fl_wire_type)b[5], .request_id = wire_load_u32(b + 8), .body_len = body,
                           .tail_len = tail, .frame_len = FL_WIRE_HEADER_BYTES + (size_t)body + tail};
}

fl_wire_status fl_wire_decode(const void *bytes, size_t len, fl_wire_frame *frame, fl_status *st)
{
    const unsigned char *b = bytes;
    if (len == 0)
        return FL_WIRE_NEED_MORE;
    if (check_header(b, len, st) != 0)
        return FL_WIRE_BAD;
    if (len < FL_WIRE_HEADER_BYTES)
        return FL_WIRE_NEED_MORE;
    fl_wire_frame f = fl_wire_frame_announced(b);
    if (len < f.frame_len)
        return FL_WIRE_NEED_MORE;
    f.body = b + FL_WIRE_HEADER_BYTES;
    f.tail = f.body + f.body_len;
    *frame = f;
    return FL_WIRE_FRAME;
}

int fl_wire_check_eof(const void *bytes, size_t len, fl_status *st)
{
    if (len == 0)
        return 0;
    if (len < FL_WIRE_HEADER_BYTES)
        return fl_status_set(st, FL_DATA_LOSS, "connection closed inside a frame header (%zu of %u bytes)", len,
                             FL_WIRE_HEADER_BYTES);
    fl_wire_frame f = fl_wire_frame_announced(bytes);
    return fl_status_set(st, FL_DATA_LOSS, "connection closed inside a %s frame (%zu of %zu bytes)",
                         fl_wire_type_name(f.type), len, f.frame_len);
}

bool fl_wire_looks_like_tls(const void *bytes, size_t len)
{
    const unsigned char *b = bytes;
    if (len == 0)
        return false;
    if (len == 1) /* the rest is late: a handshake or an alert is all a peer sends first */
        return b[0] == 0x16 || b[0] == 0x15;
    return b[0] >= 0x14 && b[0] <= 0x17 && b[1] == 0x03; /* a record's type, then TLS's major version */
}
