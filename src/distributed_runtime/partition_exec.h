/* partition_exec.h: a registered partition on its task server, and one
 * step of it: the waves in order, each one session run, with the values
 * this task receives waited for in the rendezvous and the values it sends
 * going straight to their task. Runs on a thread of its own (not the
 * server's event loop); one step of a partition at a time. */
#ifndef FLOWLAB_DIST_PARTITION_EXEC_H
#define FLOWLAB_DIST_PARTITION_EXEC_H

#include <stdatomic.h>

#include "graph_partition.h"
#include "rendezvous.h"

typedef struct fl_partition_exec fl_partition_exec;

/* Takes p's contents (p is left empty). Control inputs from an earlier
 * wave are kept aside: the wave order already runs them first. */
fl_partition_exec *fl_partition_exec_new(fl_graph_partition *p);
void fl_partition_exec_free(fl_partition_exec *e);
/* The session the partition's steps run in: NULL until its first step has
 * made it. Its tracing may be turned on between steps, on the run's thread. */
fl_session *fl_partition_exec_session(fl_partition_exec *e);

/* Variables live in the task, not in one partition (TensorFlow keeps them
 * in the task's resource manager): a partition registered after `older`,
 * by the same client, starts from the values older's variables of the
 * same name, dtype and shape hold now. Returns how many were carried. */
int fl_partition_exec_inherit(fl_partition_exec *e, fl_partition_exec *older, const char *task);

/* What a step needs from its server. */
typedef struct {
    fl_rendezvous *rendezvous;
    const fl_cluster *cluster; /* the peers a send goes to (their connections) */
    const char *task;          /* this task: "/job:worker/task:1" */
    FILE *log;
    const char *log_prefix;    /* "worker 1" */
    /* Set (by the loop thread) when the run's client has gone: the run
     * stops before its next wave or op, ABORTED (NULL: it runs to the end). */
    const atomic_bool *cancelled;
} fl_partition_env;

/* One step: outputs[i] gets a new tensor for fetch i (the caller frees
 * them); 0, or -1 after fl_set_error_code with all outputs NULL. */
int fl_partition_exec_run(fl_partition_exec *e, const fl_partition_env *env, const fl_wire_run_partition *run,
                          fl_tensor **outputs);

#endif
