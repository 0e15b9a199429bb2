/* wire_encode.c: one function per frame type that appends that frame to a buffer.
 * Arguments get the checks the receiving parser would make, so a frame that leaves
 * here is one the other side accepts; a refused one leaves the buffer as it was. */
#include <math.h>
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

/* A float travels as its IEEE-754 bits, big-endian like every other field. */
static int put_float(fl_wire_buf *buf, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return put_u32(buf, bits);
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

static int put_named_tensor(fl_wire_buf *buf, fl_wire_type type, uint32_t id, const char *name,
                            const fl_tensor *t)
{
    long start = wire_begin(buf, type, id);
    if (start < 0)
        return -1;
    if (put_name(buf, start, type, "name", name) != 0 || put_tensor(buf, start, type, t) != 0)
        return -1;
    return wire_end(buf, start);
}

int fl_wire_put_init_variable(fl_wire_buf *buf, uint32_t id, const char *name, const fl_tensor *value)
{
    return put_named_tensor(buf, FL_WIRE_INIT_VARIABLE, id, name, value);
}

int fl_wire_put_value(fl_wire_buf *buf, uint32_t id, const char *name, const fl_tensor *value)
{
    return put_named_tensor(buf, FL_WIRE_VALUE, id, name, value);
}

int fl_wire_put_value_head(fl_wire_buf *buf, uint32_t id, const char *name, const fl_tensor *value)
{
    long start = wire_begin(buf, FL_WIRE_VALUE, id);
    size_t bytes;
    if (start < 0)
        return -1;
    if (!wire_host_is_little_endian())
        return wire_abort(buf, start, "VALUE: this host's byte order is not the wire's; copy the value");
    if (put_name(buf, start, FL_WIRE_VALUE, "name", name) != 0 ||
        put_tensor_head(buf, start, FL_WIRE_VALUE, value, &bytes) != 0)
        return -1;
    return wire_end_before(buf, start, bytes);
}

int fl_wire_put_assign_add(fl_wire_buf *buf, uint32_t id, const char *name, const fl_tensor *delta)
{
    return put_named_tensor(buf, FL_WIRE_ASSIGN_ADD, id, name, delta);
}

int fl_wire_put_assign(fl_wire_buf *buf, uint32_t id, const char *name, const fl_tensor *value)
{
    return put_named_tensor(buf, FL_WIRE_ASSIGN, id, name, value);
}

int fl_wire_put_init_done(fl_wire_buf *buf, uint32_t id, bool already_initialized)
{
    long start = wire_begin(buf, FL_WIRE_INIT_DONE, id);
    if (start < 0)
        return -1;
    if (put_u8(buf, already_initialized ? 1 : 0) != 0)
        return refuse(buf, start, FL_WIRE_INIT_DONE, "out of memory");
    return wire_end(buf, start);
}

/* A frame whose payload is one name: PULL, IS_INITIALIZED. */
static int put_name_frame(fl_wire_buf *buf, fl_wire_type type, uint32_t id, const char *name)
{
    long start = wire_begin(buf, type, id);
    if (start < 0)
        return -1;
    if (put_name(buf, start, type, "name", name) != 0)
        return -1;
    return wire_end(buf, start);
}

int fl_wire_put_pull(fl_wire_buf *buf, uint32_t id, const char *name)
{
    return put_name_frame(buf, FL_WIRE_PULL, id, name);
}

int fl_wire_put_is_initialized(fl_wire_buf *buf, uint32_t id, const char *name)
{
    return put_name_frame(buf, FL_WIRE_IS_INITIALIZED, id, name);
}

/* The kind's hyper-parameters in wire order; returns how many. */
static int hyper_list(const fl_wire_optimizer_args *opt, float out[4])
{
    out[0] = opt->learning_rate;
    if (opt->kind == FL_WIRE_GRADIENT_DESCENT)
        return 1;
    if (opt->kind == FL_WIRE_MOMENTUM) {
        out[1] = opt->momentum;
        out[2] = opt->use_nesterov ? 1.0f : 0.0f;
        return 3;
    }
    const float adam[3] = {opt->beta1, opt->beta2, opt->epsilon};
    memcpy(out + 1, adam, sizeof adam);
    return 4;
}

int fl_wire_optimizer_slots(fl_wire_optimizer kind)
{
    return kind == FL_WIRE_ADAM ? 4 : kind == FL_WIRE_MOMENTUM ? 1 : 0;
}

static int put_slots(fl_wire_buf *buf, long start, const fl_wire_optimizer_args *opt)
{
    if (put_u8(buf, (unsigned)opt->nslots) != 0)
        return refuse(buf, start, FL_WIRE_APPLY, "out of memory");
    for (int i = 0; i < opt->nslots; i++)
        if (put_name(buf, start, FL_WIRE_APPLY, "slot name", opt->slots[i]) != 0)
            return -1;
    return 0;
}

/* u64 step as two u32 (high first), then u32 replicas. */
static int put_sync(fl_wire_buf *buf, long start, fl_wire_type type, const fl_wire_sync *sync)
{
    if (!sync || sync->replicas == 0 || sync->replicas > FL_WIRE_MAX_REPLICAS)
        return wire_abort(buf, start, "%s: replicas to aggregate must be 1..%u", fl_wire_type_name(type),
                          FL_WIRE_MAX_REPLICAS);
    if (put_u32(buf, (uint32_t)(sync->step >> 32)) != 0 || put_u32(buf, (uint32_t)sync->step) != 0 ||
        put_u32(buf, sync->replicas) != 0)
        return refuse(buf, start, type, "out of memory");
    return 0;
}

/* APPLY's fields: name, optimizer, hyper-parameters, slots, gradient. */
static int put_apply_fields(fl_wire_buf *buf, long start, const char *name, const fl_wire_optimizer_args *opt,
                            const fl_tensor *grad)
{
    if (!opt || opt->kind < FL_WIRE_GRADIENT_DESCENT || opt->kind > FL_WIRE_ADAM)
        return refuse(buf, start, FL_WIRE_APPLY, "unknown optimizer kind");
    if (grad && grad->dtype != FL_FLOAT32)
        return refuse(buf, start, FL_WIRE_APPLY, "the gradient must be float32");
    if (opt->nslots != fl_wire_optimizer_slots(opt->kind))
        return wire_abort(buf, start, "APPLY: %s takes %d slot name%s, not %d",
                          fl_wire_optimizer_name(opt->kind), fl_wire_optimizer_slots(opt->kind),
                          fl_wire_optimizer_slots(opt->kind) == 1 ? "" : "s", opt->nslots);
    float hyper[4];
    int n = hyper_list(opt, hyper);
    for (int i = 0; i < n; i++)
        if (!isfinite(hyper[i]))
            return wire_abort(buf, start, "APPLY: %s hyper-parameter %d is not finite",
                              fl_wire_optimizer_name(opt->kind), i);
    if (put_name(buf, start, FL_WIRE_APPLY, "name", name) != 0)
        return -1;
    if (put_u8(buf, (unsigned)opt->kind) != 0 || put_u8(buf, (unsigned)n) != 0)
        return refuse(buf, start, FL_WIRE_APPLY, "out of memory");
    for (int i = 0; i < n; i++)
        if (put_float(buf, hyper[i]) != 0)
            return refuse(buf, start, FL_WIRE_APPLY, "out of memory");
    return put_slots(buf, start, opt) != 0 || put_tensor(buf, start, FL_WIRE_APPLY, grad) != 0 ? -1 : 0;
}

int fl_wire_put_apply(fl_wire_buf *buf, uint32_t id, const char *name,
                      const fl_wire_optimizer_args *opt, const fl_tensor *grad)
{
    long start = wire_begin(buf, FL_WIRE_APPLY, id);
    if (start < 0)
        return -1;
    if (put_apply_fields(buf, start, name, opt, grad) != 0)
        return -1;
    return wire_end(buf, start);
}

int fl_wire_put_sync_apply(fl_wire_buf *buf, uint32_t id, const fl_wire_sync *sync, const char *name,
                           const fl_wire_optimizer_args *opt, const fl_tensor *grad)
{
    long start = wire_begin(buf, FL_WIRE_SYNC_APPLY, id);
    if (start < 0)
        return -1;
    if (put_sync(buf, start, FL_WIRE_SYNC_APPLY, sync) != 0 || put_apply_fields(buf, start, name, opt, grad) != 0)
        return -1;
    return wire_end(buf, start);
}

int fl_wire_put_sync_assignment(fl_wire_buf *buf, fl_wire_type type, uint32_t id, const fl_wire_sync *sync,
                                const char *name, const fl_tensor *value)
{
    long start = wire_begin(buf, type, id);
    if (start < 0)
        return -1;
    if (type != FL_WIRE_SYNC_ASSIGN && type != FL_WIRE_SYNC_ASSIGN_ADD)
        return wire_abort(buf, start, "%s is not a synchronous assignment", fl_wire_type_name(type));
    if (put_sync(buf, start, type, sync) != 0 || put_name(buf, start, type, "name", name) != 0 ||
        put_tensor(buf, start, type, value) != 0)
        return -1;
    return wire_end(buf, start);
}

int fl_wire_put_sync_done(fl_wire_buf *buf, uint32_t id, fl_wire_sync_outcome outcome)
{
    long start = wire_begin(buf, FL_WIRE_SYNC_DONE, id);
    if (start < 0)
        return -1;
    if ((unsigned)outcome > FL_WIRE_SYNC_DROPPED)
        return refuse(buf, start, FL_WIRE_SYNC_DONE, "unknown outcome");
    if (put_u8(buf, (unsigned)outcome) != 0)
        return refuse(buf, start, FL_WIRE_SYNC_DONE, "out of memory");
    return wire_end(buf, start);
}

int fl_wire_put_wait_step(fl_wire_buf *buf, uint32_t id, const char *name, uint64_t step)
{
    long start = wire_begin(buf, FL_WIRE_WAIT_STEP, id);
    if (start < 0)
        return -1;
    if (put_name(buf, start, FL_WIRE_WAIT_STEP, "name", name) != 0)
        return -1;
    if (put_u32(buf, (uint32_t)(step >> 32)) != 0 || put_u32(buf, (uint32_t)step) != 0)
        return refuse(buf, start, FL_WIRE_WAIT_STEP, "out of memory");
    return wire_end(buf, start);
}

int fl_wire_put_applied(fl_wire_buf *buf, uint32_t id, uint64_t version)
{
    long start = wire_begin(buf, FL_WIRE_APPLIED, id);
    if (start < 0)
        return -1;
    if (put_u32(buf, (uint32_t)(version >> 32)) != 0 || put_u32(buf, (uint32_t)version) != 0)
        return refuse(buf, start, FL_WIRE_APPLIED, "out of memory");
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
int wire_put_float(fl_wire_buf *buf, float f) { return put_float(buf, f); }

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
