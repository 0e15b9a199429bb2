/* master.h: TensorFlow's master, living in the client of a cluster (in-graph
 * replication across tasks): it partitions a session's graph per run
 * signature, registers the pieces on their tasks (master.c) and runs a step
 * as one request per task, all at once (master_step.c). */
#ifndef FLOWLAB_DIST_MASTER_H
#define FLOWLAB_DIST_MASTER_H

#include "graph_partition.h"
#include "distributed_runtime/transport/task_client.h"

typedef struct fl_master fl_master;

/* reuse_memory: the session's option, passed with every partition, so the
 * tasks' sessions pool their values as the session's would. */
fl_master *fl_master_new(const fl_cluster *cluster, fl_graph *g, bool reuse_memory);
/* A between-graph worker's (issue 36 item 2): nodes without a task run on
 * the cluster's own task, in its server, which the caller has acquired
 * (server/task_server.c) and releases after fl_master_free. */
fl_master *fl_master_new_on_task(const fl_cluster *cluster, fl_graph *g, bool reuse_memory);
const fl_cluster *fl_master_cluster(const fl_master *m);
fl_graph *fl_master_graph(const fl_master *m);
/* As fl_session_run: 0, or -1 with fl_last_error() and its code set (every
 * output NULL). */
int fl_master_run(fl_master *m, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                  fl_tensor **outputs, fl_node *const *targets, int ntargets);
/* fl_master_run, where a target may be a synchronous train op: the
 * chief's part and the stale flags go with it (master_sync.c). */
int fl_master_run_training(fl_master *m, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                           fl_tensor **outputs, fl_node *const *targets, int ntargets);
/* What a between-graph worker's master keeps of its synchronous training
 * (master_sync.c), zero at its start: the train op it is about, whether
 * the chief set the accumulators' steps since the model was last prepared,
 * and the token its last wait returned (the next step's local step). */
typedef struct {
    const void *train;
    bool chief_ready, has_token;
    int32_t token;
} fl_master_sync_state;
fl_master_sync_state *fl_master_sync(fl_master *m);
/* The chief's session ends (master_sync.c): each synchronous train op's
 * token is closed on its ps, so the workers waiting for a step that never
 * comes end (OUT_OF_RANGE). Nothing for another worker, or no such op. */
void fl_master_end_training(fl_master *m);
/* The task and device n was asked to run on ("/job:worker/task:1/cpu:0"),
 * once a run of m that needed it has succeeded; NULL before, or when n is
 * not of m's graph. Valid until m is freed. */
const char *fl_master_node_device(fl_master *m, const fl_node *n);
/* Whether var has a value on the task that holds it: 1, 0, or -1 after fl_set_error. */
int fl_master_variable_has_value(fl_master *m, const fl_node *var);
/* The session the next runs' tasks report their timings into; NULL: none. */
void fl_master_trace_into(fl_master *m, fl_session *trace);
/* Says goodbye to every task of the cluster and frees m. */
void fl_master_free(fl_master *m);

/* One step on the tasks (master_step.c): partition p of cut runs
 * runs[p] on clients[p] with handles[p]; every request goes out at once.
 * *kept: the step's bookkeeping, made at the first step and kept for the
 * next (fl_step_calls_free).
 * outputs[p] receives run p's fetches. When a task fails, the step is
 * aborted on the others; the error is the lost task's (UNAVAILABLE) when
 * one was lost, else the first, led by `which` (the step in the user's
 * words: "run 7 of this session"). 0, or -1 with the error set. */
typedef struct fl_step_calls fl_step_calls;
int fl_master_step(fl_step_calls **kept, int nparts, fl_task_client **clients, const uint64_t *handles,
                   const fl_partition_run *runs, fl_tensor ***outputs, const fl_graph_partition *parts,
                   const char *which, fl_session *trace);
void fl_step_calls_free(fl_step_calls *kept);
/* trace: NULL, or the session each task's timings of the step go into. */

/* A traced step's part from one task (master_trace.c): its request from
 * sent_us to replied_us (fl_now_us) and the ops it reported, on the
 * client's clock, into trace's timeline. */
void fl_master_trace_task(fl_session *trace, const char *task, const fl_wire_step_trace *t, double sent_us,
                          double replied_us);

#endif
