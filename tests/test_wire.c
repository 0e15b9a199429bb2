/* test_wire.c: chapter 3's wire protocol (src/distributed_runtime/transport/wire.h) on its own, no sockets.
 * Every frame type round trips; the exact bytes of a small frame; every kind of bad
 * input is refused with a message naming what was wrong; random garbage never crashes. */
#include <stdint.h>

#include "distributed_runtime/transport/wire.h"
#include "flowlab.h"
#include "tap.h"

/* Under AddressSanitizer (make SANITIZE=1) a length that reached malloc unchecked
 * fails loudly: no allocation here needs more than a 64 MiB frame. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "max_allocation_size_mb=80"; }

static fl_status err = {0};

/* ---- helpers ---- */

/* A heap copy of exactly len bytes, so ASan sees any read past the end. */
static unsigned char *exact_copy(const void *bytes, size_t len)
{
    unsigned char *copy = malloc(len ? len : 1);
    if (len)
        memcpy(copy, bytes, len);
    return copy;
}

static void put_be32(unsigned char *out, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(v >> (24 - 8 * i));
}

/* A header for type and payload length n, then the payload: built by hand, so
 * the tests can send what no encoder would. Returns the frame's length. */
static size_t craft(unsigned char *out, unsigned type, const void *payload, size_t n)
{
    memcpy(out, "FLWP", 4);
    out[4] = 1;
    out[5] = (unsigned char)type;
    out[6] = out[7] = 0;
    put_be32(out + 8, 77);
    put_be32(out + 12, (uint32_t)n);
    memcpy(out + 16, payload, n);
    return 16 + n;
}

/* Decodes bytes (from an exact heap copy) and parses the frame by its type.
 * Returns the error message, or "accepted". */
static const char *verdict(const void *bytes, size_t len)
{
    static fl_status verdict;
    unsigned char *copy = exact_copy(bytes, len);
    fl_wire_frame f;
    fl_wire_message msg;
    fl_wire_status st = fl_wire_decode(copy, len, &f, &verdict);
    if (st == FL_WIRE_NEED_MORE)
        snprintf(verdict.message, sizeof verdict.message, "need more");
    else if (st == FL_WIRE_FRAME && fl_wire_parse(&f, &msg, &verdict) == 0)
        snprintf(verdict.message, sizeof verdict.message, "accepted");
    free(copy);
    return verdict.message;
}

static const char *crafted(unsigned type, const void *payload, size_t n)
{
    static unsigned char frame[16 + 1024];
    return verdict(frame, craft(frame, type, payload, n));
}

/* Decodes the one frame at the start of buf and parses it; false (with a diag) if not. */
static bool decode_one(const fl_wire_buf *buf, fl_wire_frame *f, fl_wire_message *msg)
{
    if (fl_wire_decode(buf->data, buf->len, f, &err) != FL_WIRE_FRAME) {
        diag("decode: %s", err.message);
        return false;
    }
    if (fl_wire_parse(f, msg, &err) != 0) {
        diag("parse: %s", err.message);
        return false;
    }
    return true;
}

/* ---- round trips ---- */

static void test_hello_round_trip(void)
{
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_wire_message m;
    ok(fl_wire_put_hello(&buf, 1, "worker", 3) == 0, "HELLO encodes");
    ok(decode_one(&buf, &f, &m) && f.frame_len == buf.len && m.type == FL_WIRE_HELLO &&
           m.request_id == 1 && m.u.hello.version == 1 &&
           strcmp(m.u.hello.job, "worker") == 0 && m.u.hello.task_index == 3,
       "HELLO round trips: worker, task 3, version 1, request 1");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_hello_ok(&buf, 1, "ps", 0) == 0, "HELLO_OK encodes");
    ok(decode_one(&buf, &f, &m) && m.type == FL_WIRE_HELLO_OK && strcmp(m.u.hello.job, "ps") == 0 &&
           m.u.hello.task_index == 0,
       "HELLO_OK round trips: ps, task 0");
    fl_wire_buf_free(&buf);
}

static bool same_tensor(const fl_wire_tensor *t, const fl_tensor *want)
{
    if (t->dtype != want->dtype || !fl_shape_equal(t->shape, want->shape))
        return false;
    void *values = malloc(t->bytes ? t->bytes : 1);
    fl_wire_tensor_read(t, values);
    bool same = t->bytes == 4 * (size_t)fl_shape_size(want->shape) &&
                memcmp(values, want->data, t->bytes) == 0;
    free(values);
    return same;
}

