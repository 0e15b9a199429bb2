/* wire_frame.c: the wire protocol's frames as a whole, not their payloads.
 * The growable buffer frames are built in, the 16-byte header (written and checked),
 * cutting frames out of a byte stream, and which frame may come when on a connection. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_internal.h"

static const unsigned char MAGIC[4] = {'F', 'L', 'W', 'P'};

static const char *const TYPE_NAMES[FL_WIRE_TYPE_COUNT] = {
    [FL_WIRE_HELLO] = "HELLO", [FL_WIRE_HELLO_OK] = "HELLO_OK", [FL_WIRE_INIT_DONE] = "INIT_DONE",
    [FL_WIRE_GOODBYE] = "GOODBYE", [FL_WIRE_OK] = "OK", [FL_WIRE_ERROR] = "ERROR",
    [FL_WIRE_IS_INITIALIZED] = "IS_INITIALIZED", "REGISTER_PARTITION", "PARTITION_REGISTERED", "RUN_PARTITION", "PARTITION_DONE", "SEND_TENSOR",
    "ABORT_STEP", "DEREGISTER_PARTITION",
    [FL_WIRE_CHALLENGE] = "CHALLENGE", [FL_WIRE_PROOF] = "PROOF", [FL_WIRE_SERVER_PROOF] = "SERVER_PROOF",
};

/* The most payload each type can need: frames that carry no tensor are small, so a
 * 60 MB IS_INITIALIZED is refused from its header instead of being buffered first. */
static const uint32_t MAX_PAYLOAD[FL_WIRE_TYPE_COUNT] = {
    [FL_WIRE_HELLO] = 1 + 1 + FL_WIRE_MAX_NAME + 4,
    [FL_WIRE_HELLO_OK] = 1 + 1 + FL_WIRE_MAX_NAME + 4,
    [FL_WIRE_INIT_DONE] = 1,
    [FL_WIRE_GOODBYE] = 0,
    [FL_WIRE_OK] = 0,
    [FL_WIRE_ERROR] = 2 + 2 + FL_WIRE_MAX_MESSAGE,
    [FL_WIRE_IS_INITIALIZED] = 1 + FL_WIRE_MAX_NAME,
    [FL_WIRE_REGISTER_PARTITION] = FL_WIRE_MAX_PAYLOAD,
    [FL_WIRE_PARTITION_REGISTERED] = 8,
    [FL_WIRE_RUN_PARTITION] = FL_WIRE_MAX_PAYLOAD,
    [FL_WIRE_PARTITION_DONE] = FL_WIRE_MAX_PAYLOAD,
    [FL_WIRE_SEND_TENSOR] = FL_WIRE_MAX_PAYLOAD,
    [FL_WIRE_ABORT_STEP] = 8,
    [FL_WIRE_DEREGISTER_PARTITION] = 8,
    [FL_WIRE_CHALLENGE] = FL_WIRE_PROOF_BYTES,
    [FL_WIRE_PROOF] = 2 * FL_WIRE_PROOF_BYTES,
    [FL_WIRE_SERVER_PROOF] = FL_WIRE_PROOF_BYTES,
};

/* A number with no name is no type: the numbers between two groups of types too. */
static bool type_known(int type)
{
    return type > 0 && type < FL_WIRE_TYPE_COUNT && TYPE_NAMES[type] != NULL;
}

const char *fl_wire_type_name(int type)
{
    return type_known(type) ? TYPE_NAMES[type] : "?";
}

int fl_wire_reply_type(int request_type)
{
    switch (request_type) {
    case FL_WIRE_HELLO: return FL_WIRE_HELLO_OK;
    case FL_WIRE_GOODBYE: return FL_WIRE_OK;
    case FL_WIRE_IS_INITIALIZED: return FL_WIRE_INIT_DONE;
    case FL_WIRE_REGISTER_PARTITION: return FL_WIRE_PARTITION_REGISTERED;
    case FL_WIRE_RUN_PARTITION: return FL_WIRE_PARTITION_DONE;
    case FL_WIRE_SEND_TENSOR:
    case FL_WIRE_ABORT_STEP:
    case FL_WIRE_DEREGISTER_PARTITION: return FL_WIRE_OK;
    case FL_WIRE_PROOF: return FL_WIRE_SERVER_PROOF; /* then HELLO_OK */
    default: return 0;
    }
}

/* ---- the buffer ---- */

