/* wire.h: the bytes tasks send each other in chapter 3 (between-graph replication).
 * Frames: a fixed header, a protobuf body (wire.proto), and for SEND_TENSOR a raw tail of tensor
 * bytes. Encoders append whole frames to a growable buffer; a decoder cuts frames out of received
 * bytes; the parser unpacks a body and checks every field before it is trusted.
 * No sockets here: the server and the task client feed and drain the bytes themselves.
 * The format, byte by byte, is book/appendix-wire-protocol.md. */
#ifndef FLOWLAB_DIST_WIRE_H
#define FLOWLAB_DIST_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flowlab.h"
#include "status.h"

/* ---- the frame header: 20 bytes, every integer big-endian (network order) ----
 *   0  magic "FLWP"   4  version u8   5  type u8   6  flags u16 (0)
 *   8  request id u32  12 body length u32  16 tail length u32 (0 but for SEND_TENSOR)
 * Both lengths come first so a reader knows the whole frame's size before it parses anything. */
#define FL_WIRE_HEADER_BYTES 20u
#define FL_WIRE_VERSION 2u
/* Body and tail together. Big enough for chapter 1's largest variable (3136x1024 floats,
 * 12.8 MB) with room to spare. */
#define FL_WIRE_MAX_PAYLOAD (64u * 1024u * 1024u)
#define FL_WIRE_MAX_NAME 255u     /* names are 1..255 bytes of '!'..'~' */
#define FL_WIRE_MAX_MESSAGE 1024u /* an ERROR frame's text, bytes ' '..'~' */
#define FL_WIRE_MAX_TASK 65535u   /* task indices 0..65535 */
#define FL_WIRE_ERROR_LEN 256     /* an ERROR frame's message and buf->error */

typedef enum {
    FL_WIRE_HELLO = 1,         /* client -> server: job name, task index */
    FL_WIRE_HELLO_OK = 2,      /* server -> client: the server's own job name and task */
    /* 3, 5 to 9 and 13 to 18 were the ps store's requests and replies
     * (pulls, updates, synchronous updates, WAIT_STEP), gone with it: a
     * peer that sends one is refused as for any number that is no type. */
    FL_WIRE_INIT_DONE = 4,     /* reply to IS_INITIALIZED: whether the variable has a value */
    FL_WIRE_GOODBYE = 10,      /* the worker has finished -> OK */
    FL_WIRE_OK = 11,           /* no body */
    FL_WIRE_ERROR = 12,        /* code and a message for people */
    FL_WIRE_IS_INITIALIZED = 19,  /* name -> INIT_DONE: whether the variable has a value */
    /* In-graph replication across tasks (chapter 3): the client's master
     * registers one partition of its graph per task and runs it each step;
     * values that cross tasks go task to task (SEND_TENSOR). */
    FL_WIRE_REGISTER_PARTITION = 20,   /* a partition (partition_def.c's message) -> PARTITION_REGISTERED */
    FL_WIRE_PARTITION_REGISTERED = 21, /* the task's handle for it */
    FL_WIRE_RUN_PARTITION = 22,        /* handle, step, feeds, fetches, targets, edges -> PARTITION_DONE */
    FL_WIRE_PARTITION_DONE = 23,       /* the fetched values, in order */
    FL_WIRE_SEND_TENSOR = 24,          /* step, edge key, value: task to task -> OK */
    FL_WIRE_ABORT_STEP = 25,           /* step: give it up, its waits end -> OK */
    FL_WIRE_DEREGISTER_PARTITION = 26, /* handle -> OK */
    /* The handshake of a cluster with a shared secret (wire_handshake.c). */
    FL_WIRE_CHALLENGE = 27,    /* server -> client, the answer to HELLO: a fresh nonce */
    FL_WIRE_PROOF = 28,        /* client -> server: its proof, and a nonce of its own */
    FL_WIRE_SERVER_PROOF = 29, /* server -> client: its proof; HELLO_OK follows */
} fl_wire_type;
#define FL_WIRE_TYPE_COUNT 30 /* one past the last type */