static void test_named_tensor_round_trips(void)
{
    const float values[6] = {1.5f, -2, 0, 3.25f, 1e-30f, -7};
    fl_tensor *w = fl_tensor_from_floats(fl_shape_make(2, 2, 3), values);
    const int32_t step[1] = {1};
    fl_tensor *one = fl_tensor_from_ints(fl_shape_make(0), step);
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_wire_message m;

    ok(fl_wire_put_init_variable(&buf, 2, "dense/kernel", w) == 0, "INIT_VARIABLE encodes");
    ok(decode_one(&buf, &f, &m) && m.type == FL_WIRE_INIT_VARIABLE &&
           strcmp(m.u.named.name, "dense/kernel") == 0 && same_tensor(&m.u.named.tensor, w),
       "INIT_VARIABLE round trips: name, float32 [2,3] and its values");
    fl_wire_buf_free(&buf);

    ok(fl_wire_put_value(&buf, 3, "dense/kernel", w) == 0, "VALUE encodes");
    ok(decode_one(&buf, &f, &m) && m.type == FL_WIRE_VALUE && m.request_id == 3 &&
           same_tensor(&m.u.named.tensor, w),
       "VALUE round trips");
    fl_wire_buf_free(&buf);

    ok(fl_wire_put_assign_add(&buf, 4, "global_step", one) == 0, "ASSIGN_ADD encodes");
    ok(decode_one(&buf, &f, &m) && m.type == FL_WIRE_ASSIGN_ADD &&
           strcmp(m.u.named.name, "global_step") == 0 && m.u.named.tensor.shape.rank == 0 &&
           m.u.named.tensor.count == 1 && same_tensor(&m.u.named.tensor, one),
       "ASSIGN_ADD round trips an int32 scalar");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_assign(&buf, 5, "beta1_power", w) == 0, "ASSIGN encodes");
    ok(decode_one(&buf, &f, &m) && m.type == FL_WIRE_ASSIGN && strcmp(m.u.named.name, "beta1_power") == 0 &&
           same_tensor(&m.u.named.tensor, w),
       "ASSIGN round trips a float tensor");
    ok(fl_wire_reply_type(FL_WIRE_ASSIGN) == FL_WIRE_OK, "ASSIGN is answered by OK");
    fl_wire_buf_free(&buf);
    fl_tensor_free(w);
    fl_tensor_free(one);
}

static void test_apply_round_trips(void)
{
    const float g[3] = {0.5f, -0.25f, 2};
    fl_tensor *grad = fl_tensor_from_floats(fl_shape_make(1, 3), g);
    const fl_wire_optimizer_args opts[3] = {
        {.kind = FL_WIRE_GRADIENT_DESCENT, .learning_rate = 0.1f},
        {.kind = FL_WIRE_MOMENTUM, .learning_rate = 0.01f, .momentum = 0.9f, .use_nesterov = true,
         .nslots = 1, .slots = {"dense/bias/Momentum"}},
        {.kind = FL_WIRE_ADAM, .learning_rate = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-8f,
         .nslots = 4, .slots = {"dense/bias/Adam", "dense/bias/Adam_1", "beta1_power", "beta2_power"}},
    };
    for (int i = 0; i < 3; i++) {
        fl_wire_buf buf = {0};
        fl_wire_frame f;
        fl_wire_message m;
        ok(fl_wire_put_apply(&buf, 10 + (uint32_t)i, "dense/bias", &opts[i], grad) == 0,
           "APPLY with %s encodes", fl_wire_optimizer_name(i));
        bool same = decode_one(&buf, &f, &m) && m.type == FL_WIRE_APPLY &&
                    strcmp(m.u.apply.name, "dense/bias") == 0 &&
                    memcmp(&m.u.apply.opt, &opts[i], sizeof opts[i]) == 0 &&
                    same_tensor(&m.u.apply.grad, grad);
        ok(same, "APPLY with %s round trips: every hyper-parameter, slot name and the gradient",
           fl_wire_optimizer_name(i));
        fl_wire_buf_free(&buf);
    }
    fl_tensor_free(grad);
}

static void test_small_round_trips(void)
{
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_wire_message m;
    ok(fl_wire_put_init_done(&buf, 5, true) == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_INIT_DONE && m.u.already_initialized,
       "INIT_DONE round trips 'already initialised'");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_pull(&buf, 6, "conv1/w:0") == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_PULL && strcmp(m.u.name, "conv1/w:0") == 0,
       "PULL round trips");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_applied(&buf, 7, 0x123456789abcULL) == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_APPLIED && m.u.version == 0x123456789abcULL,
       "APPLIED round trips a version above 2^32");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_goodbye(&buf, 8) == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_GOODBYE && f.payload_len == 0,
       "GOODBYE round trips with an empty payload");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_ok(&buf, 9) == 0 && decode_one(&buf, &f, &m) && m.type == FL_WIRE_OK &&
           m.request_id == 9,
       "OK round trips");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_error(&buf, 10, FL_WIRE_E_UNKNOWN_VARIABLE, "no variable 'x' on /job:ps/task:0") == 0 &&
           decode_one(&buf, &f, &m) && m.type == FL_WIRE_ERROR &&
           m.u.error.code == FL_WIRE_E_UNKNOWN_VARIABLE &&
           strcmp(m.u.error.message, "no variable 'x' on /job:ps/task:0") == 0,
       "ERROR round trips its code and message");
    fl_wire_buf_free(&buf);
}

