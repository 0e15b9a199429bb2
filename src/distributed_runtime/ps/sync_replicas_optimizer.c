/* sync_replicas_optimizer.c: chapter 4's SyncReplicasOptimizer. It marks
 * the state ops a core optimizer builds as synchronous, in records the graph
 * keeps for this runtime; the remote backend reads them to send each update
 * with the replicas it waits for (backend_remote.c, then ps_sync.c). */
#include <stdlib.h>

#include "sync_replicas_optimizer.h"

/* replicas[id]: the replicas_to_aggregate of the graph's node id; 0 for a
 * node that is not a synchronous update. */
typedef struct {
    int *replicas;
    int count;
} sync_records;

static void free_records(void *records)
{
    sync_records *r = records;
    if (r)
        free(r->replicas);
    free(r);
}

static void mark_synchronous(fl_node *op, int replicas_to_aggregate)
{
    sync_records *r = fl_graph_runtime_records(op->graph);
    if (!r) {
        r = fl_xcalloc(1, sizeof *r);
        fl_graph_set_runtime_records(op->graph, r, free_records);
    }
    if (op->id >= r->count) {
        int count = op->id + 64;
        r->replicas = fl_xrealloc(r->replicas, (size_t)count * sizeof *r->replicas);
        for (int i = r->count; i < count; i++)
            r->replicas[i] = 0;
        r->count = count;
    }
    r->replicas[op->id] = replicas_to_aggregate;
}

int fl_sync_replicas_to_aggregate(const fl_node *n)
{
    const sync_records *r = fl_graph_runtime_records(n->graph);
    return r && n->id < r->count ? r->replicas[n->id] : 0;
}

/* The same updates, each marked synchronous, so a ps holding the variable
 * counts them toward the worker's step and runs the mean of the first
 * replicas_to_aggregate once (ps_sync.c). With total_num_replicas larger,
 * the others are backups whose late updates are dropped. On variables a
 * process holds itself the updates run at once: nobody to wait for. */
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
    return fl_optimizer_marking(opt, mark_synchronous, replicas_to_aggregate);
}
