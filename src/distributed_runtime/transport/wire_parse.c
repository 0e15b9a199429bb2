/* wire_parse.c: a frame's payload into a plain struct, trusting nothing.
 * A cursor (wire_cursor.c) walks the payload; every read first checks that its bytes
 * are there, and every count, dim, dtype and name is checked before it is used. Tensor
 * data is not copied: the struct points into the frame. Names are copied, they are short. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire_internal.h"

bool fl_wire_host_order_is_wire_order(void) { return wire_host_is_little_endian(); }

const void *fl_wire_tensor_in_place(const fl_wire_tensor *t)
{
    bool aligned = (uintptr_t)t->data % 4 == 0;
    return wire_host_is_little_endian() && aligned ? t->data : NULL;
}

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

int fl_wire_parse_named_tensor(const fl_wire_frame *f, fl_wire_named_tensor *out, fl_status *st)
{
    wire_cursor c;
    bool type_ok = f->type == FL_WIRE_INIT_VARIABLE || f->type == FL_WIRE_VALUE ||
                   f->type == FL_WIRE_ASSIGN_ADD || f->type == FL_WIRE_ASSIGN;
    if (wire_cursor_open(&c, f, type_ok, "named tensor", st) != 0)
        return -1;
    if (wire_get_name(&c, "name", out->name) != 0 || wire_get_tensor(&c, &out->tensor) != 0)
        return -1;
    return wire_finish(&c);
}

int fl_wire_parse_pull(const fl_wire_frame *f, char name[FL_WIRE_MAX_NAME + 1], fl_status *st)
{
    wire_cursor c;
    bool type_ok = f->type == FL_WIRE_PULL || f->type == FL_WIRE_IS_INITIALIZED;
    if (wire_cursor_open(&c, f, type_ok, "name-only", st) != 0)
        return -1;
    if (wire_get_name(&c, "name", name) != 0)
        return -1;
    return wire_finish(&c);
}

static const int HYPER_COUNT[3] = {1, 3, 4}; /* GradientDescent, Momentum, Adam */

/* Into the named fields; hyper[] is in wire order (see fl_wire_optimizer_args). */
static int set_hyper(wire_cursor *c, fl_wire_optimizer_args *opt, const float *hyper)
{
    opt->learning_rate = hyper[0];
    if (opt->kind == FL_WIRE_MOMENTUM) {
        uint32_t bits;
        memcpy(&bits, &hyper[2], 4);
        if (bits != 0 && bits != 0x3f800000u) /* exactly +0.0 or 1.0 */
            return wire_fail(c, "Momentum's use_nesterov must be 0 or 1, got %g", hyper[2]);
        opt->momentum = hyper[1];
        opt->use_nesterov = bits != 0;
    }
    if (opt->kind == FL_WIRE_ADAM) {
        opt->beta1 = hyper[1];
        opt->beta2 = hyper[2];
        opt->epsilon = hyper[3];
    }
    return 0;
}

static int get_slots(wire_cursor *c, fl_wire_optimizer_args *opt)
{
    unsigned count;
    if (wire_get_u8(c, "slot count", &count) != 0)
        return -1;
    int want = fl_wire_optimizer_slots(opt->kind);
    if ((int)count != want)
        return wire_fail(c, "%s takes %d slot name%s, the frame has %u", fl_wire_optimizer_name(opt->kind), want,
                    want == 1 ? "" : "s", count);
    opt->nslots = (int)count;
    for (int i = 0; i < opt->nslots; i++)
        if (wire_get_name(c, "slot name", opt->slots[i]) != 0)
            return -1;
    return 0;
}

static int get_optimizer(wire_cursor *c, fl_wire_optimizer_args *opt)
{
    unsigned kind, count;
    float hyper[4];
    memset(opt, 0, sizeof *opt);
    if (wire_get_u8(c, "optimizer", &kind) != 0)
        return -1;
    if (kind > FL_WIRE_ADAM)
        return wire_fail(c, "optimizer kind %u unknown (0 GradientDescent, 1 Momentum, 2 Adam)", kind);
    opt->kind = (fl_wire_optimizer)kind;
    if (wire_get_u8(c, "hyper-parameter count", &count) != 0)
        return -1;
    if ((int)count != HYPER_COUNT[kind])
        return wire_fail(c, "%s takes %d hyper-parameters, the frame has %u",
                    fl_wire_optimizer_name((int)kind), HYPER_COUNT[kind], count);
    for (unsigned i = 0; i < count; i++) {
        uint32_t bits;
        if (wire_get_u32(c, "hyper-parameters", &bits) != 0)
            return -1;
        memcpy(&hyper[i], &bits, 4);
        if (!isfinite(hyper[i]))
            return wire_fail(c, "%s hyper-parameter %u is not finite", fl_wire_optimizer_name((int)kind),
                        i);
    }
    return set_hyper(c, opt, hyper) != 0 ? -1 : get_slots(c, opt);
}

static int get_apply_fields(wire_cursor *c, fl_wire_apply *out)
{
    if (wire_get_name(c, "name", out->name) != 0 || get_optimizer(c, &out->opt) != 0 || wire_get_tensor(c, &out->grad) != 0)
        return -1;
    if (out->grad.dtype != FL_FLOAT32)
        return wire_fail(c, "the gradient is int32; optimizers take float32");
    return wire_finish(c);
}