/* Chapter 4's frames: synchronous updates, the step's token, the ready check. */
static void test_sync_round_trips(void)
{
    const float g[2] = {1.5f, -3};
    fl_tensor *grad = fl_tensor_from_floats(fl_shape_make(1, 2), g);
    const fl_wire_optimizer_args sgd = {.kind = FL_WIRE_GRADIENT_DESCENT, .learning_rate = 0.5f};
    const fl_wire_sync sync = {0x100000007ULL, 3};
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_wire_message m;
    ok(fl_wire_put_sync_apply(&buf, 1, &sync, "w", &sgd, grad) == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_SYNC_APPLY && m.sync.step == sync.step && m.sync.replicas == 3 &&
           strcmp(m.u.apply.name, "w") == 0 && same_tensor(&m.u.apply.grad, grad),
       "SYNC_APPLY round trips its step above 2^32, its replicas and the gradient");
    fl_wire_buf_free(&buf);
    fl_wire_sync unknown = {FL_WIRE_STEP_UNKNOWN, 2};
    ok(fl_wire_put_sync_assignment(&buf, FL_WIRE_SYNC_ASSIGN_ADD, 2, &unknown, "global_step", grad) == 0 &&
           decode_one(&buf, &f, &m) && m.type == FL_WIRE_SYNC_ASSIGN_ADD && m.sync.step == FL_WIRE_STEP_UNKNOWN &&
           strcmp(m.u.named.name, "global_step") == 0,
       "SYNC_ASSIGN_ADD round trips an unknown step");
    fl_wire_buf_free(&buf);
    fl_wire_sync none = {5, 0};
    ok(fl_wire_put_sync_assignment(&buf, FL_WIRE_SYNC_ASSIGN, 3, &none, "w", grad) == -1 && buf.len == 0,
       "a synchronous update for 0 replicas is refused by the encoder");
    contains(buf.error, "replicas to aggregate", "saying why");
    ok(fl_wire_put_sync_done(&buf, 4, FL_WIRE_SYNC_DROPPED) == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_SYNC_DONE && m.u.outcome == FL_WIRE_SYNC_DROPPED,
       "SYNC_DONE round trips 'dropped'");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_wait_step(&buf, 5, "global_step", 41) == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_WAIT_STEP && m.u.wait.step == 41 && strcmp(m.u.wait.name, "global_step") == 0,
       "WAIT_STEP round trips");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_is_initialized(&buf, 6, "conv_1/weights") == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_IS_INITIALIZED && strcmp(m.u.name, "conv_1/weights") == 0,
       "IS_INITIALIZED round trips");
    fl_wire_buf_free(&buf);
    ok(fl_wire_reply_type(FL_WIRE_SYNC_APPLY) == FL_WIRE_SYNC_DONE &&
           fl_wire_reply_type(FL_WIRE_WAIT_STEP) == FL_WIRE_VALUE &&
           fl_wire_reply_type(FL_WIRE_IS_INITIALIZED) == FL_WIRE_INIT_DONE,
       "each new request has its reply type");
    const unsigned char zero_replicas[12] = {0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0};
    contains(crafted(FL_WIRE_SYNC_ASSIGN, zero_replicas, sizeof zero_replicas), "replicas to aggregate 0",
             "a SYNC_ASSIGN for 0 replicas is refused by the parser");
    const unsigned char bad_outcome[1] = {7};
    contains(crafted(FL_WIRE_SYNC_DONE, bad_outcome, 1), "outcome 7 unknown", "an unknown SYNC_DONE outcome is refused");
    fl_tensor_free(grad);
}

/* Chapter 1's largest variable, 3136x1024 floats, fits in one frame. */
static void test_largest_variable(void)
{
    fl_tensor *big = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, 3136, 1024));
    float *v = fl_tensor_floats(big);
    v[0] = 1.0f;
    v[3136 * 1024 - 1] = -3.0f;
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_wire_message m;
    ok(fl_wire_put_value(&buf, 1, "fc1/kernel", big) == 0, "a 12.8 MB VALUE encodes");
    ok(decode_one(&buf, &f, &m) && same_tensor(&m.u.named.tensor, big),
       "and round trips, first and last element included");
    fl_wire_buf_free(&buf);
    fl_tensor_free(big);
}

