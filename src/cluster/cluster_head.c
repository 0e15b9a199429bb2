/* cluster_head.c: how a cluster begins, for the session it is given to: the
 * magic that says it is one, and the distributed runtime's table for a task
 * or for the client (session_plugin.c). Kept apart from cluster.c, which
 * that table's functions call. */
#include "cluster.h"

void fl_cluster_set_plugin(fl_cluster *c, bool client)
{
    c->head.magic = FL_CLUSTER_MAGIC;
    c->head.plugin = client ? &fl_cluster_client_plugin_table : &fl_cluster_task_plugin_table;
}