/* Codes an ERROR frame carries. */
typedef enum {
    FL_WIRE_E_BAD_FRAME = 1,        /* the bytes are not a valid frame */
    FL_WIRE_E_OUT_OF_ORDER = 2,     /* a valid frame at the wrong time */
    /* 3 to 5 were the ps store's answers: read still, sent no more. */
    FL_WIRE_E_UNKNOWN_VARIABLE = 3, /* no variable of that name on this task */
    FL_WIRE_E_MISMATCH = 4,         /* dtype or shape differ from the variable's */
    FL_WIRE_E_NOT_INITIALIZED = 5,  /* a variable read before it has a value */
    FL_WIRE_E_INTERNAL = 6,         /* the server failed, e.g. out of memory */
    /* A partition's run that failed (the connection stays). */
    FL_WIRE_E_INVALID_ARGUMENT = 7, /* a partition or run refused: the message names the node */
    FL_WIRE_E_ABORTED = 8,          /* the step was given up (ABORT_STEP) */
    FL_WIRE_E_UNAVAILABLE = 9,      /* a peer task was lost */
    FL_WIRE_E_DEADLINE = 10,        /* a value from another task never came */
    FL_WIRE_E_UNAUTHENTICATED = 11, /* no proof of the cluster secret, or a wrong one */
    FL_WIRE_E_RESOURCE_EXHAUSTED = 12, /* a limit of the server's (the message names its flag) */
    /* CANONICAL + c carries flowlab's code c (FL_NOT_FOUND: 37) unchanged: a
     * failed run whose code none of the names above says. */
    FL_WIRE_E_CANONICAL = 32,
} fl_wire_error_code;
#define FL_WIRE_ERROR_CODE_COUNT 13 /* the named codes are 1 to 12 */
/* What an ERROR frame's code means as flowlab's error code (BAD_FRAME:
 * DATA_LOSS; CANONICAL + c: c), the code a failed run's error travels as
 * (its own name where the wire has one, else CANONICAL + code), and whether
 * a frame's code is one of these (wire_error_codes.c). */
fl_error_code fl_wire_error_meaning(fl_wire_error_code code);
fl_wire_error_code fl_wire_error_for(fl_error_code code);
bool fl_wire_error_code_known(unsigned code);

const char *fl_wire_type_name(int type); /* "RUN_PARTITION"; "?" for a number that is no type */
/* The reply a request expects (RUN_PARTITION -> PARTITION_DONE); 0 for a type that is no request.
 * Any request may also be answered by ERROR. */
int fl_wire_reply_type(int request_type);

/* protobuf-c's memory while a body is unpacked or a message built, kept from
 * frame to frame so a warm step allocates nothing (wire_pb.c). */
typedef struct fl_wire_arena fl_wire_arena;
fl_wire_arena *fl_wire_arena_new(void);
void fl_wire_arena_free(fl_wire_arena *a);

/* ---- encoding: each put appends one whole frame, or nothing ----
 * On failure (a bad argument, out of memory) a put returns -1, leaves the buffer's
 * bytes as they were and says why in buf->error. Every put runs the checks the
 * receiver runs, so a frame that leaves here is one the other side accepts. */
typedef struct {
    unsigned char *data;
    size_t len, cap;
    /* Bytes that end the last frame by reference, not copied in (a big
     * SEND_TENSOR's data: fl_wire_put_send_tensor_head); only a socket
     * writer sends them, and their owner keeps them until they are out. */
    const void *lent;
    size_t lent_len;
    fl_wire_arena *scratch; /* the message being built (made on first use) */
    char error[FL_WIRE_ERROR_LEN];
} fl_wire_buf;

void fl_wire_buf_free(fl_wire_buf *buf); /* back to empty, scratch freed; the struct can be reused */
void fl_wire_buf_consume(fl_wire_buf *buf, size_t bytes); /* drops the first bytes */

