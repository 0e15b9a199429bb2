/* cluster_plugin.c: the session's side of the cluster seam: what a program
 * gave as fl_session_options.cluster is checked to be a live fl_cluster
 * before the core calls its plugin, so that a wrong pointer is an error
 * with a hint, never a crash. */
#include <string.h>

#include "cluster_plugin.h"
#include "runtime.h"

int fl_cluster_check(const fl_cluster *cluster, const char *who)
{
    if (!cluster)
        return 0;
    uint32_t magic;
    memcpy(&magic, cluster, sizeof magic); /* the only read before we know it is a cluster */
    if (magic == FL_CLUSTER_MAGIC && fl_cluster_plugin_of(cluster))
        return 0;
    fl_set_error_code(FL_INVALID_ARGUMENT,
                      "%s: fl_session_options.cluster is %s (pass the cluster itself, as returned by "
                      "fl_cluster_from_flags, fl_cluster_client_from_flags or fl_cluster_from_tf_config, "
                      "and free it after the sessions that use it; flowlab_cluster.h)",
                      who, magic == FL_CLUSTER_FREED ? "a cluster already freed" : "not an fl_cluster");
    return -1;
}
