/* fuzz_wire.c: a libFuzzer target for the wire protocol's decoder and parsers (`make fuzz`).
 * Arbitrary bytes are cut into frames and parsed the way a server would; ASan and UBSan
 * catch any read out of bounds, and abort() marks a broken promise of the API:
 * a parsed frame must encode back to a frame of its length and header whose bytes
 * encode again to themselves, and a prefix of a frame must wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/transport/wire.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void check(bool promise, const char *what)
{
    if (!promise) {
        fprintf(stderr, "fuzz_wire: broken promise: %s\n", what);
        abort();
    }
}

/* A parsed tensor back into an fl_tensor, for the encoders; the caller frees data. */
static fl_tensor to_tensor(const fl_wire_tensor *t)
{
    fl_tensor out = {.dtype = t->dtype, .shape = t->shape, .data = malloc(t->bytes ? t->bytes : 1)};
    fl_wire_tensor_read(t, out.data);
    return out;
}

/* The encoder for the message's type, with the parsed fields. */
static int encode_message(fl_wire_buf *buf, const fl_wire_message *m)
{
    uint32_t id = m->request_id;
    switch (m->type) {
    case FL_WIRE_HELLO: return fl_wire_put_hello(buf, id, m->u.hello.job, m->u.hello.task_index);
    case FL_WIRE_HELLO_OK:
        return fl_wire_put_hello_ok(buf, id, m->u.hello.job, m->u.hello.task_index);
    case FL_WIRE_INIT_DONE: return fl_wire_put_init_done(buf, id, m->u.has_value);
    case FL_WIRE_GOODBYE: return fl_wire_put_goodbye(buf, id);
    case FL_WIRE_OK: return fl_wire_put_ok(buf, id);
    case FL_WIRE_ERROR: return fl_wire_put_error(buf, id, m->u.error.code, m->u.error.message);
    case FL_WIRE_IS_INITIALIZED: return fl_wire_put_is_initialized(buf, id, m->u.name);
    case FL_WIRE_CHALLENGE: return fl_wire_put_challenge(buf, id, m->u.handshake.nonce);
    case FL_WIRE_PROOF: return fl_wire_put_proof(buf, id, m->u.handshake.proof, m->u.handshake.nonce);
    case FL_WIRE_SERVER_PROOF: return fl_wire_put_server_proof(buf, id, m->u.handshake.proof);
    default: return -1; /* no other type parses */
    }
}

/* Tensors back into fl_tensors, for the encoders; free with free_tensors. */
static fl_tensor *to_tensors(const fl_wire_tensor *w, int n, const fl_tensor **pointers)
{
    fl_tensor *t = calloc((size_t)n + 1, sizeof *t);
    for (int i = 0; i < n; i++) {
        t[i] = to_tensor(&w[i]);
        pointers[i] = &t[i];
    }
    return t;
}

static void free_tensors(fl_tensor *t, int n)
{
    for (int i = 0; i < n; i++)
        free(t[i].data);
    free(t);
}

static int encode_run_partition(fl_wire_buf *buf, uint32_t id, const fl_wire_run_partition *r)
{
    const fl_tensor **values = calloc((size_t)r->nfeeds + 1, sizeof *values);
    fl_tensor *feeds = to_tensors(r->feed_values, r->nfeeds, values);
    int rc = fl_wire_put_run_partition(buf, id, r->handle, r->step_id, r->flags, r->nfeeds, r->feed_names, values,
                                       r->lists);
    free_tensors(feeds, r->nfeeds);
    free(values);
    return rc;
}

static int encode_partition_done(fl_wire_buf *buf, uint32_t id, const fl_wire_partition_done *d)
{
    const fl_tensor **values = calloc((size_t)d->count + 1, sizeof *values);
    fl_tensor *t = to_tensors(d->values, d->count, values);
    /* the task's timings, encoded again as they came (none: untraced) */
    int rc = fl_wire_put_partition_done(buf, id, d->trace.events ? &d->trace : NULL, d->count, values);
    free_tensors(t, d->count);
    free(values);
    return rc;
}

