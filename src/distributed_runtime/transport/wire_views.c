/* wire_views.c: a frame's unpacked body checked field by field, then read into
 * the plain structs of wire.h (views). The encoders run the same checks on the
 * message they build (wire_check_body), so both sides refuse the same things in
 * the same words. Names point into the arena or are copied; tensor data points
 * into the arena (tensor_content) or the frame's tail. */
#include <stdio.h>
#include <stdlib.h>

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

/* ---- the small frames ---- */

static int check_hello(fl_wire_type type, const Flowlab__Hello *m, fl_status *st)
{
    if (wire_check_field(type, "job name", m->job, st) != 0)
        return -1;
    return m->task > FL_WIRE_MAX_TASK
               ? wire_refuse(type, st, "task index %u over the %u limit", (unsigned)m->task, FL_WIRE_MAX_TASK)
               : 0;
}

static int check_error(const Flowlab__Error *m, fl_status *st)
{
    size_t len = strlen(m->message);
    if (!fl_wire_error_code_known(m->code))
        return wire_refuse(FL_WIRE_ERROR, st, "unknown error code %u", (unsigned)m->code);
    if (len > FL_WIRE_MAX_MESSAGE)
        return wire_refuse(FL_WIRE_ERROR, st, "message of %zu bytes over the %u limit", len, FL_WIRE_MAX_MESSAGE);
    for (size_t i = 0; i < len; i++)
        if (m->message[i] < ' ' || m->message[i] > '~')
            return wire_refuse(FL_WIRE_ERROR, st, "message is not printable (byte 0x%02x at offset %zu)",
                        (unsigned char)m->message[i], i);
    return 0;
}

/* A nonce or a proof: 32 bytes, copied to out (NULL: only checked). */
static int check_block(fl_wire_type type, const char *what, const ProtobufCBinaryData *b, unsigned char *out,
                       fl_status *st)
{
    if (b->len != FL_WIRE_PROOF_BYTES)
        return wire_refuse(type, st, "%s of %zu bytes; it is %u", what, b->len, FL_WIRE_PROOF_BYTES);
    if (out)
        memcpy(out, b->data, FL_WIRE_PROOF_BYTES);
    return 0;
}

static int check_handshake(fl_wire_type type, const ProtobufCMessage *msg, fl_wire_handshake *out, fl_status *st)
{
    unsigned char *proof = out ? out->proof : NULL, *nonce = out ? out->nonce : NULL;
    if (type == FL_WIRE_CHALLENGE)
        return check_block(type, "nonce", &((const Flowlab__Challenge *)msg)->nonce, nonce, st);
    if (type == FL_WIRE_SERVER_PROOF)
        return check_block(type, "proof", &((const Flowlab__ServerProof *)msg)->proof, proof, st);
    const Flowlab__Proof *m = (const Flowlab__Proof *)msg;
    return check_block(type, "proof", &m->proof, proof, st) != 0 ? -1 : check_block(type, "nonce", &m->nonce, nonce, st);
}

static int check_send(const Flowlab__SendTensorRequest *m, const fl_wire_bytes *tail, fl_wire_send_tensor *out,
                      fl_status *st)
{
    fl_wire_send_tensor scratch;
    if (!out)
        out = &scratch;
    if (wire_check_field(FL_WIRE_SEND_TENSOR, "key", m->key, st) != 0 ||
        wire_view_tensor(FL_WIRE_SEND_TENSOR, "value", m->head, tail, &out->value, st) != 0)
        return -1;
    out->step_id = m->step_id;
    snprintf(out->key, sizeof out->key, "%s", m->key);
    return 0;
}

/* ---- any body, by its type ---- */

static uint64_t number_of(fl_wire_type type, const ProtobufCMessage *msg)
{
    if (type == FL_WIRE_ABORT_STEP)
        return ((const Flowlab__AbortStepRequest *)msg)->step_id;
    if (type == FL_WIRE_DEREGISTER_PARTITION)
        return ((const Flowlab__DeregisterGraphRequest *)msg)->graph_handle;
    return ((const Flowlab__RegisterGraphResponse *)msg)->graph_handle;
}

/* Checks msg and, with a view (out), fills it; `a` holds what the views of
 * the partition frames need (NULL: they are only checked). */