int fl_wire_put_hello(fl_wire_buf *buf, uint32_t id, const char *job, uint32_t task_index);
int fl_wire_put_hello_ok(fl_wire_buf *buf, uint32_t id, const char *job, uint32_t task_index);
int fl_wire_put_init_done(fl_wire_buf *buf, uint32_t id, bool has_value);
int fl_wire_put_is_initialized(fl_wire_buf *buf, uint32_t id, const char *name);
int fl_wire_put_goodbye(fl_wire_buf *buf, uint32_t id);
/* The handshake: CHALLENGE carries a nonce, PROOF a proof and a nonce,
 * SERVER_PROOF a proof; each 32 bytes, a proof HMAC-SHA256 (handshake.h). */
#define FL_WIRE_PROOF_BYTES 32u
int fl_wire_put_challenge(fl_wire_buf *buf, uint32_t id, const unsigned char nonce[FL_WIRE_PROOF_BYTES]);
int fl_wire_put_proof(fl_wire_buf *buf, uint32_t id, const unsigned char proof[FL_WIRE_PROOF_BYTES],
                      const unsigned char nonce[FL_WIRE_PROOF_BYTES]);
int fl_wire_put_server_proof(fl_wire_buf *buf, uint32_t id, const unsigned char proof[FL_WIRE_PROOF_BYTES]);
int fl_wire_put_ok(fl_wire_buf *buf, uint32_t id);
/* The message is cut to FL_WIRE_MAX_MESSAGE and any byte outside ' '..'~' becomes '?',
 * so a server may quote what a peer sent without making an invalid frame. */
int fl_wire_put_error(fl_wire_buf *buf, uint32_t id, fl_wire_error_code code, const char *message);

/* ---- in-graph replication across tasks ----
 * A list of names: fetches, targets. */
typedef struct {
    int count;
    const char *const *names;
} fl_wire_name_list;
#define FL_WIRE_MAX_LIST 65535 /* names or values in one list */

/* RUN_PARTITION's flags: FL_WIRE_RUN_TRACE asks the task for its timings
 * of the step, in PARTITION_DONE's trace field; other bits are refused. */
#define FL_WIRE_RUN_TRACE 1u
/* PARTITION_DONE's trace (StepStats): the step's length and its ops, in
 * nanoseconds since the task's step began, each within the step; and each
 * device's peak bytes (its pool's, as fl_session_memory counts them).
 * Parsed, it lies in the parse's arena; a copy owns `storage`. */
#define FL_WIRE_MAX_STEP_NS (86400ull * 1000000000ull) /* a day */
typedef struct {
    const char *name, *op, *device; /* device: "/job:worker/task:1/cpu:0" */
    uint64_t start_ns, duration_ns;
} fl_wire_trace_event;
typedef struct {
    const char *device; /* "/job:worker/task:1/gpu:0" */
    uint64_t peak_bytes;
} fl_wire_device_peak;
#define FL_WIRE_MAX_PEAKS 64 /* devices of one task */
typedef struct {
    uint64_t step_ns;
    int count;
    fl_wire_trace_event *events;
    int npeaks; /* the most bytes each of the task's devices held at once */
    fl_wire_device_peak *peaks;
    void *storage;
} fl_wire_step_trace;
void fl_wire_step_trace_free(fl_wire_step_trace *t);
/* A copy that outlives the arena: one block, in out->storage. */
void fl_wire_step_trace_copy(const fl_wire_step_trace *t, fl_wire_step_trace *out);

/* graph: the partition as partition_def.c encodes it (bytes, no header). */
int fl_wire_put_register_partition(fl_wire_buf *buf, uint32_t id, const void *graph, size_t len);
int fl_wire_put_partition_registered(fl_wire_buf *buf, uint32_t id, uint64_t handle);
/* lists: fetches, then targets (the client's and the Sends the step needs). */
int fl_wire_put_run_partition(fl_wire_buf *buf, uint32_t id, uint64_t handle, uint64_t step_id, uint32_t flags,
                              int nfeeds, const char *const *feed_names, const fl_tensor *const *feed_values,
                              const fl_wire_name_list lists[2]);
/* trace: NULL, or the step's timings the client asked for. */
int fl_wire_put_partition_done(fl_wire_buf *buf, uint32_t id, const fl_wire_step_trace *trace, int nvalues,
                               const fl_tensor *const *values);
