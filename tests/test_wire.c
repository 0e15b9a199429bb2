/* test_wire.c: chapter 3's wire protocol (src/distributed_runtime/transport/wire.h) on its own, no sockets.
 * Every frame type round trips; the exact bytes of a small frame; every kind of bad
 * input is refused with a message naming what was wrong; random garbage never crashes.
 * Bad bodies are packed with protobuf-c alone (wire.proto's messages), which checks nothing. */
#include <stdint.h>

#include "distributed_runtime/transport/wire.h"
#include "flowlab.h"
#include "tap.h"
#include "wire.pb-c.h" /* build/gen/distributed_runtime/ */

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

/* A header for type, body length n and a tail of `tail` zero bytes, then the
 * body and the tail: built by hand, so the tests can send what no encoder
 * would. Returns the frame's length. */
static size_t craft_tail(unsigned char *out, unsigned type, const void *body, size_t n, size_t tail)
{
    memcpy(out, "FLWP", 4);
    out[4] = 2;
    out[5] = (unsigned char)type;
    out[6] = out[7] = 0;
    put_be32(out + 8, 77);
    put_be32(out + 12, (uint32_t)n);
    put_be32(out + 16, (uint32_t)tail);
    memcpy(out + 20, body, n);
    memset(out + 20 + n, 0, tail);
    return 20 + n + tail;
}

static size_t craft(unsigned char *out, unsigned type, const void *body, size_t n)
{
    return craft_tail(out, type, body, n, 0);
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

static unsigned char frame[20 + 1024];

static const char *crafted(unsigned type, const void *body, size_t n)
{
    return verdict(frame, craft(frame, type, body, n));
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
           m.request_id == 1 && strcmp(m.u.hello.job, "worker") == 0 && m.u.hello.task_index == 3,
       "HELLO round trips: worker, task 3, request 1");
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

static void test_small_round_trips(void)
{
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_wire_message m;
    ok(fl_wire_put_init_done(&buf, 5, true) == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_INIT_DONE && m.u.has_value,
       "INIT_DONE round trips 'has a value'");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_is_initialized(&buf, 6, "conv_1/weights") == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_IS_INITIALIZED && strcmp(m.u.name, "conv_1/weights") == 0 &&
           fl_wire_reply_type(FL_WIRE_IS_INITIALIZED) == FL_WIRE_INIT_DONE,
       "IS_INITIALIZED round trips, answered by INIT_DONE");
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_goodbye(&buf, 8) == 0 && decode_one(&buf, &f, &m) &&
           m.type == FL_WIRE_GOODBYE && f.body_len == 0 && f.frame_len == 20,
       "GOODBYE round trips with an empty body: its header alone");
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

/* The ps store's frames are gone: their numbers are no types, refused from
 * the header as any unknown number is. */
static void test_gone_types(void)
{
    const unsigned gone[] = {3, 5, 6, 7, 8, 9, 13, 14, 15, 16, 17, 18};
    int refused = 0, nameless = 0;
    unsigned char h[20];
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "unknown frame type %u", gone[i]);
        craft(h, gone[i], "", 0);
        refused += strcmp(verdict(h, 20), want) == 0;
        nameless += strcmp(fl_wire_type_name((int)gone[i]), "?") == 0 && fl_wire_reply_type((int)gone[i]) == 0;
    }
    ok(refused == 12, "INIT_VARIABLE, PULL to ASSIGN_ADD, ASSIGN and SYNC_APPLY to WAIT_STEP: each number refused "
       "as no type (%d of 12)", refused);
    ok(nameless == 12, "and none has a name or a reply (%d of 12)", nameless);
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
    ok(fl_wire_put_send_tensor(&buf, 1, 2, "fc1/kernel", big) == 0, "a 12.8 MB SEND_TENSOR encodes");
    ok(decode_one(&buf, &f, &m) && same_tensor(&m.u.send.value, big) && f.tail_len == 3136 * 1024 * 4 &&
           m.u.send.value.data == f.tail,
       "and round trips, first and last element included: its elements are the frame's tail");
    fl_wire_buf_free(&buf);
    fl_tensor_free(big);
}

