/* wire_put.c: one function per frame type that appends that frame to a buffer.
 * Each fills its body's message (wire.proto), runs the checks the receiver runs on
 * it (wire_check_body), so a frame that leaves here is one the other side accepts,
 * and packs it after the header. A refused frame leaves the buffer as it was. */
#include <stdio.h>

#include "wire_internal.h"

unsigned char *wire_put_header(fl_wire_buf *buf, fl_wire_type type, uint32_t id, size_t body, size_t tail_len)
{
    const char *name = fl_wire_type_name(type);
    uint32_t max = wire_max_body(type);
    if (body > max || tail_len > FL_WIRE_MAX_PAYLOAD - body) {
        snprintf(buf->error, sizeof buf->error, "%s: %zu bytes of body and %zu of tail, over the %u limit", name,
                 body, tail_len, body > max ? max : FL_WIRE_MAX_PAYLOAD);
        return NULL;
    }
    unsigned char *h = wire_extend(buf, FL_WIRE_HEADER_BYTES + body);
    if (!h) {
        snprintf(buf->error, sizeof buf->error, "%s: out of memory", name);
        return NULL;
    }
    wire_write_header(h, type, id, body, tail_len);
    return h + FL_WIRE_HEADER_BYTES;
}

int wire_put_message(fl_wire_buf *buf, fl_wire_type type, uint32_t id, const ProtobufCMessage *msg, size_t tail_len)
{
    fl_status why = {0};
    if (msg && wire_check_body(type, msg, tail_len, &why) != 0) {
        snprintf(buf->error, sizeof buf->error, "%.*s", (int)sizeof buf->error - 1, why.message); /* cut */
        return -1;
    }
    size_t body = msg ? protobuf_c_message_get_packed_size(msg) : 0;
    unsigned char *out = wire_put_header(buf, type, id, body, tail_len);
    if (!out)
        return -1;
    if (msg)
        protobuf_c_message_pack(msg, out);
    return 0;
}

static int refuse(fl_wire_buf *buf, fl_wire_type type, const char *why)
{
    snprintf(buf->error, sizeof buf->error, "%s: %s", fl_wire_type_name(type), why);
    return -1;
}

static int put_hello_frame(fl_wire_buf *buf, fl_wire_type type, uint32_t id, const char *job, uint32_t task_index)
{
    Flowlab__Hello m = FLOWLAB__HELLO__INIT;
    m.job = (char *)(job ? job : ""); /* protobuf-c packs no NULL string: the check says "is empty" */
    m.task = task_index;
    return wire_put_message(buf, type, id, &m.base, 0);
}

int fl_wire_put_hello(fl_wire_buf *buf, uint32_t id, const char *job, uint32_t task_index)
{
    return put_hello_frame(buf, FL_WIRE_HELLO, id, job, task_index);
}

int fl_wire_put_hello_ok(fl_wire_buf *buf, uint32_t id, const char *job, uint32_t task_index)
{
    return put_hello_frame(buf, FL_WIRE_HELLO_OK, id, job, task_index);
}

int fl_wire_put_init_done(fl_wire_buf *buf, uint32_t id, bool has_value)
{
    Flowlab__IsInitializedResponse m = FLOWLAB__IS_INITIALIZED_RESPONSE__INIT;
    m.has_value = has_value;
    return wire_put_message(buf, FL_WIRE_INIT_DONE, id, &m.base, 0);
}

int fl_wire_put_is_initialized(fl_wire_buf *buf, uint32_t id, const char *name)
{
    Flowlab__IsInitializedRequest m = FLOWLAB__IS_INITIALIZED_REQUEST__INIT;
    m.name = (char *)(name ? name : "");
    return wire_put_message(buf, FL_WIRE_IS_INITIALIZED, id, &m.base, 0);
}

int fl_wire_put_goodbye(fl_wire_buf *buf, uint32_t id) { return wire_put_message(buf, FL_WIRE_GOODBYE, id, NULL, 0); }
int fl_wire_put_ok(fl_wire_buf *buf, uint32_t id) { return wire_put_message(buf, FL_WIRE_OK, id, NULL, 0); }