int fl_wire_put_send_tensor(fl_wire_buf *buf, uint32_t id, uint64_t step_id, const char *key,
                            const fl_tensor *value);
/* The same with the value's data lent (buf->lent), not copied. */
int fl_wire_put_send_tensor_head(fl_wire_buf *buf, uint32_t id, uint64_t step_id, const char *key,
                                 const fl_tensor *value);
/* type: FL_WIRE_ABORT_STEP (a step id) or FL_WIRE_DEREGISTER_PARTITION (a handle). */
int fl_wire_put_number(fl_wire_buf *buf, fl_wire_type type, uint32_t id, uint64_t number);

/* ---- decoding: cut one frame off the front of the received bytes ---- */
typedef enum { FL_WIRE_BAD = -1, FL_WIRE_NEED_MORE = 0, FL_WIRE_FRAME = 1 } fl_wire_status;

typedef struct {
    fl_wire_type type;
    uint32_t request_id;
    uint32_t body_len, tail_len;
    const unsigned char *body, *tail; /* inside the caller's bytes */
    size_t frame_len;                 /* header + body + tail: what to drain afterwards */
} fl_wire_frame;

/* FL_WIRE_FRAME: *frame describes the first frame_len bytes. FL_WIRE_NEED_MORE: every
 * byte so far is valid, wait for more. FL_WIRE_BAD: st says what was wrong (DATA_LOSS); the stream
 * cannot be resynchronised, so the connection should be closed. The header is checked as
 * soon as its bytes arrive, so garbage is refused before a whole header is in. */
fl_wire_status fl_wire_decode(const void *bytes, size_t len, fl_wire_frame *frame, fl_status *st);
/* What such a header announces: type, request id and lengths, with no
 * body yet (a reader that places the frame's bytes itself). */
fl_wire_frame fl_wire_frame_announced(const void *header);
/* At end of stream: 0 when no bytes are left over, else -1 and DATA_LOSS such as
 * "connection closed inside a frame header (7 of 20 bytes)". */
int fl_wire_check_eof(const void *bytes, size_t len, fl_status *st);

/* Whether the first bytes of a stream (1 or more) are a TLS record's, not a
 * frame's: a ClientHello (0x16 0x03), an alert (0x15 0x03), ... A peer with
 * --tls_* met one without them; each side names the flags (TLS mismatch). */
bool fl_wire_looks_like_tls(const void *bytes, size_t len);

/* ---- typed bodies: plain structs (views); tensor data points into the frame's tail or the arena ---- */
typedef struct {
    fl_dtype dtype;
    fl_shape shape;              /* rank 0..4, every dim >= 1 */
    int64_t count;               /* elements */
    const unsigned char *data;   /* count little-endian 4-byte words, maybe unaligned */
    size_t bytes;                /* count * 4 */
} fl_wire_tensor;

/* Copies the elements into dst (count floats or int32s, host byte order). */
void fl_wire_tensor_read(const fl_wire_tensor *t, void *dst);

typedef struct {
    char job[FL_WIRE_MAX_NAME + 1];
    uint32_t task_index;
} fl_wire_hello; /* HELLO and HELLO_OK */

typedef struct {
    unsigned char proof[FL_WIRE_PROOF_BYTES]; /* PROOF, SERVER_PROOF */
    unsigned char nonce[FL_WIRE_PROOF_BYTES]; /* CHALLENGE, PROOF */
} fl_wire_handshake; /* CHALLENGE, PROOF, SERVER_PROOF */

typedef struct {
    fl_wire_error_code code;
    char message[FL_WIRE_MAX_MESSAGE + 1];
} fl_wire_error;

typedef struct {
    uint64_t step_id;
    char key[FL_WIRE_MAX_NAME + 1];
    fl_wire_tensor value;
} fl_wire_send_tensor;

/* A body kept whole for a parser of its own: REGISTER_PARTITION's graph;
 * RUN_PARTITION's and PARTITION_DONE's when parsed without an arena. */
