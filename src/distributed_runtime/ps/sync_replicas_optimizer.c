/* sync_replicas_optimizer.c: chapter 4's SyncReplicasOptimizer. Where a
 * between-graph worker's session cuts its graph, it builds TensorFlow's
 * accumulator graph (sync_replicas_graph.c); otherwise it marks the state
 * ops a core optimizer builds as synchronous, and the remote backend reads
 * the marks to send each update with the replicas it waits for
 * (backend_remote.c, then ps_sync.c). Both kept: sync_replicas_records.c. */
#include <stdlib.h>
#include <string.h>

#include "sync_replicas_optimizer.h"

bool fl_between_graph_partitions_on(void)
{
    const char *on = getenv("FLOWLAB_BETWEEN_GRAPH_PARTITIONS");
    return on && strcmp(on, "1") == 0;
}

/* Where the session will cut the graph: TensorFlow's accumulator graph
 * (sync_replicas_graph.c). Otherwise the same updates, each marked
 * synchronous, so a ps holding the variable counts them toward the
 * worker's step and runs the mean of the first replicas_to_aggregate once
 * (ps_sync.c). With total_num_replicas larger, the others are backups whose
 * late updates are dropped. On variables a process holds itself the marked
 * updates run at once: nobody to wait for. */
fl_optimizer *fl_sync_replicas_optimizer(const fl_optimizer *opt, int replicas_to_aggregate,
                                         int total_num_replicas)
{
    if (!opt) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_sync_replicas_optimizer: the optimizer to wrap is NULL");
        return NULL;
    }
    if (replicas_to_aggregate < 1 || replicas_to_aggregate > 65535 || total_num_replicas < replicas_to_aggregate) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_sync_replicas_optimizer: replicas_to_aggregate must be 1..65535 "
                          "and at most total_num_replicas (got %d of %d)", replicas_to_aggregate, total_num_replicas);
        return NULL;
    }
    if (fl_between_graph_partitions_on())
        return fl_optimizer_wrapping(opt, fl_sync_replicas_graph, replicas_to_aggregate);
    return fl_optimizer_marking(opt, fl_sync_replicas_mark, replicas_to_aggregate);
}
