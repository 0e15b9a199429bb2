/* server_handshake.c: the end of a connection's HELLO: welcomed at once,
 * or first the server's half of the shared secret's handshake (handshake.h). A connection to a task whose cluster has a secret is sent
 * a fresh nonce after its HELLO and may send nothing but its PROOF; until
 * that proof is right it is served nothing and changes nothing. A wrong
 * proof is refused: logged with the peer's address, one ERROR frame that
 * says only that it was refused, and the connection closed. */
#include <string.h>

#include "distributed_runtime/partition/cluster_security.h"
#include "distributed_runtime/transport/handshake.h"
#include "server_internal.h"

/* The connection is who it said it was: its requests are served from now on. */
void fl_server_welcome(fl_server_conn *c, uint32_t id)
{
    fl_server *s = c->server;
    c->challenged = false;
    snprintf(c->who, sizeof c->who, "(/job:%s/task:%d)", c->job, c->task);
    fl_server_guard_welcomed(c); /* no deadline now: a worker may compute for long between requests */
    fl_server_note_connected(s, c->job, c->task);
    fl_wire_put_hello_ok(&s->out, id, s->job, (uint32_t)s->task);
    fl_server_send_out(c);
}

bool fl_server_challenge(fl_server_conn *c, uint32_t id)
{
    fl_server *s = c->server;
    size_t secret_len;
    if (!fl_cluster_secret(s->cluster, &secret_len))
        return false;
    if (fl_handshake_nonce(c->nonce) != 0) {
        fl_server_refuse(c, id, FL_WIRE_E_INTERNAL, fl_last_error());
        return true;
    }
    fl_wire_put_challenge(&s->out, id, c->nonce);
    fl_server_send_out(c);
    c->order.stage = FL_WIRE_AWAIT_PROOF;
    c->challenged = true;
    return true;
}

static void refuse_stranger(fl_server_conn *c, uint32_t id)
{
    char why[FL_WIRE_ERROR_LEN], job[4 * FL_WIRE_MAX_NAME + 1];
    fl_escape_untrusted(c->job, strlen(c->job), job, sizeof job);
    snprintf(why, sizeof why, "refused: no valid proof of the cluster secret from a peer that says it is "
             "/job:%s/task:%d", job, c->task);
    fl_server_refuse(c, id, FL_WIRE_E_UNAUTHENTICATED, why);
}

// [book:serve_proof]
void fl_server_serve_proof(fl_server_conn *c, uint32_t id, const fl_wire_handshake *h)
{
    fl_server *s = c->server;
    size_t len;
    const unsigned char *secret = fl_cluster_secret(s->cluster, &len);
    if (!fl_handshake_proof_matches(secret, len, FL_PROVER_CLIENT, c->nonce, c->job, (uint32_t)c->task, h->proof))
        return refuse_stranger(c, id);
    unsigned char proof[FL_WIRE_PROOF_BYTES];
    if (fl_handshake_proof(secret, len, FL_PROVER_SERVER, h->nonce, s->job, (uint32_t)s->task, proof) != 0)
        return fl_server_refuse(c, id, FL_WIRE_E_INTERNAL, fl_last_error());
    fl_wire_put_server_proof(&s->out, id, proof);
    fl_server_send_out(c);
    fl_server_welcome(c, id);
}
// [end:serve_proof]
