/* partition_exec.h: a registered partition on its task server, and one
 * step of it: one session run, whose Recv nodes take the values this task
 * receives from the rendezvous and whose Send nodes send values straight
 * to their task. Runs on a thread of its own (not the server's event
 * loop); one step of a partition at a time. */
#ifndef FLOWLAB_DIST_PARTITION_EXEC_H
#define FLOWLAB_DIST_PARTITION_EXEC_H

#include <stdatomic.h>

#include "graph_partition.h"
#include "rendezvous.h"
#include "variable_container.h"

typedef struct fl_partition_exec fl_partition_exec;

/* Takes p's contents (p is left empty); its Send and Recv nodes run on
 * r, the task's rendezvous (NULL outside a server: a partition with them
 * is refused at its first, named). Its host variables live in `variables`,
 * the task's container, shared with every partition registered there, by
 * any client (TensorFlow's ResourceMgr); NULL: in its own session. */
fl_partition_exec *fl_partition_exec_new(fl_graph_partition *p, fl_rendezvous *r, fl_variable_container *variables);
void fl_partition_exec_free(fl_partition_exec *e);
/* The session the partition's steps run in: NULL until its first step has
 * made it. Its tracing may be turned on between steps, on the run's thread. */
fl_session *fl_partition_exec_session(fl_partition_exec *e);

/* What a step needs from its server. */
typedef struct {
    fl_rendezvous *rendezvous;
    const fl_cluster *cluster; /* the peers a send goes to (their connections) */
    const char *task;          /* this task: "/job:worker/task:1" */
    FILE *log;
    const char *log_prefix;    /* "worker 1" */
    /* Set (by the loop thread) when the run's client has gone: the run
     * stops before its next op or wait, ABORTED (NULL: it runs to the end). */
    const atomic_bool *cancelled;
    int *stale_dropped; /* the step's gradients its accumulators dropped as stale, counted here (NULL: not) */
} fl_partition_env;

/* One step: outputs[i] gets fetch i's host tensor, the partition's own,
 * valid until its next step (the caller must not free it); 0, or -1 after
 * fl_set_error_code with all outputs NULL. The
 * arrays of its run signature (names resolved, feeds' host tensors) are
 * made when the signature changes and reused while it stays. */
int fl_partition_exec_run(fl_partition_exec *e, const fl_partition_env *env, const fl_wire_run_partition *run,
                          fl_tensor **outputs);

/* How many run signatures e has resolved: a warm step adds none (tests). */
int fl_partition_exec_signatures_made(const fl_partition_exec *e);

#endif
