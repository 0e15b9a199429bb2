/* sync_replicas_optimizer.h: what the cluster runtime asks of chapter 4's
 * SyncReplicasOptimizer (sync_replicas_optimizer.c, its records in
 * sync_replicas_records.c): the accumulator graph it built
 * (sync_replicas_graph.c) for each train op. */
#ifndef FLOWLAB_SYNC_REPLICAS_OPTIMIZER_H
#define FLOWLAB_SYNC_REPLICAS_OPTIMIZER_H

#include "runtime.h"

/* One train op of the accumulator graph, as TensorFlow's
 * SyncReplicasOptimizer builds it. */
typedef struct {
    fl_node *train;      /* what every worker runs: its applies, then its wait for the chief's update */
    fl_node *chief;      /* the chief's part: the takes, the updates, the global step, the token */
    fl_node *chief_init; /* the chief's at its start: every accumulator's step and the token set to the global step */
    fl_node *local_step; /* each gradient's tag: the global step read, or fed the token of the worker's last wait */
    fl_node *wait;       /* the wait for the token: its step once the chief's update passed the local step */
    fl_node **applies;   /* one per variable: 1 when the gradient came stale and was dropped */
    int napplies;
    fl_node *close;      /* the chief's at its session's end: the token closed, the waiting workers' training over */
} fl_sync_train;

/* The train op's record when n is one (owned by n's graph), else NULL. */
const fl_sync_train *fl_sync_train_of(const fl_node *n);
/* g's train ops' records: how many, *first the first (owned by g). */
int fl_sync_trains_of(const fl_graph *g, const fl_sync_train **first);
/* Kept with g (t's applies array becomes the graph's). */
void fl_sync_train_record(fl_graph *g, const fl_sync_train *t);
/* sync_replicas_graph.c: fl_optimizer_wrapping's wrap that builds it. */
fl_node *fl_sync_replicas_graph(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                                fl_node *global_step, const char *scope, int replicas_to_aggregate);

#endif