/* ---- the exact bytes, and frames arriving in pieces ---- */

static void test_exact_bytes(void)
{
    /* header: magic, version 2, type 19, flags, request id, body length 3, tail length 0;
     * body: field 1 (name) length-delimited (tag 0x0a), 1 byte, 'a' */
    const unsigned char want[] = {'F', 'L', 'W', 'P', 2, 19, 0, 0, 0, 0, 1, 2,
                                  0, 0, 0, 3, 0, 0, 0, 0, 0x0a, 1, 'a'};
    fl_wire_buf buf = {0};
    fl_wire_put_is_initialized(&buf, 0x102, "a");
    ok(buf.len == sizeof want && memcmp(buf.data, want, sizeof want) == 0,
       "IS_INITIALIZED 'a' with request id 0x102 is exactly the 23 bytes of the appendix");
    fl_wire_buf_free(&buf);
    const unsigned char send[] = {'F', 'L', 'W', 'P', 2, 24, 0, 0, 0, 0, 0, 5, 0, 0, 0, 15, 0, 0, 0, 8,
                                  0x08, 7, 0x12, 1, 'w', 0x1a, 8, 0x08, 1, 0x12, 4, 0x12, 2, 0x08, 2,
                                  0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
    const float v[2] = {1, 2};
    fl_tensor *t = fl_tensor_from_floats(fl_shape_make(1, 2), v);
    fl_wire_put_send_tensor(&buf, 5, 7, "w", t);
    ok(buf.len == sizeof send && memcmp(buf.data, send, sizeof send) == 0,
       "SEND_TENSOR of [1, 2] is exactly the appendix's 43 bytes: header, 15 of body, 8 of tail");
    fl_wire_buf_free(&buf);
    fl_tensor_free(t);
}

static void test_streaming(void)
{
    fl_wire_buf buf = {0};
    fl_wire_put_hello(&buf, 1, "worker", 0);
    size_t first = buf.len;
    fl_wire_put_is_initialized(&buf, 2, "w");
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
           f.type == FL_WIRE_IS_INITIALIZED && f.frame_len == buf.len,
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

    unsigned char h[20 + 300];
    memset(h, 0, sizeof h);
    craft(h, FL_WIRE_IS_INITIALIZED, "\x0a\1a", 3);
    h[4] = 1;
    is_string(verdict(h, 23), "version 1 not supported (this build speaks version 2)",
              "version 1, the old byte layout, is refused");
    is_string(verdict(h, 5), "version 1 not supported (this build speaks version 2)",
              "as soon as its byte arrives");
    craft(h, 99, "", 0);
    is_string(verdict(h, 20), "unknown frame type 99", "an unknown type is refused");
    craft(h, 0, "", 0);
    is_string(verdict(h, 20), "unknown frame type 0", "type 0 is refused");
    craft(h, FL_WIRE_IS_INITIALIZED, "\x0a\1a", 3);
    h[7] = 1;
    is_string(verdict(h, 23), "IS_INITIALIZED: flags 0x0001 not supported (must be 0)", "nonzero flags are refused");

    craft(h, FL_WIRE_SEND_TENSOR, "", 0);
    put_be32(h + 16, 100000000);
    is_string(verdict(h, 20), "SEND_TENSOR: body and tail of 0 + 100000000 bytes, over the 67108864 limit",
              "a length over the limit is refused from the header alone");
    put_be32(h + 12, 5000);
    is_string(verdict(h, 20), "SEND_TENSOR: body length 5000 over the 4096 limit for this frame type",
              "a SEND_TENSOR body bigger than any head is refused from the header");
    craft(h, FL_WIRE_IS_INITIALIZED, "", 0);
    put_be32(h + 12, 300);
    is_string(verdict(h, 20), "IS_INITIALIZED: body length 300 over the 258 limit for this frame type",
              "an IS_INITIALIZED longer than any name is refused before its body arrives");
    craft(h, FL_WIRE_GOODBYE, "x", 1);
    is_string(verdict(h, 21), "GOODBYE: body length 1 over the 0 limit for this frame type",
              "a GOODBYE with a body is refused");
    craft_tail(h, FL_WIRE_IS_INITIALIZED, "\x0a\1a", 3, 4);
    is_string(verdict(h, 20), "IS_INITIALIZED: tail length 4; only SEND_TENSOR has a tail",
              "a tail on any frame but SEND_TENSOR is refused from the header");
}

static void test_truncated(void)
{
    fl_wire_buf buf = {0};
    const float v[4] = {1, 2, 3, 4};
    fl_tensor *t = fl_tensor_from_floats(fl_shape_make(1, 4), v);
    fl_wire_put_send_tensor(&buf, 1, 1, "w", t);
    fl_wire_frame f;
    ok(fl_wire_decode(buf.data, 7, &f, &err) == FL_WIRE_NEED_MORE,
       "a truncated header waits for more");
    ok(fl_wire_check_eof(buf.data, 7, &err) == -1, "end of stream there is an error");
    is_string(err.message, "connection closed inside a frame header (7 of 20 bytes)", "naming how far it got");
    ok(err.code == FL_DATA_LOSS, "a stream cut inside a frame is DATA_LOSS");
    ok(fl_wire_decode(buf.data, buf.len - 1, &f, &err) == FL_WIRE_NEED_MORE,
       "a truncated tail waits for more");
    fl_wire_check_eof(buf.data, buf.len - 1, &err);
    char want[96];
    snprintf(want, sizeof want, "connection closed inside a SEND_TENSOR frame (%zu of %zu bytes)", buf.len - 1,
             buf.len);
    is_string(err.message, want, "end of stream in the frame names the type and the bytes");
    fl_wire_buf_free(&buf);
    fl_tensor_free(t);
}

/* ---- bad bodies ----
 * Bodies by hand: a field is a tag (its number << 3 | its wire type: 0 a
 * varint, 2 a length and bytes), then its value. IS_INITIALIZED's name is
 * field 1, length-delimited: tag 0x0a (012). */

static void test_bad_names(void)
{
    is_string(crafted(FL_WIRE_IS_INITIALIZED, "\012\003a\nb", 5),
              "IS_INITIALIZED: name is not printable (byte 0x0a at offset 1)", "a newline in a name");
    is_string(crafted(FL_WIRE_IS_INITIALIZED, "\012\003a b", 5),
              "IS_INITIALIZED: name is not printable (byte 0x20 at offset 1)", "a space in a name");
    is_string(crafted(FL_WIRE_IS_INITIALIZED, "", 0), "IS_INITIALIZED: name is empty", "an empty name");
    is_string(crafted(FL_WIRE_IS_INITIALIZED, "\012\310\001abc", 6),
              "IS_INITIALIZED: protobuf-c could not unpack its 6 bytes as message IsInitializedRequest",
              "a name longer than the body");
    is_string(crafted(FL_WIRE_IS_INITIALIZED, "\010\001", 2),
              "IS_INITIALIZED: protobuf-c could not unpack its 2 bytes as message IsInitializedRequest",
              "a varint where the name's bytes should be");
    is_string(crafted(FL_WIRE_IS_INITIALIZED, "\012\001a\020\001", 5),
              "IS_INITIALIZED: field 2 of message IsInitializedRequest is not one this build knows", "an unknown field");
    is_string(crafted(FL_WIRE_IS_INITIALIZED, "\012\003w\0x", 5),
              "IS_INITIALIZED: 5 bytes that this build would encode in 3 (a field repeated, out of canonical form, "
              "or a string with a NUL byte)",
              "a NUL inside a name: protobuf-c would cut it to \"w\", the size tells");
    is_string(crafted(FL_WIRE_IS_INITIALIZED, "\012\001a\012\001b", 6),
              "IS_INITIALIZED: 6 bytes that this build would encode in 3 (a field repeated, out of canonical form, "
              "or a string with a NUL byte)",
              "a field given twice");
    is_string(crafted(FL_WIRE_HELLO, "\020\001", 2), "HELLO: job name is empty", "HELLO with no job name");
    is_string(crafted(FL_WIRE_HELLO, "\012\002ps\020\360\242\004", 8), "HELLO: task index 70000 over the 65535 limit",
              "HELLO with a task index out of range");
}

/* A SEND_TENSOR with the head given and `tail` zero bytes after its body,
 * packed by protobuf-c with no check; cut: the body's length (0: whole). */
typedef struct {
    int dtype, rank;
    int64_t dims[5];
    size_t content, tail, cut;
    bool no_head, no_shape;
    const char *want, *what;
} tensor_case;

static const char *send_verdict(const tensor_case *c)
{
    Tensorflow__TensorShapeProto__Dim dims[5], *list[5];
    Tensorflow__TensorShapeProto shape = TENSORFLOW__TENSOR_SHAPE_PROTO__INIT;
    Tensorflow__TensorProto head = TENSORFLOW__TENSOR_PROTO__INIT;
    Flowlab__SendTensorRequest m = FLOWLAB__SEND_TENSOR_REQUEST__INIT;
    static unsigned char body[512], zeros[8];
    for (int i = 0; i < c->rank; i++) {
        tensorflow__tensor_shape_proto__dim__init(&dims[i]);
        dims[i].size = c->dims[i];
        list[i] = &dims[i];
    }
    shape.n_dim = (size_t)c->rank;
    shape.dim = list;
    head.dtype = c->dtype;
    head.tensor_shape = c->no_shape ? NULL : &shape;
    head.tensor_content = (ProtobufCBinaryData){c->content, zeros};
    m.step_id = 7;
    m.key = "w";
    m.head = c->no_head ? NULL : &head;
    size_t n = flowlab__send_tensor_request__pack(&m, body);
    return verdict(frame, craft_tail(frame, FL_WIRE_SEND_TENSOR, body, c->cut ? c->cut : n, c->tail));
}

static const tensor_case TENSOR_CASES[] = {
    {1, 2, {3, 4}, 0, 48, 0, false, false, "accepted", "a well-formed float32 [3,4] is accepted"},
    {1, 2, {3, -1}, 0, 48, 0, false, false, "SEND_TENSOR: shape [3,-1] has a non-positive dimension",
     "a dimension of -1"},
    {1, 2, {3, 0}, 0, 0, 0, false, false, "SEND_TENSOR: shape [3,0] has a non-positive dimension", "a dimension of 0"},
    {1, 5, {1, 1, 1, 1, 1}, 0, 4, 0, false, false, "SEND_TENSOR: rank 5 over the limit of 4", "rank 5"},
    {1, 2, {65536, 65536}, 0, 0, 0, false, false,
     "SEND_TENSOR: shape [65536,65536] has more than 16777216 elements, over the 67108864-byte limit",
     "a shape too big for any frame"},
    {1, 1, {INT64_C(1) << 31}, 0, 0, 0, false, false, "SEND_TENSOR: dimension 0 is 2147483648, over the 2^31-1 limit",
     "a dimension past what an int holds, checked before it is narrowed"},
    {2, 2, {3, 4}, 0, 48, 0, false, false, "SEND_TENSOR: value: dtype 2 is neither 1 (DT_FLOAT) nor 3 (DT_INT32)",
     "an unknown dtype"},
    {1, 2, {3, 4}, 0, 40, 0, false, false, "SEND_TENSOR: value: float32 [3,4] needs 48 data bytes, the frame says 40",
     "a tail that does not match the shape"},
    {1, 1, {2}, 8, 8, 0, false, false,
     "SEND_TENSOR: value: 8 bytes in the head's tensor_content; the elements are the tail",
     "elements inside the head"},
    {1, 0, {0}, 0, 4, 0, true, false, "SEND_TENSOR: value has no tensor", "no head at all"},
    {1, 0, {0}, 0, 4, 0, false, true, "SEND_TENSOR: a tensor without its tensor_shape", "a head without a shape"},
    {1, 2, {3, 4}, 0, 48, 9, false, false,
     "SEND_TENSOR: protobuf-c could not unpack its 9 bytes as message SendTensorRequest",
     "a body that stops inside the head"},
};

static void test_bad_tensors(void)
{
    for (size_t i = 0; i < sizeof TENSOR_CASES / sizeof TENSOR_CASES[0]; i++)
        is_string(send_verdict(&TENSOR_CASES[i]), TENSOR_CASES[i].want, TENSOR_CASES[i].what);
}

static void test_bad_small_frames(void)
{
    is_string(crafted(FL_WIRE_INIT_DONE, "\010\000", 2),
              "INIT_DONE: 2 bytes that this build would encode in 0 (a field repeated, out of canonical form, or a "
              "string with a NUL byte)",
              "INIT_DONE with 'no value' spelled out, where proto3 leaves it out");
    is_string(crafted(FL_WIRE_ERROR, "", 0), "ERROR: unknown error code 0", "error code 0");
    is_string(crafted(FL_WIRE_ERROR, "\010\001\022\002a\033", 6),
              "ERROR: message is not printable (byte 0x1b at offset 1)", "an escape byte in a message");
    is_string(crafted(FL_WIRE_ERROR, "\010\001\022\005ab", 6),
              "ERROR: protobuf-c could not unpack its 6 bytes as message Error", "a message cut short");
    is_string(crafted(FL_WIRE_CHALLENGE, "\012\002ab", 4), "CHALLENGE: nonce of 2 bytes; it is 32",
              "a nonce of the wrong size");

    unsigned char bytes[32];
    fl_wire_frame f;
    uint64_t number;
    fl_wire_decode(bytes, craft(bytes, FL_WIRE_ERROR, "\010\001", 2), &f, &err);
    ok(fl_wire_parse_number(&f, &number, &err) == -1, "the one-number parser refuses an ERROR frame");
    is_string(err.message, "ERROR: not a frame of one number", "and says so");
    ok(err.code == FL_DATA_LOSS, "a frame a parser refuses is DATA_LOSS");
}

/* ---- encoders refuse what parsers would ---- */

static void test_encoder_refusals(void)
{
    fl_wire_buf buf = {0};
    fl_wire_put_ok(&buf, 1);
    size_t before = buf.len;
    ok(fl_wire_put_is_initialized(&buf, 2, "bad name") == -1 && buf.len == before,
       "a name with a space is refused and the buffer is left as it was");
    is_string(buf.error, "IS_INITIALIZED: name is not printable (byte 0x20 at offset 3)", "with the parser's words");
    char long_name[300];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[299] = '\0';
    ok(fl_wire_put_is_initialized(&buf, 2, long_name) == -1 && buf.len == before, "a 299-byte name is refused");
    is_string(buf.error, "IS_INITIALIZED: name is 299 bytes, over the 255 limit", "naming the limit");
    fl_tensor unknown = {.dtype = FL_FLOAT32, .shape = {2, {-1, 4}}, .data = buf.data};
    ok(fl_wire_put_send_tensor(&buf, 3, 1, "w", &unknown) == -1 && buf.len == before,
       "a shape with an unknown dimension is refused");
    is_string(buf.error, "SEND_TENSOR: shape [-1,4] has a non-positive dimension", "naming the shape");
    fl_tensor huge = {.dtype = FL_FLOAT32, .shape = {3, {4096, 4096, 2}}, .data = buf.data}; /* data never read */
    ok(fl_wire_put_send_tensor(&buf, 3, 1, "w", &huge) == -1 && buf.len == before,
       "a 128 MiB tensor is refused before its data is read");
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
}

/* ---- the order of frames ---- */

static void test_order(void)
{
    fl_wire_conn c;
    fl_wire_conn_init(&c, FL_WIRE_SERVER_SIDE);
    ok(fl_wire_check_order(&c, FL_WIRE_IS_INITIALIZED, &err) == -1, "server: IS_INITIALIZED before HELLO is refused");
    is_string(err.message, "IS_INITIALIZED before HELLO: a connection starts with HELLO", "saying what comes first");
    ok(err.code == FL_FAILED_PRECONDITION, "a frame out of order is FAILED_PRECONDITION, set where it is seen");
    ok(fl_wire_check_order(&c, FL_WIRE_HELLO, &err) == 0, "server: HELLO first is fine");
    ok(fl_wire_check_order(&c, FL_WIRE_HELLO, &err) == -1, "server: a second HELLO is refused");
    is_string(err.message, "HELLO twice on one connection", "saying so");
    ok(fl_wire_check_order(&c, FL_WIRE_INIT_DONE, &err) == -1, "server: a reply type is refused");
    is_string(err.message, "INIT_DONE is a reply; a client sends requests", "saying who sends what");
    bool requests = true;
    const fl_wire_type in_turn[] = {FL_WIRE_IS_INITIALIZED, FL_WIRE_REGISTER_PARTITION, FL_WIRE_RUN_PARTITION,
                                    FL_WIRE_SEND_TENSOR, FL_WIRE_GOODBYE};
    for (int i = 0; i < 5; i++)
        requests = requests && fl_wire_check_order(&c, in_turn[i], &err) == 0;
    ok(requests, "server: every request after HELLO, then GOODBYE, is fine");
    ok(fl_wire_check_order(&c, FL_WIRE_IS_INITIALIZED, &err) == -1, "server: IS_INITIALIZED after GOODBYE is refused");
    is_string(err.message, "IS_INITIALIZED after GOODBYE: the connection is finished", "saying the connection is done");

    fl_wire_conn_init(&c, FL_WIRE_CLIENT_SIDE);
    ok(fl_wire_check_order(&c, FL_WIRE_INIT_DONE, &err) == -1, "client: INIT_DONE before HELLO_OK is refused");
    is_string(err.message, "INIT_DONE before HELLO_OK: the server answers HELLO first", "saying so");
    ok(fl_wire_check_order(&c, FL_WIRE_ERROR, &err) == 0, "client: ERROR may answer HELLO");
    ok(fl_wire_check_order(&c, FL_WIRE_HELLO_OK, &err) == 0 &&
           fl_wire_check_order(&c, FL_WIRE_INIT_DONE, &err) == 0,
       "client: HELLO_OK, then replies, are fine");
    ok(fl_wire_check_order(&c, FL_WIRE_IS_INITIALIZED, &err) == -1, "client: a request type is refused");
    is_string(err.message, "IS_INITIALIZED is a request; a server sends replies", "saying who sends what");
    ok(fl_wire_reply_type(FL_WIRE_SEND_TENSOR) == FL_WIRE_OK && fl_wire_reply_type(FL_WIRE_OK) == 0,
       "SEND_TENSOR is answered by OK; OK answers nothing");
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

    /* A valid SEND_TENSOR with one to four bytes changed: accepted or refused,
     * never a crash; a refusal names the frame or the header field. */
    fl_wire_buf buf = {0};
    const float g[2] = {1, 2};
    fl_tensor *grad = fl_tensor_from_floats(fl_shape_make(1, 2), g);
    fl_wire_put_send_tensor(&buf, 1, 7, "dense/kernel/grad:0->/job:ps/task:0", grad);
    for (int i = 0; i < tries; i++) {
        memcpy(bytes, buf.data, buf.len);
        for (uint32_t k = 0, n = 1 + next_random() % 4; k < n; k++)
            bytes[next_random() % buf.len] = (unsigned char)next_random();
        const char *v = verdict(bytes, buf.len);
        mutants_ok += strcmp(v, "accepted") == 0 || strcmp(v, "need more") == 0 ||
                      strstr(v, ": ") != NULL || strncmp(v, "bad magic", 9) == 0 ||
                      strncmp(v, "version", 7) == 0 || strncmp(v, "unknown frame type", 18) == 0;
    }
    ok(mutants_ok == tries, "%d mutated SEND_TENSOR frames: each accepted, waiting, or refused with a reason (%d)",
       tries, mutants_ok);
    fl_wire_buf_free(&buf);
    fl_tensor_free(grad);
}

int main(void)
{
    test_hello_round_trip();
    test_small_round_trips();
    test_gone_types();
    test_largest_variable();
    test_exact_bytes();
    test_streaming();
    test_bad_headers();
    test_truncated();
    test_bad_names();
    test_bad_tensors();
    test_bad_small_frames();
    test_encoder_refusals();
    test_order();
    test_garbage();
    return done_testing();
}