int fl_wire_put_error(fl_wire_buf *buf, uint32_t id, fl_wire_error_code code, const char *message)
{
    char printable[FL_WIRE_MAX_MESSAGE + 1];
    size_t len = message ? strlen(message) : 0;
    if (len > FL_WIRE_MAX_MESSAGE)
        len = FL_WIRE_MAX_MESSAGE;
    for (size_t i = 0; i < len; i++)
        printable[i] = message[i] >= ' ' && message[i] <= '~' ? message[i] : '?';
    printable[len] = '\0';
    Flowlab__Error m = FLOWLAB__ERROR__INIT;
    m.code = (uint32_t)code;
    m.message = printable;
    return wire_put_message(buf, FL_WIRE_ERROR, id, &m.base, 0);
}

/* ---- the handshake: nonces and proofs of 32 bytes ---- */

static ProtobufCBinaryData block(const unsigned char bytes[FL_WIRE_PROOF_BYTES])
{
    return (ProtobufCBinaryData){FL_WIRE_PROOF_BYTES, (uint8_t *)bytes};
}

int fl_wire_put_challenge(fl_wire_buf *buf, uint32_t id, const unsigned char nonce[FL_WIRE_PROOF_BYTES])
{
    Flowlab__Challenge m = FLOWLAB__CHALLENGE__INIT;
    m.nonce = block(nonce);
    return wire_put_message(buf, FL_WIRE_CHALLENGE, id, &m.base, 0);
}

int fl_wire_put_proof(fl_wire_buf *buf, uint32_t id, const unsigned char proof[FL_WIRE_PROOF_BYTES],
                      const unsigned char nonce[FL_WIRE_PROOF_BYTES])
{
    Flowlab__Proof m = FLOWLAB__PROOF__INIT;
    m.proof = block(proof);
    m.nonce = block(nonce);
    return wire_put_message(buf, FL_WIRE_PROOF, id, &m.base, 0);
}

int fl_wire_put_server_proof(fl_wire_buf *buf, uint32_t id, const unsigned char proof[FL_WIRE_PROOF_BYTES])
{
    Flowlab__ServerProof m = FLOWLAB__SERVER_PROOF__INIT;
    m.proof = block(proof);
    return wire_put_message(buf, FL_WIRE_SERVER_PROOF, id, &m.base, 0);
}

/* ---- a partition's frames without tensors ---- */

int fl_wire_put_register_partition(fl_wire_buf *buf, uint32_t id, const void *graph, size_t len)
{
    if (!graph || len == 0)
        return refuse(buf, FL_WIRE_REGISTER_PARTITION, "no partition given");
    unsigned char *out = wire_put_header(buf, FL_WIRE_REGISTER_PARTITION, id, len, 0);
    if (out)
        memcpy(out, graph, len);
    return out ? 0 : -1;
}

int fl_wire_put_number(fl_wire_buf *buf, fl_wire_type type, uint32_t id, uint64_t number)
{
    Flowlab__AbortStepRequest abort_step = FLOWLAB__ABORT_STEP_REQUEST__INIT;
    Flowlab__DeregisterGraphRequest deregister = FLOWLAB__DEREGISTER_GRAPH_REQUEST__INIT;
    Flowlab__RegisterGraphResponse registered = FLOWLAB__REGISTER_GRAPH_RESPONSE__INIT;
    abort_step.step_id = deregister.graph_handle = registered.graph_handle = number;
    if (type == FL_WIRE_ABORT_STEP)
        return wire_put_message(buf, type, id, &abort_step.base, 0);
    if (type == FL_WIRE_DEREGISTER_PARTITION)
        return wire_put_message(buf, type, id, &deregister.base, 0);
    if (type == FL_WIRE_PARTITION_REGISTERED)
        return wire_put_message(buf, type, id, &registered.base, 0);
    return refuse(buf, type, "does not carry one number");
}

int fl_wire_put_partition_registered(fl_wire_buf *buf, uint32_t id, uint64_t handle)
{
    return fl_wire_put_number(buf, FL_WIRE_PARTITION_REGISTERED, id, handle);
}
