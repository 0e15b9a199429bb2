/* cluster_security.h: what the runtime's connections read of a cluster's
 * security settings (set by fl_cluster_set_secret_file and fl_cluster_set_tls,
 * flowlab_cluster.h): the shared secret's bytes and the TLS contexts. */
#ifndef FLOWLAB_DIST_CLUSTER_SECURITY_H
#define FLOWLAB_DIST_CLUSTER_SECURITY_H

#include <stdbool.h>
#include <stddef.h>

#include "flowlab.h"

struct ssl_ctx_st;

/* The secret's bytes and their count (0 and NULL: the cluster has none). */
const unsigned char *fl_cluster_secret(const fl_cluster *c, size_t *len);
/* The TLS context for connections this task opens (server false) or
 * accepts (server true); NULL when the cluster runs plain TCP. */
struct ssl_ctx_st *fl_cluster_tls(const fl_cluster *c, bool server);

#endif