void fl_wire_buf_free(fl_wire_buf *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

void fl_wire_buf_consume(fl_wire_buf *buf, size_t bytes)
{
    if (bytes >= buf->len) {
        buf->len = 0;
        return;
    }
    memmove(buf->data, buf->data + bytes, buf->len - bytes);
    buf->len -= bytes;
}

unsigned char *wire_extend(fl_wire_buf *buf, size_t len)
{
    if (len > buf->cap - buf->len) {
        size_t cap = buf->cap ? buf->cap : 256;
        while (cap - buf->len < len)
            cap *= 2; /* frames are at most 64 MiB, far from overflowing size_t */
        unsigned char *grown = realloc(buf->data, cap);
        if (!grown)
            return NULL;
        buf->data = grown;
        buf->cap = cap;
    }
    unsigned char *out = buf->data + buf->len;
    buf->len += len;
    return out;
}

int wire_append(fl_wire_buf *buf, const void *bytes, size_t len)
{
    unsigned char *out = wire_extend(buf, len);
    if (!out)
        return -1;
    if (len)
        memcpy(out, bytes, len);
    return 0;
}

long wire_begin(fl_wire_buf *buf, fl_wire_type type, uint32_t id)
{
    size_t start = buf->len;
    unsigned char *h = wire_extend(buf, FL_WIRE_HEADER_BYTES);
    if (!h) {
        snprintf(buf->error, sizeof buf->error, "%s: out of memory", fl_wire_type_name(type));
        return -1;
    }
    memcpy(h, MAGIC, 4);
    h[4] = FL_WIRE_VERSION;
    h[5] = (unsigned char)type;
    wire_store_u16(h + 6, 0);
    wire_store_u32(h + 8, id);
    wire_store_u32(h + 12, 0);
    return (long)start;
}

int wire_abort(fl_wire_buf *buf, long start, const char *fmt, ...)
{
    buf->len = (size_t)start;
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf->error, sizeof buf->error, fmt, args);
    va_end(args);
    return -1;
}

int wire_end(fl_wire_buf *buf, long start) { return wire_end_before(buf, start, 0); }

