/* ps_sync.h: synchronous replicas on a parameter server (chapter 4), as
 * TensorFlow's SyncReplicasOptimizer does with its conditional accumulators.
 * An update a worker sends for step s is counted, not run: the first
 * `replicas` that arrive for a variable's step are averaged and run once;
 * one computed against an older step is dropped. Loop thread only. */
#ifndef FLOWLAB_PS_SYNC_H
#define FLOWLAB_PS_SYNC_H

#include "ps_store.h"
#include "distributed_runtime/transport/wire.h"

typedef struct fl_ps_sync fl_ps_sync;

fl_ps_sync *fl_ps_sync_new(fl_ps_store *store);
void fl_ps_sync_free(fl_ps_sync *s);

/* Counts one update of vars[0] (op and its variables as fl_ps_store_run
 * takes them; arg the gradient, value or delta) toward sync->step. When it
 * is the sync->replicas-th for that step the update runs once: an Apply*
 * with the mean of the gradients, an Assign or AssignAdd with the last value
 * sent. *outcome says which; -1 with st naming the variable on a mismatch. */
int fl_ps_sync_update(fl_ps_sync *s, fl_op_kind op, const fl_attrs *attrs, const char *const *vars, int nvars,
                      const fl_tensor *arg, const fl_wire_sync *sync, fl_wire_sync_outcome *outcome, fl_status *st);
/* The step the last update was counted toward: sync->step, or for
 * FL_WIRE_STEP_UNKNOWN the step the variable was at (an int32 scalar's own
 * value: the global step). */
uint64_t fl_ps_sync_last_step(const fl_ps_sync *s);
/* The variable was given a value directly (initialised, restored): what
 * its accumulator held, and the steps it had run, no longer count. */
void fl_ps_sync_reset(fl_ps_sync *s, const char *name);

#endif