/* The frames of in-graph replication across tasks (issue 25). */
static int encode_partition_message(fl_wire_buf *buf, const fl_wire_message *m)
{
    uint32_t id = m->request_id;
    if (m->type == FL_WIRE_REGISTER_PARTITION)
        return fl_wire_put_register_partition(buf, id, m->u.body.data, m->u.body.len);
    if (m->type == FL_WIRE_RUN_PARTITION)
        return encode_run_partition(buf, id, &m->u.run);
    if (m->type == FL_WIRE_PARTITION_DONE)
        return encode_partition_done(buf, id, &m->u.done);
    if (m->type != FL_WIRE_SEND_TENSOR)
        return fl_wire_put_number(buf, m->type, id, m->u.number);
    fl_tensor t = to_tensor(&m->u.send.value);
    int rc = fl_wire_put_send_tensor(buf, id, m->u.send.step_id, m->u.send.key, &t);
    free(t.data);
    return rc;
}

static bool is_partition_frame(fl_wire_type type)
{
    return type >= FL_WIRE_REGISTER_PARTITION && type <= FL_WIRE_DEREGISTER_PARTITION;
}

/* The frame parsed (into arena) and encoded again by its type's put into buf:
 * 0, or -1 when the parser refused it (then the error's promises are checked). */
static int reencode(const fl_wire_frame *f, fl_wire_arena *arena, fl_wire_buf *buf)
{
    fl_wire_message m;
    fl_status err = {0};
    if (fl_wire_parse_in(f, arena, &m, &err) != 0) {
        check(strncmp(err.message, fl_wire_type_name(f->type), strlen(fl_wire_type_name(f->type))) == 0,
              "a parse error starts with the frame type");
        check(err.code == FL_DATA_LOSS, "a frame the parsers refuse is DATA_LOSS");
        return -1;
    }
    int encoded = is_partition_frame(f->type) ? encode_partition_message(buf, &m) : encode_message(buf, &m);
    check(encoded == 0, "an accepted message encodes");
    return 0;
}

/* Whatever the parser accepted, the encoder writes back at the same length
 * (the body's size is checked to be the one this build encodes: fields may
 * come in another order, never twice or padded), with the same header; and
 * that encoding is canonical: parsed and encoded again, the same bytes. */
static void check_round_trip(const fl_wire_frame *f, const unsigned char *frame_bytes)
{
    fl_wire_arena *arena = fl_wire_arena_new();
    fl_wire_buf once = {0}, twice = {0};
    fl_wire_frame g;
    fl_status err = {0};
    if (reencode(f, arena, &once) == 0) {
        size_t len = once.len + (once.lent ? once.lent_len : 0);
        check(len == f->frame_len && memcmp(once.data, frame_bytes, FL_WIRE_HEADER_BYTES) == 0,
              "an accepted message encodes to a frame of its length and header");
        check(fl_wire_decode(once.data, once.len, &g, &err) == FL_WIRE_FRAME && reencode(&g, arena, &twice) == 0,
              "the encoding parses");
        check(twice.len == once.len && memcmp(twice.data, once.data, once.len) == 0,
              "and encodes again to the same bytes");
    }
    fl_wire_buf_free(&once);
    fl_wire_buf_free(&twice);
    fl_wire_arena_free(arena);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fl_wire_conn server, client;
    fl_wire_conn_init(&server, FL_WIRE_SERVER_SIDE);
    fl_wire_conn_init(&client, FL_WIRE_CLIENT_SIDE);
    fl_status err = {0};
    size_t at = 0;
    for (;;) {
        fl_wire_frame f;
        fl_wire_status st = fl_wire_decode(data + at, size - at, &f, &err);
        if (st == FL_WIRE_BAD)
            return 0;
        if (st == FL_WIRE_NEED_MORE) {
            check((fl_wire_check_eof(data + at, size - at, &err) == 0) == (at == size),
                  "end of stream is clean exactly when no bytes are left");
            return 0;
        }
        check(f.frame_len >= FL_WIRE_HEADER_BYTES && f.frame_len <= size - at, "a frame lies inside the input");
        fl_wire_frame g;
        check(fl_wire_decode(data + at, f.frame_len - 1, &g, &err) == FL_WIRE_NEED_MORE,
              "a frame less its last byte waits for more");
        check_round_trip(&f, data + at);
        /* An odd HELLO meets a server with a cluster secret, which then asks for a PROOF. */
        if (fl_wire_check_order(&server, f.type, &err) == 0 && f.type == FL_WIRE_HELLO && f.request_id & 1)
            server.stage = FL_WIRE_AWAIT_PROOF;
        fl_wire_check_order(&client, f.type, &err);
        at += f.frame_len;
    }
}