int wire_end_before(fl_wire_buf *buf, long start, size_t following)
{
    unsigned char *h = buf->data + start;
    size_t payload = buf->len - (size_t)start - FL_WIRE_HEADER_BYTES + following;
    fl_wire_type type = (fl_wire_type)h[5];
    if (payload > MAX_PAYLOAD[type])
        return wire_abort(buf, start, "%s: payload of %zu bytes over the %u limit",
                          fl_wire_type_name(type), payload, (unsigned)MAX_PAYLOAD[type]);
    wire_store_u32(h + 12, (uint32_t)payload);
    return 0;
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

/* Checks the header fields among the first len bytes; 0 when all of those are valid. */
static int check_header(const unsigned char *b, size_t len, fl_status *st)
{
    size_t n = len < 4 ? len : 4;
    if (memcmp(b, MAGIC, n) != 0) {
        bad_magic(b, n, st);
        return -1;
    }
    if (len > 4 && b[4] != FL_WIRE_VERSION) {
        fl_status_set(st, FL_DATA_LOSS, "version %u not supported (this build speaks version %u)", b[4],
                      FL_WIRE_VERSION);
        return -1;
    }
    if (len > 5 && !type_known(b[5])) {
        fl_status_set(st, FL_DATA_LOSS, "unknown frame type %u", b[5]);
        return -1;
    }
    if (len >= 8 && wire_load_u16(b + 6) != 0) {
        fl_status_set(st, FL_DATA_LOSS, "%s: flags 0x%04x not supported (must be 0)",
                      fl_wire_type_name(b[5]), wire_load_u16(b + 6));
        return -1;
    }
    if (len < FL_WIRE_HEADER_BYTES)
        return 0;
    uint32_t payload = wire_load_u32(b + 12);
    if (payload > FL_WIRE_MAX_PAYLOAD) {
        fl_status_set(st, FL_DATA_LOSS, "%s: payload length %u over the %u limit", fl_wire_type_name(b[5]),
                      (unsigned)payload, FL_WIRE_MAX_PAYLOAD);
        return -1;
    }
    if (payload > MAX_PAYLOAD[b[5]]) {
        fl_status_set(st, FL_DATA_LOSS, "%s: payload length %u over the %u limit for this frame type",
                      fl_wire_type_name(b[5]), (unsigned)payload, (unsigned)MAX_PAYLOAD[b[5]]);
        return -1;
    }
    return 0;
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
    uint32_t payload = wire_load_u32(b + 12);
    if (len - FL_WIRE_HEADER_BYTES < payload)
        return FL_WIRE_NEED_MORE;
    frame->type = (fl_wire_type)b[5];
    frame->request_id = wire_load_u32(b + 8);
    frame->payload_len = payload;
    frame->payload = b + FL_WIRE_HEADER_BYTES;
    frame->frame_len = FL_WIRE_HEADER_BYTES + (size_t)payload;
    return FL_WIRE_FRAME;
}

fl_wire_frame fl_wire_frame_announced(const void *header)
{
    const unsigned char *b = header;
    uint32_t payload = wire_load_u32(b + 12);
    return (fl_wire_frame){.type = (fl_wire_type)b[5], .request_id = wire_load_u32(b + 8),
                           .payload_len = payload, .frame_len = FL_WIRE_HEADER_BYTES + (size_t)payload};
}

int fl_wire_check_eof(const void *bytes, size_t len, fl_status *st)
{
    if (len == 0)
        return 0;
    if (len < FL_WIRE_HEADER_BYTES) {
        fl_status_set(st, FL_DATA_LOSS, "connection closed inside a frame header (%zu of %u bytes)", len,
                      FL_WIRE_HEADER_BYTES);
        return -1;
    }
    const unsigned char *b = bytes;
    uint32_t payload = wire_load_u32(b + 12);
    fl_status_set(st, FL_DATA_LOSS, "connection closed inside a %s payload (%zu of %u bytes)",
                  fl_wire_type_name(b[5]), len - FL_WIRE_HEADER_BYTES, (unsigned)payload);
    return -1;
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

/* ---- the order of frames ---- */

void fl_wire_conn_init(fl_wire_conn *conn, fl_wire_role role)
{
    conn->role = role;
    conn->stage = FL_WIRE_AWAIT_HELLO;
}

static bool is_request(fl_wire_type type)
{
    return fl_wire_reply_type(type) != 0;
}

static int server_order(fl_wire_conn *conn, fl_wire_type type, fl_status *st)
{
    const char *name = fl_wire_type_name(type);
    if (conn->stage == FL_WIRE_CLOSED) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s after GOODBYE: the connection is finished", name);
        return -1;
    }
    if (!is_request(type)) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s is a reply; a client sends requests", name);
        return -1;
    }
    if (conn->stage == FL_WIRE_AWAIT_HELLO && type != FL_WIRE_HELLO) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s before HELLO: a connection starts with HELLO", name);
        return -1;
    }
    if ((conn->stage == FL_WIRE_AWAIT_PROOF) != (type == FL_WIRE_PROOF)) {
        fl_status_set(st, FL_FAILED_PRECONDITION,
                      type == FL_WIRE_PROOF ? "PROOF without a CHALLENGE"
                                            : "%s before PROOF: this task asks for the cluster secret's proof",
                      name);
        return -1;
    }
    if (conn->stage == FL_WIRE_READY && type == FL_WIRE_HELLO) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "HELLO twice on one connection");
        return -1;
    }
    conn->stage = type == FL_WIRE_HELLO || type == FL_WIRE_PROOF ? FL_WIRE_READY
                  : type == FL_WIRE_GOODBYE                     ? FL_WIRE_CLOSED
                                                                : conn->stage;
    return 0;
}

static int client_order(fl_wire_conn *conn, fl_wire_type type, fl_status *st)
{
    const char *name = fl_wire_type_name(type);
    if (is_request(type)) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s is a request; a server sends replies", name);
        return -1;
    }
    if (type == FL_WIRE_ERROR)
        return 0; /* the server may refuse anything, HELLO included */
    if (type == FL_WIRE_CHALLENGE || type == FL_WIRE_SERVER_PROOF) {
        if (conn->stage == FL_WIRE_AWAIT_HELLO)
            return 0; /* the handshake comes before HELLO_OK */
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s after HELLO_OK: the handshake is over", name);
        return -1;
    }
    if (conn->stage == FL_WIRE_AWAIT_HELLO && type != FL_WIRE_HELLO_OK) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s before HELLO_OK: the server answers HELLO first", name);
        return -1;
    }
    if (conn->stage == FL_WIRE_READY && type == FL_WIRE_HELLO_OK) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "HELLO_OK twice on one connection");
        return -1;
    }
    conn->stage = FL_WIRE_READY;
    return 0;
}

int fl_wire_check_order(fl_wire_conn *conn, fl_wire_type type, fl_status *st)
{
    if (!type_known((int)type)) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "unknown frame type %d", (int)type);
        return -1;
    }
    if (conn->role == FL_WIRE_SERVER_SIDE)
        return server_order(conn, type, st);
    return client_order(conn, type, st);
}
