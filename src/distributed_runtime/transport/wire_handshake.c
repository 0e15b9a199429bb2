/* wire_handshake.c: the three frames of the handshake a cluster with a shared
 * secret adds after HELLO (CHALLENGE, PROOF, SERVER_PROOF). Their payloads
 * are fixed: 32-byte nonces and 32-byte proofs, nothing else, so a parse
 * checks one length. What a proof is and how it is checked: handshake.c. */
#include <stdio.h>
#include <string.h>

#include "wire_internal.h"

static int put_blocks(fl_wire_buf *buf, fl_wire_type type, uint32_t id, const unsigned char *first,
                      const unsigned char *second)
{
    long start = wire_begin(buf, type, id);
    if (start < 0)
        return -1;
    if (wire_append(buf, first, FL_WIRE_PROOF_BYTES) != 0 ||
        (second && wire_append(buf, second, FL_WIRE_PROOF_BYTES) != 0))
        return wire_abort(buf, start, "%s: out of memory", fl_wire_type_name(type));
    return wire_end(buf, start);
}

int fl_wire_put_challenge(fl_wire_buf *buf, uint32_t id, const unsigned char nonce[FL_WIRE_PROOF_BYTES])
{
    return put_blocks(buf, FL_WIRE_CHALLENGE, id, nonce, NULL);
}

int fl_wire_put_proof(fl_wire_buf *buf, uint32_t id, const unsigned char proof[FL_WIRE_PROOF_BYTES],
                      const unsigned char nonce[FL_WIRE_PROOF_BYTES])
{
    return put_blocks(buf, FL_WIRE_PROOF, id, proof, nonce);
}

int fl_wire_put_server_proof(fl_wire_buf *buf, uint32_t id, const unsigned char proof[FL_WIRE_PROOF_BYTES])
{
    return put_blocks(buf, FL_WIRE_SERVER_PROOF, id, proof, NULL);
}

int fl_wire_parse_handshake(const fl_wire_frame *f, fl_wire_handshake *out, fl_status *st)
{
    memset(out, 0, sizeof *out);
    size_t want = f->type == FL_WIRE_PROOF ? 2 * FL_WIRE_PROOF_BYTES : FL_WIRE_PROOF_BYTES;
    bool type_ok = f->type == FL_WIRE_CHALLENGE || f->type == FL_WIRE_PROOF || f->type == FL_WIRE_SERVER_PROOF;
    if (!type_ok) {
        fl_status_set(st, FL_DATA_LOSS, "%s: not a frame for the handshake parser", fl_wire_type_name(f->type));
        return -1;
    }
    if (f->payload_len != want) {
        fl_status_set(st, FL_DATA_LOSS, "%s: payload of %u bytes; it is %zu", fl_wire_type_name(f->type),
                      (unsigned)f->payload_len, want);
        return -1;
    }
    if (f->type == FL_WIRE_CHALLENGE)
        memcpy(out->nonce, f->payload, FL_WIRE_PROOF_BYTES);
    else
        memcpy(out->proof, f->payload, FL_WIRE_PROOF_BYTES);
    if (f->type == FL_WIRE_PROOF)
        memcpy(out->nonce, f->payload + FL_WIRE_PROOF_BYTES, FL_WIRE_PROOF_BYTES);
    return 0;
}
