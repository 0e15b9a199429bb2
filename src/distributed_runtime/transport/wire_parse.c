/* wire_parse.c: a frame's payload into a plain struct, trusting nothing.
 * A cursor (wire_cursor.c) walks the payload; every read first checks that its bytes
 * are there, and every count, dim, dtype and name is checked before it is used. Tensor
 * data is not copied: the struct points into the frame. Names are copied, they are short. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire_internal.h"

void fl_wire_tensor_read(const fl_wire_tensor *t, void *dst)
{
    unsigned char *out = dst;
    if (wire_host_is_little_endian()) {
        memcpy(out, t->data, t->bytes);
        return;
    }
    for (size_t i = 0; i < t->bytes; i += 4) {
        const unsigned char *w = t->data + i;
        uint32_t word = w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 | (uint32_t)w[3] << 24;
        memcpy(out + i, &word, 4);
    }
}

/* ---- the frames ---- */

int fl_wire_parse_hello(const fl_wire_frame *f, fl_wire_hello *out, fl_status *st)
{
    wire_cursor c;
    bool type_ok = f->type == FL_WIRE_HELLO || f->type == FL_WIRE_HELLO_OK;
    unsigned version;
    if (wire_cursor_open(&c, f, type_ok, "HELLO", st) != 0)
        return -1;
    if (wire_get_u8(&c, "version", &version) != 0)
        return -1;
    if (version != FL_WIRE_VERSION)
        return wire_fail(&c, "protocol version %u not supported (this build speaks version %u)",
                    version, FL_WIRE_VERSION);
    out->version = (uint8_t)version;
    if (wire_get_name(&c, "job name", out->job) != 0 || wire_get_u32(&c, "task index", &out->task_index) != 0)
        return -1;
    if (out->task_index > FL_WIRE_MAX_TASK)
        return wire_fail(&c, "task index %u over the %u limit", (unsigned)out->task_index,
                    FL_WIRE_MAX_TASK);
    return wire_finish(&c);
}

int fl_wire_parse_name(const fl_wire_frame *f, char name[FL_WIRE_MAX_NAME + 1], fl_status *st)
{
    wire_cursor c;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_IS_INITIALIZED, "IS_INITIALIZED", st) != 0)
        return -1;
    if (wire_get_name(&c, "name", name) != 0)
        return -1;
    return wire_finish(&c);
}

int fl_wire_parse_init_done(const fl_wire_frame *f, bool *has_value, fl_status *st)
{
    wire_cursor c;
    unsigned flag;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_INIT_DONE, "INIT_DONE", st) != 0)
        return -1;
    if (wire_get_u8(&c, "flag", &flag) != 0)
        return -1;
    if (flag > 1)
        return wire_fail(&c, "flag %u must be 0 (no value) or 1 (has a value)", flag);
    *has_value = flag == 1;
    return wire_finish(&c);
}

int fl_wire_parse_error(const fl_wire_frame *f, fl_wire_error *out, fl_status *st)
{
    wire_cursor c;
    const unsigned char *b, *text;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_ERROR, "ERROR", st) != 0)
        return -1;
    if (wire_take(&c, 4, "code and length", &b) != 0)
        return -1;
    unsigned code = wire_load_u16(b), len = wire_load_u16(b + 2);
    if (!fl_wire_error_code_known(code))
        return wire_fail(&c, "unknown error code %u", code);
    if (len > FL_WIRE_MAX_MESSAGE)
        return wire_fail(&c, "message of %u bytes over the %u limit", len, FL_WIRE_MAX_MESSAGE);
    if (wire_take(&c, len, "message", &text) != 0)
        return -1;
    for (unsigned i = 0; i < len; i++)
        if (text[i] < ' ' || text[i] > '~')
            return wire_fail(&c, "message is not printable (byte 0x%02x at offset %u)", text[i], i);
    out->code = (fl_wire_error_code)code;
    memcpy(out->message, text, len);
    out->message[len] = '\0';
    return wire_finish(&c);
}

int fl_wire_parse_empty(const fl_wire_frame *f, fl_status *st)
{
    wire_cursor c;
    bool type_ok = f->type == FL_WIRE_GOODBYE || f->type == FL_WIRE_OK;
    if (wire_cursor_open(&c, f, type_ok, "empty-frame", st) != 0)
        return -1;
    return wire_finish(&c);
}

int fl_wire_parse(const fl_wire_frame *f, fl_wire_message *out, fl_status *st)
{
    memset(out, 0, sizeof *out);
    out->type = f->type;
    out->request_id = f->request_id;
    switch (f->type) {
    case FL_WIRE_HELLO:
    case FL_WIRE_HELLO_OK: return fl_wire_parse_hello(f, &out->u.hello, st);
    case FL_WIRE_IS_INITIALIZED: return fl_wire_parse_name(f, out->u.name, st);
    case FL_WIRE_INIT_DONE: return fl_wire_parse_init_done(f, &out->u.has_value, st);
    case FL_WIRE_ERROR: return fl_wire_parse_error(f, &out->u.error, st);
    case FL_WIRE_GOODBYE:
    case FL_WIRE_OK: return fl_wire_parse_empty(f, st);
    case FL_WIRE_CHALLENGE:
    case FL_WIRE_PROOF:
    case FL_WIRE_SERVER_PROOF: return fl_wire_parse_handshake(f, &out->u.handshake, st);
    default: break;
    }
    if (wire_is_partition_frame(f->type))
        return wire_parse_partition_frame(f, out, st);
    fl_status_set(st, FL_DATA_LOSS, "unknown frame type %d", (int)f->type);
    return -1;
}

