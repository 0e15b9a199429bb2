/* handshake.h: how two tasks that share a secret prove it to each other,
 * without sending it (book chapter 4, "Securing a cluster"). After HELLO the
 * server sends a fresh nonce (CHALLENGE); the client answers with
 *   HMAC-SHA256(secret, "flowlab client" | nonce | job | task)
 * for its own job and task, and a nonce of its own (PROOF); the server
 * answers that nonce the same way, with "flowlab server" and its own job
 * and task (SERVER_PROOF), then HELLO_OK. A proof made for one nonce is
 * worth nothing on another connection, so a recorded handshake cannot be
 * replayed. OpenSSL does the cryptography; nothing here is hand-written. */
#ifndef FLOWLAB_DIST_HANDSHAKE_H
#define FLOWLAB_DIST_HANDSHAKE_H

#include <stdbool.h>

#include "connect.h"
#include "wire.h"

typedef enum { FL_PROVER_CLIENT, FL_PROVER_SERVER } fl_prover;

/* Fresh random bytes (OpenSSL's RAND_bytes). 0, or -1 after fl_set_error. */
int fl_handshake_nonce(unsigned char nonce[FL_WIRE_PROOF_BYTES]);
/* The proof that `who` (job, task) on side `side` knows the secret, for nonce. */
int fl_handshake_proof(const unsigned char *secret, size_t secret_len, fl_prover side,
                       const unsigned char nonce[FL_WIRE_PROOF_BYTES], const char *job, uint32_t task,
                       unsigned char proof[FL_WIRE_PROOF_BYTES]);
/* Whether got is the proof expected, compared in constant time. */
bool fl_handshake_proof_matches(const unsigned char *secret, size_t secret_len, fl_prover side,
                                const unsigned char nonce[FL_WIRE_PROOF_BYTES], const char *job, uint32_t task,
                                const unsigned char got[FL_WIRE_PROOF_BYTES]);

/* The client's half, on a blocking socket (task_client.c's hello), after the
 * server's CHALLENGE: sends PROOF, reads SERVER_PROOF into buf and checks
 * it names the peer o->job/o->task. 0; -1 when the connection failed (try
 * again); -2 when either side refused (final). st says which. */
int fl_handshake_client(int fd, const fl_connect_options *o, const char *my_job, int my_task,
                        const unsigned char challenge[FL_WIRE_PROOF_BYTES], fl_wire_buf *buf, fl_status *st);

#endif
