/* handshake.c: the proofs of a shared secret (see handshake.h): HMAC-SHA256
 * by OpenSSL's EVP_MAC, nonces from RAND_bytes, comparison by CRYPTO_memcmp
 * (its time does not depend on where two proofs first differ, so a stranger
 * cannot find a proof byte by byte), and the client's half of the exchange. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "frame_reader.h"
#include "handshake.h"
#include "runtime.h"
#include "socket_writer.h"

int fl_handshake_nonce(unsigned char nonce[FL_WIRE_PROOF_BYTES])
{
    if (RAND_bytes(nonce, FL_WIRE_PROOF_BYTES) == 1)
        return 0;
    fl_set_error_code(FL_INTERNAL, "OpenSSL's RAND_bytes could not make a nonce");
    return -1;
}

/* What a proof covers: the side, the nonce, the job (its length first, so
 * that no two (job, task) pairs give the same bytes) and the task. */
static size_t proof_message(fl_prover side, const unsigned char nonce[FL_WIRE_PROOF_BYTES], const char *job,
                            uint32_t task, unsigned char *out)
{
    const char *label = side == FL_PROVER_CLIENT ? "flowlab client" : "flowlab server";
    size_t n = strlen(label) + 1, job_len = strnlen(job, FL_WIRE_MAX_NAME);
    memcpy(out, label, n); /* with its '\0' */
    memcpy(out + n, nonce, FL_WIRE_PROOF_BYTES);
    n += FL_WIRE_PROOF_BYTES;
    out[n++] = (unsigned char)job_len;
    memcpy(out + n, job, job_len);
    n += job_len;
    for (int i = 0; i < 4; i++)
        out[n++] = (unsigned char)(task >> (24 - 8 * i));
    return n;
}

int fl_handshake_proof(const unsigned char *secret, size_t secret_len, fl_prover side,
                       const unsigned char nonce[FL_WIRE_PROOF_BYTES], const char *job, uint32_t task,
                       unsigned char proof[FL_WIRE_PROOF_BYTES])
{
    unsigned char message[16 + FL_WIRE_PROOF_BYTES + 1 + FL_WIRE_MAX_NAME + 4];
    size_t len = proof_message(side, nonce, job, task, message), out_len = 0;
    EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = hmac ? EVP_MAC_CTX_new(hmac) : NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                           OSSL_PARAM_construct_end()};
    int ok = ctx && EVP_MAC_init(ctx, secret, secret_len, params) == 1 && EVP_MAC_update(ctx, message, len) == 1 &&
             EVP_MAC_final(ctx, proof, &out_len, FL_WIRE_PROOF_BYTES) == 1 && out_len == FL_WIRE_PROOF_BYTES;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(hmac);
    if (ok)
        return 0;
    fl_set_error_code(FL_INTERNAL, "OpenSSL's HMAC-SHA256 failed");
    return -1;
}

bool fl_handshake_proof_matches(const unsigned char *secret, size_t secret_len, fl_prover side,
                                const unsigned char nonce[FL_WIRE_PROOF_BYTES], const char *job, uint32_t task,
                                const unsigned char got[FL_WIRE_PROOF_BYTES])
{
    unsigned char want[FL_WIRE_PROOF_BYTES];
    if (fl_handshake_proof(secret, secret_len, side, nonce, job, task, want) != 0)
        return false;
    bool same = CRYPTO_memcmp(want, got, FL_WIRE_PROOF_BYTES) == 0;
    OPENSSL_cleanse(want, sizeof want);
    return same;
}

/* SERVER_PROOF, or ERROR (a refusal), into *m. 0, -1 (lost), -2 (refused). */
static int read_server_proof(int fd, fl_wire_buf *buf, fl_wire_message *m, fl_status *st)
{
    fl_wire_frame f;
    int rc = fl_read_frame(fd, buf, &f, st);
    if (rc == 0)
        fl_status_set(st, FL_UNAVAILABLE, "the connection closed during the handshake");
    if (rc != 1 || fl_wire_parse(&f, m, st) != 0)
        return -1;
    if (m->type == FL_WIRE_ERROR) {
        char said[FL_STATUS_MESSAGE_LEN];
        fl_escape_untrusted(m->u.error.message, strlen(m->u.error.message), said, sizeof said); /* the peer's words */
        fl_status_set(st, fl_wire_error_meaning(m->u.error.code), "%s", said);
        return -2;
    }
    if (m->type != FL_WIRE_SERVER_PROOF) {
        fl_status_set(st, FL_UNAUTHENTICATED, "%s where SERVER_PROOF belongs", fl_wire_type_name(m->type));
        return -2;
    }
    return 0;
}

int fl_handshake_client(int fd, const fl_connect_options *o, const char *my_job, int my_task,
                        const unsigned char challenge[FL_WIRE_PROOF_BYTES], fl_wire_buf *buf, fl_status *st)
{
    if (o->secret_len == 0) {
        fl_status_set(st, FL_UNAUTHENTICATED, "it asks for the cluster's secret, which this task was not given "
                      "(--cluster_secret_file or FLOWLAB_CLUSTER_SECRET_FILE)");
        return -2;
    }
    unsigned char proof[FL_WIRE_PROOF_BYTES], nonce[FL_WIRE_PROOF_BYTES];
    fl_wire_buf out = {0};
    int rc = -2; /* OpenSSL failed: no point in trying again */
    if (fl_handshake_nonce(nonce) == 0 &&
        fl_handshake_proof(o->secret, o->secret_len, FL_PROVER_CLIENT, challenge, my_job, (uint32_t)my_task,
                           proof) == 0 &&
        fl_wire_put_proof(&out, 0, proof, nonce) == 0)
        rc = fl_socket_write_all(fd, out.data, out.len); /* 0, or -1: the connection failed */
    fl_wire_buf_free(&out);
    if (rc != 0) {
        fl_status_set(st, rc == -2 ? fl_last_error_code() : FL_UNAVAILABLE, "%s",
                      rc == -2 ? fl_last_error() : strerror(errno));
        return rc == -2 ? -2 : -1;
    }
    fl_wire_message *m = fl_xmalloc(sizeof *m);
    rc = read_server_proof(fd, buf, m, st);
    if (rc == 0 && !fl_handshake_proof_matches(o->secret, o->secret_len, FL_PROVER_SERVER, nonce, o->job,
                                               (uint32_t)o->task, m->u.handshake.proof)) {
        fl_status_set(st, FL_UNAUTHENTICATED, "its proof of the cluster secret is wrong: it does not know the secret, "
                      "or it is not /job:%s/task:%d (a false task?)", o->job, o->task);
        rc = -2;
    }
    free(m);
    return rc;
}
