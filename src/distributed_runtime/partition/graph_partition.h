/* graph_partition.h: one graph cut into one piece per task, as TensorFlow's
 * distributed master does for in-graph replication across tasks (chapter 3).
 * The client's master builds the pieces (graph_partition.c), the wire carries
 * them (partition_def.c: a GraphDef), and a task server runs its piece each step. */
#ifndef FLOWLAB_DIST_GRAPH_PARTITION_H
#define FLOWLAB_DIST_GRAPH_PARTITION_H

#include <stdint.h>

#include "runtime.h"
#include "distributed_runtime/transport/wire.h"

/* One task's piece of the graph. Its graph holds copies of the nodes placed
 * on that task (same names; devices made local: "/cpu:0", "/gpu:1"), and a
 * Send/Recv pair per value that crosses tasks (TensorFlow's _Send and
 * _Recv): on the value's task a Send "_send/VALUE/to/JOB/TASK", on the
 * reader's a Recv "_recv/VALUE" of the same dtype and shape, one pair per
 * (value, receiving task) however many nodes there read it. Both carry the
 * key that matches them in the rendezvous, unique in the whole graph:
 * "dense/kernel/read:/job:ps/task:0->/job:worker/task:1". A control edge
 * that crosses tasks sends a token: a scalar "_send_control/NODE" made
 * after the node on its task, received into "_recv_control/NODE", which
 * the waiting nodes take as their control input; its key starts with '^'.
 * A task runs its piece as one executor run: a Recv's readers start when
 * its value arrives, a Send leaves as soon as its input is ready. */
typedef struct {
    char job[32];
    int task;
    fl_graph *graph;  /* owned */
    bool reuse_memory; /* the client's fl_session_options.reuse_memory: the task's session pools values */
} fl_graph_partition;

void fl_graph_partition_free(fl_graph_partition *p); /* the struct's contents */

/* One step of a registered partition: what the client asks a task to run.
 * Names are nodes of the partition's graph. The Sends this run needs are
 * among its targets (a Recv is run by the nodes that read it), so a run
 * that only evaluates does not send or wait for gradients. */
typedef struct {
    uint64_t step_id;          /* unique per client run; keys the rendezvous */
    const char **feed_names;   /* placeholders the client feeds, with values */
    const fl_tensor **feed_values;
    int nfeeds;
    const char **fetch_names;  /* values returned to the client */
    int nfetches;
    const char **target_names; /* nodes run for their effect */
    int ntargets;
} fl_partition_run;

/* A task: "/job:ps/task:0" as its parts. */
typedef struct {
    char job[32]; /* "": worker */
    int task;
} fl_task_ref;

/* What one run asks for (its signature), in the user's graph, and the task
 * that runs what has no task (zero: worker 0). */
typedef struct {
    fl_node *const *feeds;
    int nfeeds;
    fl_node *const *fetches;
    int nfetches;
    fl_node *const *targets;
    int ntargets;
    fl_task_ref home;
    bool reuse_memory; /* the client session's: each part's session pools its values too */
} fl_partition_request;

/* One partition per task the run needs (ordered by job name, then task),
 * and which partition holds each feed, fetch and target (the same names
 * there; -1 for a feed the run does not need). */
typedef struct {
    fl_graph_partition *parts;
    int nparts;
    int *feed_part, *fetch_part, *target_part;
    fl_task_ref home; /* the request's */
} fl_partitioned_run;

/* graph_partition.c: prunes g to what the run needs and cuts it by task
 * (a node's task from its device; none: run->home). A fed node
 * becomes a Placeholder of the same name. 0, or -1 with fl_last_error()
 * naming the node at fault (INVALID_ARGUMENT). g is not changed. */
int fl_partition_graph(const fl_graph *g, const fl_partition_request *run, fl_partitioned_run *out);
void fl_partitioned_run_free(fl_partitioned_run *r);

/* What a run needs of g (needed[id]) and which nodes it feeds (fed[id]):
 * the roots and what they read, stopping at fed nodes. Arrays of g's size. */
void fl_partition_prune(const fl_graph *g, const fl_partition_request *run, bool *needed, bool *fed);
/* The partition of cut that holds n (the task n's device names), or -1. */
int fl_partition_of_node(const fl_partitioned_run *cut, const fl_node *n);
/* The task and device n runs on in cut, as the master asks it of the task:
 * "/job:worker/task:1/cpu:0" (no device: the home task's /cpu:0). 0, or -1
 * with fl_last_error() naming n when its device does not parse. */
int fl_partition_node_device(const fl_partitioned_run *cut, const fl_node *n, char *out, size_t len);
/* The Send on from's graph that sends before's value (control: the token
 * made after before) to task `to`; NULL when the cut has no such edge. */
fl_node *fl_partition_send_of(const fl_graph_partition *from, const fl_graph_partition *to, const fl_node *before,
                              bool control);

#endif
