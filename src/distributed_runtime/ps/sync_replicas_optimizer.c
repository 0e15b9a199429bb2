/* sync_replicas_optimizer.c: chapter 4's SyncReplicasOptimizer: for the
 * between-graph workers, which cut their own graphs, TensorFlow's
 * accumulator graph (sync_replicas_graph.c, its records in
 * sync_replicas_records.c). */
#include <stdlib.h>
#include <string.h>

#include "sync_replicas_optimizer.h"

/* TensorFlow's accumulator graph (sync_replicas_graph.c): the chief takes
 * the mean of the first replicas_to_aggregate gradients of each step; with
 * total_num_replicas larger, the others are backups whose late gradients
 * are dropped as stale. */
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
    return fl_optimizer_wrapping(opt, fl_sync_replicas_graph, replicas_to_aggregate);
}
