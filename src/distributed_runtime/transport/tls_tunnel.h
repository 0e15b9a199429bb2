/* tls_tunnel.h: TLS for a worker's blocking connections. A worker's
 * connection to a ps has a writer thread and a reader thread on one socket
 * (task_client.c), and one TLS session must not be driven by two threads at
 * once. So the TLS session gets a thread of its own, between the TCP socket
 * and one end of a socket pair; the connection's threads use the other end
 * as if it were the TCP socket, and never know TLS is there. */
#ifndef FLOWLAB_DIST_TLS_TUNNEL_H
#define FLOWLAB_DIST_TLS_TUNNEL_H

struct ssl_ctx_st;

/* Runs the TLS 1.3 handshake on the connected tcp socket (the server's
 * certificate checked against ctx's CA) and starts the tunnel's thread,
 * which owns tcp from then on. The socket to use instead, or -1 after
 * fl_set_error_code naming who (UNAUTHENTICATED when a certificate was
 * refused; tcp is closed). If the server refuses this task's certificate
 * (which TLS 1.3 says only after the handshake), the tunnel answers the
 * first request with an ERROR frame of code UNAUTHENTICATED, so the refusal
 * reaches the worker as a refusal, not as a lost connection to retry. */
int fl_tls_tunnel_open(int tcp, struct ssl_ctx_st *ctx, const char *who);

#endif