/* ---- the exact bytes, and frames arriving in pieces ---- */

static void test_exact_bytes(void)
{
    const unsigned char want[] = {'F', 'L', 'W', 'P', 1, 5, 0, 0, 0, 0, 1, 2,
                                  0, 0, 0, 2, 1, 'a'};
    fl_wire_buf buf = {0};
    fl_wire_put_pull(&buf, 0x102, "a");
    ok(buf.len == sizeof want && memcmp(buf.data, want, sizeof want) == 0,
       "PULL 'a' with request id 0x102 is exactly the 18 bytes of the appendix");
    fl_wire_buf_free(&buf);
}

static void test_streaming(void)
{
    fl_wire_buf buf = {0};
    fl_wire_put_hello(&buf, 1, "worker", 0);
    size_t first = buf.len;
    fl_wire_put_pull(&buf, 2, "w");
    fl_wire_frame f;
    bool all_wait = true;
    for (size_t n = 0; n < first; n++) {
        unsigned char *part = exact_copy(buf.data, n);
        if (fl_wire_decode(part, n, &f, &err) != FL_WIRE_NEED_MORE)
            all_wait = false;
        free(part);
    }
    ok(all_wait, "every proper prefix of a valid frame asks for more bytes");
    ok(fl_wire_decode(buf.data, buf.len, &f, &err) == FL_WIRE_FRAME &&
           f.frame_len == first && f.type == FL_WIRE_HELLO,
       "two frames in one buffer: the first is cut off alone");
    fl_wire_buf_consume(&buf, f.frame_len);
    ok(fl_wire_decode(buf.data, buf.len, &f, &err) == FL_WIRE_FRAME &&
           f.type == FL_WIRE_PULL && f.frame_len == buf.len,
       "after consuming it, the second");
    ok(fl_wire_check_eof(buf.data, 0, &err) == 0, "end of stream between frames is fine");
    fl_wire_buf_free(&buf);
}

/* ---- bad headers ---- */

static void test_bad_headers(void)
{
    const char http[] = "GET / HTTP/1.1\r\n";
    contains(verdict(http, 16), "bad magic 0x47455420 (\"GET \"), expected 0x464c5750 (\"FLWP\")",
             "an HTTP request: bad magic, shown as hex and text");
    contains(verdict("FX", 2), "bad magic 0x4658", "a wrong second byte is refused at once");
    is_string(verdict("FLW", 3), "need more", "3 good magic bytes wait for more");

    unsigned char h[16 + 300];
    memset(h, 0, sizeof h);
    craft(h, FL_WIRE_PULL, "\1a", 2);
    h[4] = 7;
    is_string(verdict(h, 18), "version 7 not supported (this build speaks version 1)",
              "version 7 is refused");
    is_string(verdict(h, 5), "version 7 not supported (this build speaks version 1)",
              "as soon as its byte arrives");
    craft(h, 99, "", 0);
    is_string(verdict(h, 16), "unknown frame type 99", "an unknown type is refused");
    craft(h, 0, "", 0);
    is_string(verdict(h, 16), "unknown frame type 0", "type 0 is refused");
    craft(h, FL_WIRE_PULL, "\1a", 2);
    h[7] = 1;
    is_string(verdict(h, 18), "PULL: flags 0x0001 not supported (must be 0)", "nonzero flags are refused");

    craft(h, FL_WIRE_VALUE, "", 0);
    put_be32(h + 12, 100000000);
    is_string(verdict(h, 16), "VALUE: payload length 100000000 over the 67108864 limit",
              "a length over the limit is refused from the header alone");
    craft(h, FL_WIRE_PULL, "", 0);
    put_be32(h + 12, 300);
    is_string(verdict(h, 16), "PULL: payload length 300 over the 256 limit for this frame type",
              "a PULL longer than any name is refused before its payload arrives");
    craft(h, FL_WIRE_GOODBYE, "x", 1);
    is_string(verdict(h, 17), "GOODBYE: payload length 1 over the 0 limit for this frame type",
              "a GOODBYE with a payload is refused");
}

static void test_truncated(void)
{
    fl_wire_buf buf = {0};
    const float v[4] = {1, 2, 3, 4};
    fl_tensor *t = fl_tensor_from_floats(fl_shape_make(1, 4), v);
    fl_wire_put_value(&buf, 1, "w", t);
    fl_wire_frame f;
    ok(fl_wire_decode(buf.data, 7, &f, &err) == FL_WIRE_NEED_MORE,
       "a truncated header waits for more");
    ok(fl_wire_check_eof(buf.data, 7, &err) == -1, "end of stream there is an error");
    is_string(err.message, "connection closed inside a frame header (7 of 16 bytes)", "naming how far it got");
    ok(err.code == FL_DATA_LOSS, "a stream cut inside a frame is DATA_LOSS");
    ok(fl_wire_decode(buf.data, buf.len - 1, &f, &err) == FL_WIRE_NEED_MORE,
       "a truncated payload waits for more");
    fl_wire_check_eof(buf.data, buf.len - 1, &err);
    is_string(err.message, "connection closed inside a VALUE payload (27 of 28 bytes)",
              "end of stream in the payload names the type and the bytes");
    fl_wire_buf_free(&buf);
    fl_tensor_free(t);
}

