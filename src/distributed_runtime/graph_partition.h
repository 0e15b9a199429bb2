/* graph_partition.h: one graph cut into one piece per task, as TensorFlow's
 * distributed master does for in-graph replication across tasks (chapter 3).
 * The client's master builds the pieces (graph_partition.c), the wire carries
 * them (graph_wire.c), and a task server runs its piece each step. */
#ifndef FLOWLAB_DIST_GRAPH_PARTITION_H
#define FLOWLAB_DIST_GRAPH_PARTITION_H

#include <stdint.h>

#include "runtime.h"
#include "wire.h"

/* A value that crosses from one task to another: sent by the task that
 * computes it, received by the task that needs it, matched by key and step
 * (TensorFlow's rendezvous). One edge per (value, destination task), however
 * many nodes there read it. The key names both ends, so it is unique in the
 * whole graph: "dense/kernel/read:/job:ps/task:0->/job:worker/task:1". */
typedef struct {
    char key[FL_WIRE_MAX_NAME + 1];
    /* In a send: the node whose value is sent. In a recv: the Placeholder
     * that stands for the value in the receiving partition's graph. */
    char node[FL_WIRE_MAX_NAME + 1];
    char peer_job[32]; /* a send's destination, a recv's source */
    int peer_task;
} fl_partition_edge;

/* One task's piece of the graph. Its graph holds copies of the nodes placed
 * on that task (same names; devices made local: "/cpu:0", "/gpu:1"), plus one
 * Placeholder per recv (same dtype and shape as the value it stands for).
 * Control edges that cross tasks become edges too: the sender sends a scalar
 * once the node has run, the receiver's nodes wait on its Placeholder.
 *
 * Waves: wave(n) is the largest number of task crossings on any path into n.
 * A task runs its waves in order, one session run each; a recv's value comes
 * from a lower wave of another task, so no task ever waits on one that waits
 * on it. A value a later wave of the same task needs is kept from the wave
 * that computed it and fed to the later one, so nothing runs twice. */
typedef struct {
    char job[32];
    int task;
    fl_graph *graph;  /* owned */
    int *wave;        /* wave[node id in graph] */
    int nwaves;
    fl_partition_edge *sends;
    int nsends;
    fl_partition_edge *recvs;
    int nrecvs;
} fl_graph_partition;

void fl_graph_partition_free(fl_graph_partition *p); /* the struct's contents */

/* One step of a registered partition: what the client asks a task to run.
 * Names are nodes of the partition's graph; only the edges this run needs are
 * active, so a run that only evaluates does not send or wait for gradients. */
typedef struct {
    uint64_t step_id;          /* unique per client run; keys the rendezvous */
    const char **feed_names;   /* placeholders the client feeds, with values */
    const fl_tensor **feed_values;
    int nfeeds;
    const char **fetch_names;  /* values returned to the client */
    int nfetches;
    const char **target_names; /* nodes run for their effect */
    int ntargets;
    const char **send_keys;    /* active sends and recvs, by key */
    int nsends;
    const char **recv_keys;
    int nrecvs;
} fl_partition_run;

/* What one run asks for (its signature), in the user's graph. */
typedef struct {
    fl_node *const *feeds;
    int nfeeds;
    fl_node *const *fetches;
    int nfetches;
    fl_node *const *targets;
    int ntargets;
} fl_partition_request;

/* One partition per task the run needs (ordered by job name, then task),
 * and which partition holds each feed, fetch and target (the same names
 * there; -1 for a feed the run does not need). */
typedef struct {
    fl_graph_partition *parts;
    int nparts;
    int *feed_part, *fetch_part, *target_part;
} fl_partitioned_run;

/* graph_partition.c: prunes g to what the run needs and cuts it by task
 * (a node's task from its device; none: /job:worker/task:0). A fed node
 * becomes a Placeholder of the same name. 0, or -1 with fl_last_error()
 * naming the node at fault (INVALID_ARGUMENT). g is not changed. */
int fl_partition_graph(const fl_graph *g, const fl_partition_request *run, fl_partitioned_run *out);
void fl_partitioned_run_free(fl_partitioned_run *r);

/* What a run needs of g (needed[id]) and which nodes it feeds (fed[id]):
 * the roots and what they read, stopping at fed nodes. Arrays of g's size. */
void fl_partition_prune(const fl_graph *g, const fl_partition_request *run, bool *needed, bool *fed);
/* The partition of cut that holds n (the task n's device names), or -1. */
int fl_partition_of_node(const fl_partitioned_run *cut, const fl_node *n);
/* The task and device n runs on, as the master asks it of the task:
 * "/job:worker/task:1/cpu:0" (no device: worker 0's /cpu:0). 0, or -1 with
 * fl_last_error() naming n when its device does not parse. */
int fl_partition_node_device(const fl_node *n, char *out, size_t len);
/* An edge's key: "value:/job:ps/task:0->/job:worker/task:1", '^' first for a
 * control edge (whose value is the token "_send_control/<node>"). Returns
 * snprintf's count. */
int fl_partition_edge_key(const fl_graph_partition *from, const fl_graph_partition *to, const char *value,
                          bool control, char *key, size_t len);

#endif