static int view_body(fl_wire_type type, const ProtobufCMessage *msg, const fl_wire_bytes *tail, fl_wire_arena *a,
                     fl_wire_message *out, fl_status *st)
{
    switch (type) {
    case FL_WIRE_HELLO:
    case FL_WIRE_HELLO_OK: {
        const Flowlab__Hello *m = (const Flowlab__Hello *)msg;
        if (check_hello(type, m, st) != 0)
            return -1;
        if (out) {
            snprintf(out->u.hello.job, sizeof out->u.hello.job, "%s", m->job);
            out->u.hello.task_index = m->task;
        }
        return 0;
    }
    case FL_WIRE_IS_INITIALIZED: {
        const char *name = ((const Flowlab__IsInitializedRequest *)msg)->name;
        if (wire_check_field(type, "name", name, st) != 0)
            return -1;
        if (out)
            snprintf(out->u.name, sizeof out->u.name, "%s", name);
        return 0;
    }
    case FL_WIRE_INIT_DONE:
        if (out)
            out->u.has_value = ((const Flowlab__IsInitializedResponse *)msg)->has_value;
        return 0;
    case FL_WIRE_ERROR: {
        const Flowlab__Error *m = (const Flowlab__Error *)msg;
        if (check_error(m, st) != 0)
            return -1;
        if (out) {
            out->u.error.code = (fl_wire_error_code)m->code;
            snprintf(out->u.error.message, sizeof out->u.error.message, "%s", m->message);
        }
        return 0;
    }
    case FL_WIRE_CHALLENGE:
    case FL_WIRE_PROOF:
    case FL_WIRE_SERVER_PROOF: return check_handshake(type, msg, out ? &out->u.handshake : NULL, st);
    case FL_WIRE_SEND_TENSOR:
        return check_send((const Flowlab__SendTensorRequest *)msg, tail, out ? &out->u.send : NULL, st);
    case FL_WIRE_RUN_PARTITION:
        return wire_view_run((const Flowlab__RunGraphRequest *)msg, a, out ? &out->u.run : NULL, st);
    case FL_WIRE_PARTITION_DONE:
        return wire_view_done((const Flowlab__RunGraphResponse *)msg, a, out ? &out->u.done : NULL, st);
    default: break; /* one number: a handle or a step, any value */
    }
    if (out)
        out->u.number = number_of(type, msg);
    return 0;
}

int wire_check_body(fl_wire_type type, const ProtobufCMessage *msg, size_t tail_len, fl_status *st)
{
    fl_wire_bytes tail = {NULL, tail_len};
    return view_body(type, msg, type == FL_WIRE_SEND_TENSOR ? &tail : NULL, NULL, NULL, st);
}

/* The frames without a message: GOODBYE and OK (empty), REGISTER_PARTITION
 * (partition_def.c's). */
static int parse_bare(const fl_wire_frame *f, fl_wire_message *out, fl_status *st)
{
    if (f->type != FL_WIRE_REGISTER_PARTITION)
        return f->body_len == 0 ? 0 : wire_refuse(f->type, st, "a body of %u bytes; it has none", f->body_len);
    if (f->body_len == 0)
        return wire_refuse(f->type, st, "the body is empty");
    out->u.body = (fl_wire_bytes){f->body, f->body_len};
    return 0;
}

int fl_wire_parse_in(const fl_wire_frame *f, fl_wire_arena *arena, fl_wire_message *out, fl_status *st)
{
    memset(out, 0, sizeof *out);
    out->type = f->type;
    out->request_id = f->request_id;
    if (strcmp(fl_wire_type_name(f->type), "?") == 0)
        return fl_status_set(st, FL_DATA_LOSS, "unknown frame type %d", (int)f->type);
    if (!wire_body_of(f->type))
        return parse_bare(f, out, st);
    fl_wire_arena local;
    max_align_t space[4096 / sizeof(max_align_t)]; /* a small frame's message, without a malloc */
    bool kept = arena != NULL;
    if (!arena)
        wire_arena_on(arena = &local, space, sizeof space);
    ProtobufCMessage *msg = wire_unpack(f, arena, st);
    fl_wire_bytes tail = {f->tail, f->tail_len};
    bool partition = f->type == FL_WIRE_RUN_PARTITION || f->type == FL_WIRE_PARTITION_DONE;
    int rc = msg ? view_body(f->type, msg, &tail, kept ? arena : NULL, partition && !kept ? NULL : out, st) : -1;
    if (rc == 0 && partition && !kept)
        out->u.body = (fl_wire_bytes){f->body, f->body_len};
    if (!kept)
        wire_arena_release(&local);
    return rc;
}

int fl_wire_parse(const fl_wire_frame *f, fl_wire_message *out, fl_status *st)
{
    return fl_wire_parse_in(f, NULL, out, st);
}

int fl_wire_parse_number(const fl_wire_frame *f, uint64_t *number, fl_status *st)
{
    fl_wire_message m;
    if (f->type != FL_WIRE_PARTITION_REGISTERED && f->type != FL_WIRE_ABORT_STEP &&
        f->type != FL_WIRE_DEREGISTER_PARTITION)
        return wire_refuse(f->type, st, "not a frame of one number");
    if (fl_wire_parse(f, &m, st) != 0)
        return -1;
    *number = m.u.number;
    return 0;
}
