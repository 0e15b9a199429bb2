/* sync_replicas_optimizer.h: what the remote backend asks of chapter 4's
 * SyncReplicasOptimizer (sync_replicas_optimizer.c): whether an update it
 * sends is synchronous, and how many replicas make its step. */
#ifndef FLOWLAB_SYNC_REPLICAS_OPTIMIZER_H
#define FLOWLAB_SYNC_REPLICAS_OPTIMIZER_H

#include "runtime.h"

/* The replicas_to_aggregate n was built with by fl_sync_replicas_optimizer;
 * 0 for any other node (an update that runs at once). */
int fl_sync_replicas_to_aggregate(const fl_node *n);

#endif
