/* cluster_security.h: what the runtime's connections read of a cluster's
 * security settings (set by fl_cluster_set_secret_file and fl_cluster_set_tls,
 * flowlab_cluster.h): the shared secret's bytes and the TLS contexts. */
#ifndef FLOWLAB_DIST_CLUSTER_SECURITY_H
#define FLOWLAB_DIST_CLUSTER_SECURITY_H

#include <stdbool.h>
#include <stddef.h>

#include "flowlab_cluster.h"

struct ssl_ctx_st;
struct sockaddr;

/* The secret's bytes and their count (0 and NULL: the cluster has none). */
const unsigned char *fl_cluster_secret(const fl_cluster *c, size_t *len);
/* The TLS context for connections this task opens (server false) or
 * accepts (server true); NULL when the cluster runs plain TCP. */
struct ssl_ctx_st *fl_cluster_tls(const fl_cluster *c, bool server);

/* 0 when this task's server may listen at addr: a loopback address; or the
 * cluster has a secret or TLS; or fl_cluster_allow_insecure_listen or
 * FLOWLAB_INSECURE_LISTEN allow it anyway (then a warning goes to log).
 * Otherwise -1 with fl_last_error() naming the task, the address,
 * --cluster_secret_file and --insecure_listen (listen_security.c). */
int fl_check_listen_security(const fl_cluster *c, const struct sockaddr *addr, const char *task, const char *host,
                             int port, void *log);

#endif