typedef struct {
    const unsigned char *data;
    size_t len;
} fl_wire_bytes;

/* RUN_PARTITION's fields; names and values point into the parse's arena. */
typedef struct {
    uint64_t handle, step_id;
    uint32_t flags; /* FL_WIRE_RUN_TRACE or 0 */
    int nfeeds;
    const char **feed_names;
    fl_wire_tensor *feed_values;
    fl_wire_name_list lists[2]; /* fetches, targets (the Sends the step needs among them) */
} fl_wire_run_partition;

/* PARTITION_DONE's fields, in the parse's arena: one value per fetch, and
 * the trace (count 0 when the run was not traced). */
typedef struct {
    int count;
    fl_wire_tensor *values;
    fl_wire_step_trace trace;
} fl_wire_partition_done;

/* Any frame, by its type: the field of the union named after the type is filled. */
typedef struct {
    fl_wire_type type;
    uint32_t request_id;
    union {
        fl_wire_hello hello;        /* HELLO, HELLO_OK */
        char name[FL_WIRE_MAX_NAME + 1]; /* IS_INITIALIZED */
        bool has_value;             /* INIT_DONE */
        fl_wire_error error;        /* ERROR */
        uint64_t number;            /* PARTITION_REGISTERED, DEREGISTER_PARTITION: handle; ABORT_STEP: step */
        fl_wire_send_tensor send;   /* SEND_TENSOR */
        fl_wire_bytes body;         /* REGISTER_PARTITION; RUN_PARTITION, PARTITION_DONE without an arena */
        fl_wire_run_partition run;  /* RUN_PARTITION, with an arena */
        fl_wire_partition_done done; /* PARTITION_DONE, with an arena */
        fl_wire_handshake handshake; /* CHALLENGE, PROOF, SERVER_PROOF */
    } u;
} fl_wire_message;

/* Unpacks the body, refuses fields this build does not know and any body
 * not in the form this build would encode (the size differs: a field twice,
 * a string with a NUL byte), then checks each field, as the encoders do.
 * Returns 0, or -1 with DATA_LOSS and a message that starts with the frame
 * type ("IS_INITIALIZED: name is empty"). With an arena (reset first), the
 * views of RUN_PARTITION and PARTITION_DONE are filled and live in it until
 * its next parse; without one (NULL) those two are checked and left in u.body. */
int fl_wire_parse_in(const fl_wire_frame *f, fl_wire_arena *arena, fl_wire_message *out, fl_status *st);
int fl_wire_parse(const fl_wire_frame *f, fl_wire_message *out, fl_status *st); /* no arena */
/* PARTITION_REGISTERED, ABORT_STEP, DEREGISTER_PARTITION: the handle or step. */
int fl_wire_parse_number(const fl_wire_frame *f, uint64_t *number, fl_status *st);

/* ---- the order of frames on one connection ----
 * A server checks what it receives: HELLO first, then requests, nothing after GOODBYE.
 * A server with a cluster secret answers HELLO with CHALLENGE and moves the
 * connection to FL_WIRE_AWAIT_PROOF itself: then only PROOF may come.
 * A client checks what it receives: HELLO_OK (or ERROR) first, maybe after
 * CHALLENGE and SERVER_PROOF, then replies only. */
typedef enum { FL_WIRE_SERVER_SIDE, FL_WIRE_CLIENT_SIDE } fl_wire_role;
typedef enum { FL_WIRE_AWAIT_HELLO, FL_WIRE_READY, FL_WIRE_CLOSED, FL_WIRE_AWAIT_PROOF } fl_wire_stage;

typedef struct {
    fl_wire_role role;
    fl_wire_stage stage;
} fl_wire_conn;

void fl_wire_conn_init(fl_wire_conn *conn, fl_wire_role role);
/* 0 and the stage advanced, or -1 and FAILED_PRECONDITION "RUN_PARTITION before HELLO: a connection starts with HELLO". */
int fl_wire_check_order(fl_wire_conn *conn, fl_wire_type type, fl_status *st);

#endif