int fl_wire_parse_apply(const fl_wire_frame *f, fl_wire_apply *out, fl_status *st)
{
    wire_cursor c;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_APPLY, "APPLY", st) != 0)
        return -1;
    return get_apply_fields(&c, out);
}

static int get_sync(wire_cursor *c, fl_wire_sync *sync)
{
    if (wire_get_u64(c, "step", &sync->step) != 0 || wire_get_u32(c, "replicas", &sync->replicas) != 0)
        return -1;
    if (sync->replicas == 0 || sync->replicas > FL_WIRE_MAX_REPLICAS)
        return wire_fail(c, "replicas to aggregate %u outside 1..%u", (unsigned)sync->replicas, FL_WIRE_MAX_REPLICAS);
    return 0;
}

int fl_wire_parse_sync_apply(const fl_wire_frame *f, fl_wire_sync *sync, fl_wire_apply *out, fl_status *st)
{
    wire_cursor c;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_SYNC_APPLY, "SYNC_APPLY", st) != 0)
        return -1;
    return get_sync(&c, sync) != 0 ? -1 : get_apply_fields(&c, out);
}

int fl_wire_parse_sync_assignment(const fl_wire_frame *f, fl_wire_sync *sync, fl_wire_named_tensor *out,
                                  fl_status *st)
{
    wire_cursor c;
    bool type_ok = f->type == FL_WIRE_SYNC_ASSIGN || f->type == FL_WIRE_SYNC_ASSIGN_ADD;
    if (wire_cursor_open(&c, f, type_ok, "SYNC_ASSIGN", st) != 0)
        return -1;
    if (get_sync(&c, sync) != 0 || wire_get_name(&c, "name", out->name) != 0 || wire_get_tensor(&c, &out->tensor) != 0)
        return -1;
    return wire_finish(&c);
}

int fl_wire_parse_sync_done(const fl_wire_frame *f, fl_wire_sync_outcome *out, fl_status *st)
{
    wire_cursor c;
    unsigned outcome;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_SYNC_DONE, "SYNC_DONE", st) != 0)
        return -1;
    if (wire_get_u8(&c, "outcome", &outcome) != 0)
        return -1;
    if (outcome > FL_WIRE_SYNC_DROPPED)
        return wire_fail(&c, "outcome %u unknown (0 applied, 1 accumulated, 2 dropped)", outcome);
    *out = (fl_wire_sync_outcome)outcome;
    return wire_finish(&c);
}

int fl_wire_parse_wait_step(const fl_wire_frame *f, fl_wire_wait_step *out, fl_status *st)
{
    wire_cursor c;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_WAIT_STEP, "WAIT_STEP", st) != 0)
        return -1;
    if (wire_get_name(&c, "name", out->name) != 0 || wire_get_u64(&c, "step", &out->step) != 0)
        return -1;
    return wire_finish(&c);
}

int fl_wire_parse_init_done(const fl_wire_frame *f, bool *already, fl_status *st)
{
    wire_cursor c;
    unsigned flag;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_INIT_DONE, "INIT_DONE", st) != 0)
        return -1;
    if (wire_get_u8(&c, "flag", &flag) != 0)
        return -1;
    if (flag > 1)
        return wire_fail(&c, "flag %u must be 0 (assigned now) or 1 (already initialised)", flag);
    *already = flag == 1;
    return wire_finish(&c);
}

int fl_wire_parse_applied(const fl_wire_frame *f, uint64_t *version, fl_status *st)
{
    wire_cursor c;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_APPLIED, "APPLIED", st) != 0)
        return -1;
    if (wire_get_u64(&c, "version", version) != 0)
        return -1;
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
    case FL_WIRE_INIT_VARIABLE:
    case FL_WIRE_VALUE:
    case FL_WIRE_ASSIGN_ADD:
    case FL_WIRE_ASSIGN: return fl_wire_parse_named_tensor(f, &out->u.named, st);
    case FL_WIRE_PULL:
    case FL_WIRE_IS_INITIALIZED: return fl_wire_parse_pull(f, out->u.name, st);
    case FL_WIRE_SYNC_APPLY: return fl_wire_parse_sync_apply(f, &out->sync, &out->u.apply, st);
    case FL_WIRE_SYNC_ASSIGN:
    case FL_WIRE_SYNC_ASSIGN_ADD: return fl_wire_parse_sync_assignment(f, &out->sync, &out->u.named, st);
    case FL_WIRE_SYNC_DONE: return fl_wire_parse_sync_done(f, &out->u.outcome, st);
    case FL_WIRE_WAIT_STEP: return fl_wire_parse_wait_step(f, &out->u.wait, st);
    case FL_WIRE_APPLY: return fl_wire_parse_apply(f, &out->u.apply, st);
    case FL_WIRE_INIT_DONE:
        return fl_wire_parse_init_done(f, &out->u.already_initialized, st);
    case FL_WIRE_APPLIED: return fl_wire_parse_applied(f, &out->u.version, st);
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