/* ---- bad payloads ---- */

static void test_bad_names(void)
{
    is_string(crafted(FL_WIRE_PULL, "\3a\nb", 4), "PULL: name is not printable (byte 0x0a at offset 1)",
              "a newline in a name");
    is_string(crafted(FL_WIRE_PULL, "\3a b", 4), "PULL: name is not printable (byte 0x20 at offset 1)",
              "a space in a name");
    is_string(crafted(FL_WIRE_PULL, "\0", 1), "PULL: name is empty", "an empty name");
    is_string(crafted(FL_WIRE_PULL, "\310abc", 4),
              "PULL: payload ends inside the name (needs 200 bytes, 3 left)",
              "a name longer than the payload");
    is_string(crafted(FL_WIRE_PULL, "", 0), "PULL: payload ends inside the name (needs 1 bytes, 0 left)",
              "no name at all");
    is_string(crafted(FL_WIRE_PULL, "\1ab", 3), "PULL: 1 trailing byte after the last field",
              "trailing bytes after a PULL");
    is_string(crafted(FL_WIRE_HELLO, "\1\0\0\0\0\0", 6), "HELLO: job name is empty",
              "HELLO with no job name");
    is_string(crafted(FL_WIRE_HELLO, "\2\2ps\0\0\0\0", 8),
              "HELLO: protocol version 2 not supported (this build speaks version 1)",
              "HELLO from a newer client");
    is_string(crafted(FL_WIRE_HELLO, "\1\2ps\0\1\21\160", 8), "HELLO: task index 70000 over the 65535 limit",
              "HELLO with a task index out of range");
}

/* A named tensor payload "w", dtype, rank, dims, data length, then data bytes. */
static size_t tensor_payload(unsigned char *out, unsigned dtype, unsigned rank, const int32_t *dims,
                             uint32_t data_len, size_t data_bytes)
{
    size_t n = 0;
    out[n++] = 1;
    out[n++] = 'w';
    out[n++] = (unsigned char)dtype;
    out[n++] = (unsigned char)rank;
    for (unsigned i = 0; i < rank; i++, n += 4)
        put_be32(out + n, (uint32_t)dims[i]);
    put_be32(out + n, data_len);
    n += 4;
    memset(out + n, 0, data_bytes);
    return n + data_bytes;
}

/* One malformed tensor frame: the fields tensor_payload writes, where to cut the
 * payload short (0: nowhere), the message wanted and what the case is about. */
typedef struct {
    fl_wire_type type;
    unsigned dtype, rank;
    int32_t dims[5];
    uint32_t data_len;
    size_t data_bytes, cut;
    const char *want, *what;
} tensor_case;

static const tensor_case TENSOR_CASES[] = {
    {FL_WIRE_INIT_VARIABLE, 0, 2, {3, 4}, 48, 48, 0, "accepted", "a well-formed float32 [3,4] is accepted"},
    {FL_WIRE_INIT_VARIABLE, 0, 2, {3, -1}, 48, 48, 0,
     "INIT_VARIABLE: shape [3,-1] has a non-positive dimension", "a dimension of -1"},
    {FL_WIRE_VALUE, 0, 2, {3, 0}, 0, 0, 0, "VALUE: shape [3,0] has a non-positive dimension",
     "a dimension of 0"},
    {FL_WIRE_VALUE, 0, 5, {1, 1, 1, 1, 1}, 4, 4, 0, "VALUE: rank 5 over the limit of 4", "rank 5"},
    {FL_WIRE_VALUE, 0, 2, {65536, 65536}, 0, 0, 0,
     "VALUE: shape [65536,65536] has more than 16777216 elements, over the 67108864-byte limit",
     "a shape too big for any frame"},
    {FL_WIRE_VALUE, 2, 2, {3, 4}, 48, 48, 0, "VALUE: dtype 2 is neither 0 (float32) nor 1 (int32)",
     "an unknown dtype"},
    {FL_WIRE_VALUE, 0, 2, {3, 4}, 40, 40, 0,
     "VALUE: float32 [3,4] needs 48 data bytes, the frame says 40",
     "a data length that does not match the shape"},
    {FL_WIRE_ASSIGN_ADD, 1, 2, {3, 4}, 48, 40, 0,
     "ASSIGN_ADD: payload ends inside the tensor data (needs 48 bytes, 40 left)",
     "fewer data bytes than the data length says"},
    {FL_WIRE_VALUE, 0, 2, {3, 4}, 48, 50, 0, "VALUE: 2 trailing bytes after the last field",
     "bytes after the tensor data"},
    {FL_WIRE_VALUE, 0, 2, {3, 4}, 48, 48, 7,
     "VALUE: payload ends inside the shape (needs 4 bytes, 3 left)", "a payload that stops inside the dims"},
};

