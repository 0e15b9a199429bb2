/* wire_parse.c: a frame's payload into a plain struct, trusting nothing.
 * A cursor walks the payload; every read first checks that its bytes are there, and
 * every count, dim, dtype and name is checked before it is used. Tensor data is not
 * copied: the struct points into the frame. Names are copied, they are short. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire_internal.h"

typedef struct {
    const unsigned char *p;
    size_t left;              /* in memory at p */
    const unsigned char *tail; /* the payload's last tail_len bytes (fl_wire_frame) */
    size_t tail_len;
    fl_wire_type type;
    char *err;
    size_t errlen;
} cursor;

/* Every parse message starts with the frame type: "PULL: name is empty". */
static int fail(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(cursor *c, const char *fmt, ...)
{
    int n = snprintf(c->err, c->errlen, "%s: ", fl_wire_type_name(c->type));
    if (n < 0 || (size_t)n >= c->errlen)
        return -1;
    va_list args;
    va_start(args, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, args);
    va_end(args);
    return -1;
}

static int open_cursor(cursor *c, const fl_wire_frame *f, bool type_ok, const char *parser,
                       char *err, size_t errlen)
{
    *c = (cursor){f->payload, f->payload_len, NULL, 0, f->type, err, errlen};
    if (f->tail_len > f->payload_len)
        return fail(c, "%zu bytes received apart from a payload of %u", f->tail_len, (unsigned)f->payload_len);
    c->left -= f->tail_len;
    c->tail = f->tail;
    c->tail_len = f->tail_len;
    if (!type_ok)
        return fail(c, "not a frame for the %s parser", parser);
    return 0;
}

static int take(cursor *c, size_t n, const char *what, const unsigned char **out)
{
    *out = NULL;
    if (n > c->left && c->tail_len)
        return fail(c, "the %s is not in the bytes before the %zu received apart", what, c->tail_len);
    if (n > c->left)
        return fail(c, "payload ends inside the %s (needs %zu bytes, %zu left)", what, n, c->left);
    *out = c->p;
    c->p += n;
    c->left -= n;
    return 0;
}

static int get_u8(cursor *c, const char *what, unsigned *v)
{
    const unsigned char *b;
    if (take(c, 1, what, &b) != 0)
        return -1;
    *v = b[0];
    return 0;
}

static int get_u32(cursor *c, const char *what, uint32_t *v)
{
    const unsigned char *b;
    if (take(c, 4, what, &b) != 0)
        return -1;
    *v = wire_load_u32(b);
    return 0;
}

/* No bytes may follow the last field: they would mean sender and receiver disagree. */
static int finish(cursor *c)
{
    size_t left = c->left + c->tail_len;
    if (left != 0)
        return fail(c, "%zu trailing byte%s after the last field", left, left == 1 ? "" : "s");
    return 0;
}

/* ---- fields ---- */

/* u8 length, then that many bytes; copied out with a terminating zero. */
static int get_name(cursor *c, const char *what, char out[FL_WIRE_MAX_NAME + 1])
{
    unsigned len;
    const unsigned char *bytes;
    char why[FL_WIRE_ERROR_LEN];
    if (get_u8(c, what, &len) != 0 || take(c, len, what, &bytes) != 0)
        return -1;
    if (wire_check_name(bytes, len, why, sizeof why) != 0)
        return fail(c, "%s %s", what, why);
    memcpy(out, bytes, len);
    out[len] = '\0';
    return 0;
}

static int get_shape(cursor *c, fl_wire_tensor *t)
{
    unsigned rank;
    if (get_u8(c, "rank", &rank) != 0)
        return -1;
    if (rank > FL_MAX_RANK)
        return fail(c, "rank %u over the limit of %d", rank, FL_MAX_RANK);
    t->shape.rank = (int)rank;
    for (unsigned i = 0; i < rank; i++) {
        uint32_t dim;
        if (get_u32(c, "shape", &dim) != 0)
            return -1;
        t->shape.dims[i] = (int32_t)dim; /* i32 on the wire: 0xffffffff reads as -1 */
    }
    char why[FL_WIRE_ERROR_LEN];
    if (wire_check_shape(t->shape.rank, t->shape.dims, &t->count, why, sizeof why) != 0)
        return fail(c, "%s", why);
    return 0;
}

/* dtype u8, rank u8, dims i32, data length u32, data. */
static int get_tensor(cursor *c, fl_wire_tensor *t)
{
    unsigned dtype;
    uint32_t bytes;
    memset(t, 0, sizeof *t);
    if (get_u8(c, "dtype", &dtype) != 0)
        return -1;
    if (dtype != FL_FLOAT32 && dtype != FL_INT32)
        return fail(c, "dtype %u is neither 0 (float32) nor 1 (int32)", dtype);
    t->dtype = (fl_dtype)dtype;
    if (get_shape(c, t) != 0 || get_u32(c, "data length", &bytes) != 0)
        return -1;
    if ((uint64_t)bytes != (uint64_t)t->count * 4) {
        char shape[64];
        wire_format_dims(t->shape.rank, t->shape.dims, shape, sizeof shape);
        return fail(c, "%s %s needs %lld data bytes, the frame says %u",
                    dtype == FL_FLOAT32 ? "float32" : "int32", shape, (long long)t->count * 4,
                    (unsigned)bytes);
    }
    t->bytes = bytes;
    if (c->tail_len == 0)
        return take(c, bytes, "tensor data", &t->data);
    if (c->left != 0 || bytes != c->tail_len) /* the tail is taken whole, as this tensor's data */
        return fail(c, "tensor data of %u bytes, but %zu were received apart", (unsigned)bytes, c->tail_len);
    t->data = c->tail;
    c->tail_len = 0;
    return 0;
}

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

int fl_wire_parse_hello(const fl_wire_frame *f, fl_wire_hello *out, char *err, size_t errlen)
{
    cursor c;
    bool type_ok = f->type == FL_WIRE_HELLO || f->type == FL_WIRE_HELLO_OK;
    unsigned version;
    if (open_cursor(&c, f, type_ok, "HELLO", err, errlen) != 0)
        return -1;
    if (get_u8(&c, "version", &version) != 0)
        return -1;
    if (version != FL_WIRE_VERSION)
        return fail(&c, "protocol version %u not supported (this build speaks version %u)",
                    version, FL_WIRE_VERSION);
    out->version = (uint8_t)version;
    if (get_name(&c, "job name", out->job) != 0 || get_u32(&c, "task index", &out->task_index) != 0)
        return -1;
    if (out->task_index > FL_WIRE_MAX_TASK)
        return fail(&c, "task index %u over the %u limit", (unsigned)out->task_index,
                    FL_WIRE_MAX_TASK);
    return finish(&c);
}

int fl_wire_parse_named_tensor(const fl_wire_frame *f, fl_wire_named_tensor *out, char *err,
                               size_t errlen)
{
    cursor c;
    bool type_ok = f->type == FL_WIRE_INIT_VARIABLE || f->type == FL_WIRE_VALUE ||
                   f->type == FL_WIRE_ASSIGN_ADD || f->type == FL_WIRE_ASSIGN;
    if (open_cursor(&c, f, type_ok, "named tensor", err, errlen) != 0)
        return -1;
    if (get_name(&c, "name", out->name) != 0 || get_tensor(&c, &out->tensor) != 0)
        return -1;
    return finish(&c);
}

int fl_wire_parse_pull(const fl_wire_frame *f, char name[FL_WIRE_MAX_NAME + 1], char *err,
                       size_t errlen)
{
    cursor c;
    bool type_ok = f->type == FL_WIRE_PULL || f->type == FL_WIRE_IS_INITIALIZED;
    if (open_cursor(&c, f, type_ok, "name-only", err, errlen) != 0)
        return -1;
    if (get_name(&c, "name", name) != 0)
        return -1;
    return finish(&c);
}

static const int HYPER_COUNT[3] = {1, 3, 4}; /* GradientDescent, Momentum, Adam */

/* Into the named fields; hyper[] is in wire order (see fl_wire_optimizer_args). */
static int set_hyper(cursor *c, fl_wire_optimizer_args *opt, const float *hyper)
{
    opt->learning_rate = hyper[0];
    if (opt->kind == FL_WIRE_MOMENTUM) {
        uint32_t bits;
        memcpy(&bits, &hyper[2], 4);
        if (bits != 0 && bits != 0x3f800000u) /* exactly +0.0 or 1.0 */
            return fail(c, "Momentum's use_nesterov must be 0 or 1, got %g", hyper[2]);
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

static int get_slots(cursor *c, fl_wire_optimizer_args *opt)
{
    unsigned count;
    if (get_u8(c, "slot count", &count) != 0)
        return -1;
    int want = fl_wire_optimizer_slots(opt->kind);
    if ((int)count != want)
        return fail(c, "%s takes %d slot name%s, the frame has %u", fl_wire_optimizer_name(opt->kind), want,
                    want == 1 ? "" : "s", count);
    opt->nslots = (int)count;
    for (int i = 0; i < opt->nslots; i++)
        if (get_name(c, "slot name", opt->slots[i]) != 0)
            return -1;
    return 0;
}

static int get_optimizer(cursor *c, fl_wire_optimizer_args *opt)
{
    unsigned kind, count;
    float hyper[4];
    memset(opt, 0, sizeof *opt);
    if (get_u8(c, "optimizer", &kind) != 0)
        return -1;
    if (kind > FL_WIRE_ADAM)
        return fail(c, "optimizer kind %u unknown (0 GradientDescent, 1 Momentum, 2 Adam)", kind);
    opt->kind = (fl_wire_optimizer)kind;
    if (get_u8(c, "hyper-parameter count", &count) != 0)
        return -1;
    if ((int)count != HYPER_COUNT[kind])
        return fail(c, "%s takes %d hyper-parameters, the frame has %u",
                    fl_wire_optimizer_name((int)kind), HYPER_COUNT[kind], count);
    for (unsigned i = 0; i < count; i++) {
        uint32_t bits;
        if (get_u32(c, "hyper-parameters", &bits) != 0)
            return -1;
        memcpy(&hyper[i], &bits, 4);
        if (!isfinite(hyper[i]))
            return fail(c, "%s hyper-parameter %u is not finite", fl_wire_optimizer_name((int)kind),
                        i);
    }
    return set_hyper(c, opt, hyper) != 0 ? -1 : get_slots(c, opt);
}

static int get_apply_fields(cursor *c, fl_wire_apply *out)
{
    if (get_name(c, "name", out->name) != 0 || get_optimizer(c, &out->opt) != 0 || get_tensor(c, &out->grad) != 0)
        return -1;
    if (out->grad.dtype != FL_FLOAT32)
        return fail(c, "the gradient is int32; optimizers take float32");
    return finish(c);
}

int fl_wire_parse_apply(const fl_wire_frame *f, fl_wire_apply *out, char *err, size_t errlen)
{
    cursor c;
    if (open_cursor(&c, f, f->type == FL_WIRE_APPLY, "APPLY", err, errlen) != 0)
        return -1;
    return get_apply_fields(&c, out);
}

static int get_u64(cursor *c, const char *what, uint64_t *v)
{
    uint32_t high, low;
    if (get_u32(c, what, &high) != 0 || get_u32(c, what, &low) != 0)
        return -1;
    *v = (uint64_t)high << 32 | low;
    return 0;
}

static int get_sync(cursor *c, fl_wire_sync *sync)
{
    if (get_u64(c, "step", &sync->step) != 0 || get_u32(c, "replicas", &sync->replicas) != 0)
        return -1;
    if (sync->replicas == 0 || sync->replicas > FL_WIRE_MAX_REPLICAS)
        return fail(c, "replicas to aggregate %u outside 1..%u", (unsigned)sync->replicas, FL_WIRE_MAX_REPLICAS);
    return 0;
}

int fl_wire_parse_sync_apply(const fl_wire_frame *f, fl_wire_sync *sync, fl_wire_apply *out, char *err,
                             size_t errlen)
{
    cursor c;
    if (open_cursor(&c, f, f->type == FL_WIRE_SYNC_APPLY, "SYNC_APPLY", err, errlen) != 0)
        return -1;
    return get_sync(&c, sync) != 0 ? -1 : get_apply_fields(&c, out);
}

int fl_wire_parse_sync_assignment(const fl_wire_frame *f, fl_wire_sync *sync, fl_wire_named_tensor *out,
                                  char *err, size_t errlen)
{
    cursor c;
    bool type_ok = f->type == FL_WIRE_SYNC_ASSIGN || f->type == FL_WIRE_SYNC_ASSIGN_ADD;
    if (open_cursor(&c, f, type_ok, "SYNC_ASSIGN", err, errlen) != 0)
        return -1;
    if (get_sync(&c, sync) != 0 || get_name(&c, "name", out->name) != 0 || get_tensor(&c, &out->tensor) != 0)
        return -1;
    return finish(&c);
}

int fl_wire_parse_sync_done(const fl_wire_frame *f, fl_wire_sync_outcome *out, char *err, size_t errlen)
{
    cursor c;
    unsigned outcome;
    if (open_cursor(&c, f, f->type == FL_WIRE_SYNC_DONE, "SYNC_DONE", err, errlen) != 0)
        return -1;
    if (get_u8(&c, "outcome", &outcome) != 0)
        return -1;
    if (outcome > FL_WIRE_SYNC_DROPPED)
        return fail(&c, "outcome %u unknown (0 applied, 1 accumulated, 2 dropped)", outcome);
    *out = (fl_wire_sync_outcome)outcome;
    return finish(&c);
}

int fl_wire_parse_wait_step(const fl_wire_frame *f, fl_wire_wait_step *out, char *err, size_t errlen)
{
    cursor c;
    if (open_cursor(&c, f, f->type == FL_WIRE_WAIT_STEP, "WAIT_STEP", err, errlen) != 0)
        return -1;
    if (get_name(&c, "name", out->name) != 0 || get_u64(&c, "step", &out->step) != 0)
        return -1;
    return finish(&c);
}

int fl_wire_parse_init_done(const fl_wire_frame *f, bool *already, char *err, size_t errlen)
{
    cursor c;
    unsigned flag;
    if (open_cursor(&c, f, f->type == FL_WIRE_INIT_DONE, "INIT_DONE", err, errlen) != 0)
        return -1;
    if (get_u8(&c, "flag", &flag) != 0)
        return -1;
    if (flag > 1)
        return fail(&c, "flag %u must be 0 (assigned now) or 1 (already initialised)", flag);
    *already = flag == 1;
    return finish(&c);
}

int fl_wire_parse_applied(const fl_wire_frame *f, uint64_t *version, char *err, size_t errlen)
{
    cursor c;
    if (open_cursor(&c, f, f->type == FL_WIRE_APPLIED, "APPLIED", err, errlen) != 0)
        return -1;
    if (get_u64(&c, "version", version) != 0)
        return -1;
    return finish(&c);
}

int fl_wire_parse_error(const fl_wire_frame *f, fl_wire_error *out, char *err, size_t errlen)
{
    cursor c;
    const unsigned char *b, *text;
    if (open_cursor(&c, f, f->type == FL_WIRE_ERROR, "ERROR", err, errlen) != 0)
        return -1;
    if (take(&c, 4, "code and length", &b) != 0)
        return -1;
    unsigned code = wire_load_u16(b), len = wire_load_u16(b + 2);
    if (code == 0 || code >= FL_WIRE_ERROR_CODE_COUNT)
        return fail(&c, "unknown error code %u", code);
    if (len > FL_WIRE_MAX_MESSAGE)
        return fail(&c, "message of %u bytes over the %u limit", len, FL_WIRE_MAX_MESSAGE);
    if (take(&c, len, "message", &text) != 0)
        return -1;
    for (unsigned i = 0; i < len; i++)
        if (text[i] < ' ' || text[i] > '~')
            return fail(&c, "message is not printable (byte 0x%02x at offset %u)", text[i], i);
    out->code = (fl_wire_error_code)code;
    memcpy(out->message, text, len);
    out->message[len] = '\0';
    return finish(&c);
}

int fl_wire_parse_empty(const fl_wire_frame *f, char *err, size_t errlen)
{
    cursor c;
    bool type_ok = f->type == FL_WIRE_GOODBYE || f->type == FL_WIRE_OK;
    if (open_cursor(&c, f, type_ok, "empty-frame", err, errlen) != 0)
        return -1;
    return finish(&c);
}

int fl_wire_parse(const fl_wire_frame *f, fl_wire_message *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->type = f->type;
    out->request_id = f->request_id;
    switch (f->type) {
    case FL_WIRE_HELLO:
    case FL_WIRE_HELLO_OK: return fl_wire_parse_hello(f, &out->u.hello, err, errlen);
    case FL_WIRE_INIT_VARIABLE:
    case FL_WIRE_VALUE:
    case FL_WIRE_ASSIGN_ADD:
    case FL_WIRE_ASSIGN: return fl_wire_parse_named_tensor(f, &out->u.named, err, errlen);
    case FL_WIRE_PULL:
    case FL_WIRE_IS_INITIALIZED: return fl_wire_parse_pull(f, out->u.name, err, errlen);
    case FL_WIRE_SYNC_APPLY: return fl_wire_parse_sync_apply(f, &out->sync, &out->u.apply, err, errlen);
    case FL_WIRE_SYNC_ASSIGN:
    case FL_WIRE_SYNC_ASSIGN_ADD: return fl_wire_parse_sync_assignment(f, &out->sync, &out->u.named, err, errlen);
    case FL_WIRE_SYNC_DONE: return fl_wire_parse_sync_done(f, &out->u.outcome, err, errlen);
    case FL_WIRE_WAIT_STEP: return fl_wire_parse_wait_step(f, &out->u.wait, err, errlen);
    case FL_WIRE_APPLY: return fl_wire_parse_apply(f, &out->u.apply, err, errlen);
    case FL_WIRE_INIT_DONE:
        return fl_wire_parse_init_done(f, &out->u.already_initialized, err, errlen);
    case FL_WIRE_APPLIED: return fl_wire_parse_applied(f, &out->u.version, err, errlen);
    case FL_WIRE_ERROR: return fl_wire_parse_error(f, &out->u.error, err, errlen);
    case FL_WIRE_GOODBYE:
    case FL_WIRE_OK: return fl_wire_parse_empty(f, err, errlen);
    case FL_WIRE_CHALLENGE:
    case FL_WIRE_PROOF:
    case FL_WIRE_SERVER_PROOF: return fl_wire_parse_handshake(f, &out->u.handshake, err, errlen);
    }
    snprintf(err, errlen, "unknown frame type %d", (int)f->type);
    return -1;
}
