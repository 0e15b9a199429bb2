/* fuzz_wire.c: a libFuzzer target for the wire protocol's decoder and parsers (`make fuzz`).
 * Arbitrary bytes are cut into frames and parsed the way a server would; ASan and UBSan
 * catch any read out of bounds, and abort() marks a broken promise of the API:
 * a parsed frame must encode back to the same bytes, and a prefix of a frame must wait. */
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

static int encode_run_partition(fl_wire_buf *buf, const fl_wire_frame *f)
{
    fl_wire_run_partition r;
    fl_status err = {0};
    check(fl_wire_parse_run_partition(f, &r, &err) == 0, "RUN_PARTITION parses as fl_wire_parse said");
    const fl_tensor **values = calloc((size_t)r.nfeeds + 1, sizeof *values);
    fl_tensor *feeds = to_tensors(r.feed_values, r.nfeeds, values);
    int rc = fl_wire_put_run_partition(buf, f->request_id, r.handle, r.step_id, r.flags, r.nfeeds, r.feed_names, values, r.lists);
    free_tensors(feeds, r.nfeeds);
    free(values);
    fl_wire_run_partition_free(&r);
    return rc;
}

static int encode_partition_done(fl_wire_buf *buf, const fl_wire_frame *f)
{
    fl_wire_tensor *w;
    int n;
    fl_status err = {0};
    fl_wire_step_trace trace; /* the task's timings, encoded again as they came */
    check(fl_wire_parse_partition_done(f, &w, &n, &trace, &err) == 0, "PARTITION_DONE parses as fl_wire_parse said");
    const fl_tensor **values = calloc((size_t)n + 1, sizeof *values);
    fl_tensor *t = to_tensors(w, n, values);
    int rc = fl_wire_put_partition_done(buf, f->request_id, &trace, n, values);
    fl_wire_step_trace_free(&trace);
    free_tensors(t, n);
    free(values);
    free(w);
    return rc;
}

/* The frames of in-graph replication across tasks (issue 25). */
static int encode_partition_message(fl_wire_buf *buf, const fl_wire_frame *f, const fl_wire_message *m)
{
    uint32_t id = m->request_id;
    if (m->type == FL_WIRE_REGISTER_PARTITION)
        return fl_wire_put_register_partition(buf, id, m->u.body.data, m->u.body.len);
    if (m->type == FL_WIRE_RUN_PARTITION)
        return encode_run_partition(buf, f);
    if (m->type == FL_WIRE_PARTITION_DONE)
        return encode_partition_done(buf, f);
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

/* Whatever the parser accepted, the encoder must write back byte for byte: the
 * format has one spelling for each message, so sender and receiver cannot disagree. */
static void check_round_trip(const fl_wire_frame *f, const unsigned char *frame_bytes)
{
    fl_wire_message m;
    fl_status err = {0};
    if (fl_wire_parse(f, &m, &err) != 0) {
        check(strncmp(err.message, fl_wire_type_name(f->type), strlen(fl_wire_type_name(f->type))) == 0,
              "a parse error starts with the frame type");
        check(err.code == FL_DATA_LOSS, "a frame the parsers refuse is DATA_LOSS");
        return;
    }
    fl_wire_buf buf = {0};
    int encoded = is_partition_frame(f->type) ? encode_partition_message(&buf, f, &m) : encode_message(&buf, &m);
    check(encoded == 0, "an accepted message encodes");
    check(buf.len == f->frame_len && memcmp(buf.data, frame_bytes, buf.len) == 0,
          "an accepted message encodes to the same bytes");
    fl_wire_buf_free(&buf);
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