static void test_bad_tensors(void)
{
    unsigned char p[256];
    for (size_t i = 0; i < sizeof TENSOR_CASES / sizeof TENSOR_CASES[0]; i++) {
        const tensor_case *c = &TENSOR_CASES[i];
        size_t n = tensor_payload(p, c->dtype, c->rank, c->dims, c->data_len, c->data_bytes);
        is_string(crafted(c->type, p, c->cut ? c->cut : n), c->want, c->what);
    }
}

/* An APPLY payload "w", kind, count, the floats, the kind's slot names ("s"), then a
 * float32 [1] gradient. */
static size_t apply_payload(unsigned char *out, unsigned kind, unsigned count, const float *hyper,
                            unsigned grad_dtype)
{
    size_t n = 0;
    out[n++] = 1;
    out[n++] = 'w';
    out[n++] = (unsigned char)kind;
    out[n++] = (unsigned char)count;
    for (unsigned i = 0; i < count; i++, n += 4) {
        uint32_t bits;
        memcpy(&bits, &hyper[i], 4);
        put_be32(out + n, bits);
    }
    unsigned slots = kind == 2 ? 4 : kind == 1 ? 1 : 0;
    out[n++] = (unsigned char)slots;
    for (unsigned i = 0; i < slots; i++) {
        out[n++] = 1;
        out[n++] = 's';
    }
    const unsigned char grad[] = {(unsigned char)grad_dtype, 1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0};
    memcpy(out + n, grad, sizeof grad);
    return n + sizeof grad;
}

static void test_bad_apply(void)
{
    unsigned char p[128];
    const float good[3] = {0.1f, 0.9f, 1.0f}, half[3] = {0.1f, 0.9f, 0.5f};
    const float nan_lr[1] = {NAN};
    is_string(crafted(FL_WIRE_APPLY, p, apply_payload(p, 1, 3, good, 0)), "accepted",
              "a well-formed Momentum APPLY is accepted");
    size_t n = apply_payload(p, 1, 3, good, 0);
    p[16] = 0; /* after "w", kind, count and three floats: the slot count */
    is_string(crafted(FL_WIRE_APPLY, p, n), "APPLY: Momentum takes 1 slot name, the frame has 0",
              "a Momentum APPLY without its accumulator's name");
    is_string(crafted(FL_WIRE_APPLY, p, apply_payload(p, 1, 2, good, 0)),
              "APPLY: Momentum takes 3 hyper-parameters, the frame has 2", "a wrong hyper-parameter count");
    is_string(crafted(FL_WIRE_APPLY, p, apply_payload(p, 3, 1, good, 0)),
              "APPLY: optimizer kind 3 unknown (0 GradientDescent, 1 Momentum, 2 Adam)",
              "an unknown optimizer");
    is_string(crafted(FL_WIRE_APPLY, p, apply_payload(p, 0, 1, nan_lr, 0)),
              "APPLY: GradientDescent hyper-parameter 0 is not finite", "a NaN learning rate");
    is_string(crafted(FL_WIRE_APPLY, p, apply_payload(p, 1, 3, half, 0)),
              "APPLY: Momentum's use_nesterov must be 0 or 1, got 0.5", "use_nesterov 0.5");
    is_string(crafted(FL_WIRE_APPLY, p, apply_payload(p, 0, 1, good, 1)),
              "APPLY: the gradient is int32; optimizers take float32", "an int32 gradient");
}

static void test_bad_small_frames(void)
{
    is_string(crafted(FL_WIRE_INIT_DONE, "\2", 1),
              "INIT_DONE: flag 2 must be 0 (assigned now) or 1 (already initialised)", "INIT_DONE flag 2");
    is_string(crafted(FL_WIRE_APPLIED, "\0\0\0\0\0\0\0", 7),
              "APPLIED: payload ends inside the version (needs 4 bytes, 3 left)", "a short APPLIED");
    is_string(crafted(FL_WIRE_ERROR, "\0\0\0\0", 4), "ERROR: unknown error code 0", "error code 0");
    is_string(crafted(FL_WIRE_ERROR, "\0\1\0\2a\033", 6),
              "ERROR: message is not printable (byte 0x1b at offset 1)", "an escape byte in a message");
    is_string(crafted(FL_WIRE_ERROR, "\0\1\0\5ab", 6),
              "ERROR: payload ends inside the message (needs 5 bytes, 2 left)", "a message cut short");

    unsigned char frame[32];
    fl_wire_frame f;
    char name[FL_WIRE_MAX_NAME + 1];
    fl_wire_decode(frame, craft(frame, FL_WIRE_VALUE, "\1a", 2), &f, &err);
    ok(fl_wire_parse_pull(&f, name, &err) == -1, "the PULL parser refuses a VALUE frame");
    is_string(err.message, "VALUE: not a frame for the name-only parser", "and says so");
    ok(err.code == FL_DATA_LOSS, "a frame a parser refuses is DATA_LOSS");
}

/* ---- encoders refuse what parsers would ---- */

static void test_encoder_refusals(void)
{
    fl_wire_buf buf = {0};
    fl_wire_put_ok(&buf, 1);
    size_t before = buf.len;
    ok(fl_wire_put_pull(&buf, 2, "bad name") == -1 && buf.len == before,
       "a name with a space is refused and the buffer is left as it was");
    is_string(buf.error, "PULL: name is not printable (byte 0x20 at offset 3)", "with the parser's words");
    char long_name[300];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[299] = '\0';
    ok(fl_wire_put_pull(&buf, 2, long_name) == -1 && buf.len == before, "a 299-byte name is refused");
    is_string(buf.error, "PULL: name is 299 bytes, over the 255 limit", "naming the limit");
    fl_tensor unknown = {.dtype = FL_FLOAT32, .shape = {2, {-1, 4}}, .data = buf.data};
    ok(fl_wire_put_value(&buf, 3, "w", &unknown) == -1 && buf.len == before,
       "a shape with an unknown dimension is refused");
    is_string(buf.error, "VALUE: shape [-1,4] has a non-positive dimension", "naming the shape");
    fl_tensor huge = {.dtype = FL_FLOAT32, .shape = {3, {4096, 4096, 2}}, .data = buf.data}; /* data never read */
    ok(fl_wire_put_value(&buf, 3, "w", &huge) == -1 && buf.len == before,
       "a 128 MiB tensor is refused before its data is read");
    fl_wire_optimizer_args sgd = {.kind = FL_WIRE_GRADIENT_DESCENT, .learning_rate = INFINITY};
    const float g[1] = {1};
    fl_tensor *grad = fl_tensor_from_floats(fl_shape_make(1, 1), g);
    ok(fl_wire_put_apply(&buf, 4, "w", &sgd, grad) == -1 && buf.len == before,
       "an infinite learning rate is refused");
    fl_wire_optimizer_args adam_without_slots = {.kind = FL_WIRE_ADAM, .learning_rate = 0.1f};
    ok(fl_wire_put_apply(&buf, 4, "w", &adam_without_slots, grad) == -1 && buf.len == before,
       "an Adam APPLY without its slot names is refused");
    is_string(buf.error, "APPLY: Adam takes 4 slot names, not 0", "saying how many it takes");
    ok(fl_wire_put_hello(&buf, 5, "worker", 65536) == -1 && buf.len == before,
       "a task index over 65535 is refused");
    fl_wire_buf_free(&buf);

    char message[1200];
    memset(message, 'm', sizeof message - 1);
    message[sizeof message - 1] = '\0';
    message[0] = '\n';
    fl_wire_frame f;
    fl_wire_message m;
    ok(fl_wire_put_error(&buf, 6, FL_WIRE_E_BAD_FRAME, message) == 0 && decode_one(&buf, &f, &m) &&
           strlen(m.u.error.message) == FL_WIRE_MAX_MESSAGE && m.u.error.message[0] == '?',
       "an ERROR message is cut to 1024 bytes and its control bytes become '?'");
    fl_wire_buf_free(&buf);
    fl_tensor_free(grad);
}

/* ---- the order of frames ---- */

static void test_order(void)
{
    fl_wire_conn c;
    fl_wire_conn_init(&c, FL_WIRE_SERVER_SIDE);
    ok(fl_wire_check_order(&c, FL_WIRE_PULL, &err) == -1, "server: PULL before HELLO is refused");
    is_string(err.message, "PULL before HELLO: a connection starts with HELLO", "saying what comes first");
    ok(err.code == FL_FAILED_PRECONDITION, "a frame out of order is FAILED_PRECONDITION, set where it is seen");
    ok(fl_wire_check_order(&c, FL_WIRE_HELLO, &err) == 0, "server: HELLO first is fine");
    ok(fl_wire_check_order(&c, FL_WIRE_HELLO, &err) == -1, "server: a second HELLO is refused");
    is_string(err.message, "HELLO twice on one connection", "saying so");
    ok(fl_wire_check_order(&c, FL_WIRE_VALUE, &err) == -1, "server: a reply type is refused");
    is_string(err.message, "VALUE is a reply; a client sends requests", "saying who sends what");
    bool requests = true;
    const fl_wire_type in_turn[] = {FL_WIRE_INIT_VARIABLE, FL_WIRE_PULL, FL_WIRE_APPLY,
                                    FL_WIRE_ASSIGN_ADD, FL_WIRE_GOODBYE};
    for (int i = 0; i < 5; i++)
        requests = requests && fl_wire_check_order(&c, in_turn[i], &err) == 0;
    ok(requests, "server: every request after HELLO, then GOODBYE, is fine");
    ok(fl_wire_check_order(&c, FL_WIRE_PULL, &err) == -1, "server: PULL after GOODBYE is refused");
    is_string(err.message, "PULL after GOODBYE: the connection is finished", "saying the connection is done");

    fl_wire_conn_init(&c, FL_WIRE_CLIENT_SIDE);
    ok(fl_wire_check_order(&c, FL_WIRE_VALUE, &err) == -1, "client: VALUE before HELLO_OK is refused");
    is_string(err.message, "VALUE before HELLO_OK: the server answers HELLO first", "saying so");
    ok(fl_wire_check_order(&c, FL_WIRE_ERROR, &err) == 0, "client: ERROR may answer HELLO");
    ok(fl_wire_check_order(&c, FL_WIRE_HELLO_OK, &err) == 0 &&
           fl_wire_check_order(&c, FL_WIRE_VALUE, &err) == 0,
       "client: HELLO_OK, then replies, are fine");
    ok(fl_wire_check_order(&c, FL_WIRE_PULL, &err) == -1, "client: a request type is refused");
    is_string(err.message, "PULL is a request; a server sends replies", "saying who sends what");
    ok(fl_wire_reply_type(FL_WIRE_ASSIGN_ADD) == FL_WIRE_VALUE && fl_wire_reply_type(FL_WIRE_OK) == 0,
       "ASSIGN_ADD is answered by VALUE; OK answers nothing");
}

/* ---- garbage ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint32_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static void test_garbage(void)
{
    int refused = 0, tries = 20000, mutants_ok = 0;
    unsigned char bytes[300];
    for (int i = 0; i < tries; i++) {
        size_t len = 1 + next_random() % sizeof bytes;
        for (size_t k = 0; k < len; k++)
            bytes[k] = (unsigned char)next_random();
        bytes[0] = bytes[0] == 'F' ? 'G' : bytes[0];
        refused += strncmp(verdict(bytes, len), "bad magic", 9) == 0;
    }
    ok(refused == tries, "%d random buffers not starting with 'F': all refused as bad magic (%d)", tries,
       refused);

    /* A valid APPLY with one to four bytes changed: accepted or refused, never a crash;
     * a refusal names the frame or the header field. */
    fl_wire_buf buf = {0};
    const float g[2] = {1, 2};
    fl_tensor *grad = fl_tensor_from_floats(fl_shape_make(1, 2), g);
    fl_wire_optimizer_args adam = {.kind = FL_WIRE_ADAM, .learning_rate = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-8f, .nslots = 4, .slots = {"dense/kernel/Adam", "dense/kernel/Adam_1", "beta1_power", "beta2_power"}};
    fl_wire_put_apply(&buf, 1, "dense/kernel", &adam, grad);
    for (int i = 0; i < tries; i++) {
        memcpy(bytes, buf.data, buf.len);
        for (uint32_t k = 0, n = 1 + next_random() % 4; k < n; k++)
            bytes[next_random() % buf.len] = (unsigned char)next_random();
        const char *v = verdict(bytes, buf.len);
        mutants_ok += strcmp(v, "accepted") == 0 || strcmp(v, "need more") == 0 ||
                      strstr(v, ": ") != NULL || strncmp(v, "bad magic", 9) == 0 ||
                      strncmp(v, "version", 7) == 0 || strncmp(v, "unknown frame type", 18) == 0;
    }
    ok(mutants_ok == tries, "%d mutated APPLY frames: each accepted, waiting, or refused with a reason (%d)",
       tries, mutants_ok);
    fl_wire_buf_free(&buf);
    fl_tensor_free(grad);
}

int main(void)
{
    test_hello_round_trip();
    test_named_tensor_round_trips();
    test_apply_round_trips();
    test_small_round_trips();
    test_sync_round_trips();
    test_largest_variable();
    test_exact_bytes();
    test_streaming();
    test_bad_headers();
    test_truncated();
    test_bad_names();
    test_bad_tensors();
    test_bad_apply();
    test_bad_small_frames();
    test_encoder_refusals();
    test_order();
    test_garbage();
    return done_testing();
}
