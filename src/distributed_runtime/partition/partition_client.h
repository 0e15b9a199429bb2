/* partition_client.h: the client's requests to a task server for in-graph
 * replication across tasks (chapter 3): register a partition of the graph
 * once, run it once per step, give up a step, drop the partition. Each is
 * blocking, on the same connection as chapter 3's requests (fl_task_client). */
#ifndef FLOWLAB_DIST_PARTITION_CLIENT_H
#define FLOWLAB_DIST_PARTITION_CLIENT_H

#include <stdint.h>

#include "graph_partition.h"
#include "distributed_runtime/transport/task_client.h"

/* The job name a client that is no task of the cluster says HELLO with
 * (TensorFlow's master lives in the client): a task server accepts it with
 * any task index. Its GOODBYE tells a flowlab_server it may exit. */
#define FL_WIRE_CLIENT_JOB "client"

/* Each returns 0, or -1 with fl_last_error() naming the task, and a code:
 * UNAVAILABLE for a lost task, INVALID_ARGUMENT for a partition or run the
 * task refused (the message names the node), ABORTED for a step given up,
 * DEADLINE_EXCEEDED when a value the step waits for never came. */

/* Sends p (REGISTER_PARTITION) and returns the task's handle for it. The
 * partition belongs to this connection: the task drops it when the
 * connection closes. */
int fl_partition_register(fl_task_client *c, const fl_graph_partition *p, uint64_t *handle);
/* One step (RUN_PARTITION): outputs[i] receives a new tensor for
 * run->fetch_names[i] (free with fl_tensor_free); on failure all are NULL.
 * trace: NULL, or where the task's timings of the step go (the run asks for
 * them; free with fl_wire_step_trace_free, also after a failure). */
int fl_partition_run_remote(fl_task_client *c, uint64_t handle, const fl_partition_run *run, fl_tensor **outputs,
                            fl_wire_step_trace *trace);

/* The same in two halves, so that one thread runs a step on many tasks at
 * once: start queues the request of a zeroed call (0, or -1 after
 * fl_set_error); the connection's reader thread takes the reply, or learns
 * that the connection is lost, then calls replied(user) under the
 * connection's lock (keep it short); finish returns what
 * fl_partition_run_remote would. */
typedef struct {
    fl_tensor **outputs;       /* the caller's: one per fetch */
    fl_wire_step_trace *trace; /* NULL: not traced */
    void (*replied)(void *user);
    void *user;
    int nfetches;              /* the rest is filled by start and the reader thread */
    uint32_t id;
    fl_error_code code;
    char error[FL_WIRE_MAX_MESSAGE + 128];
    uint64_t number;           /* PARTITION_REGISTERED's handle */
    double replied_us;
} fl_partition_call;
int fl_partition_run_start(fl_task_client *c, uint64_t handle, const fl_partition_run *run, fl_partition_call *call);
int fl_partition_run_finish(fl_task_client *c, fl_partition_call *call);
/* ABORT_STEP: the task's run of step_id, if any, ends at once with ABORTED
 * (its waits for values from other tasks give up); values of that step that
 * arrive later are dropped. Safe while a run of that step is in flight on c
 * from another thread: the task serves it at once. */
int fl_partition_abort_step(fl_task_client *c, uint64_t step_id);
/* The same in the first half only, as fl_partition_run_start: the reply
 * (OK) comes after the run's, and replied(user) says it came. */
int fl_partition_abort_start(fl_task_client *c, uint64_t step_id, fl_partition_call *call);
/* DEREGISTER_PARTITION: the task frees the partition and its session. */
int fl_partition_deregister(fl_task_client *c, uint64_t handle);

/* A task server's own request to a peer (not blocking): SEND_TENSOR, a
 * value of step_id for the edge `key`. Returns the request's id (wait for
 * it with fl_task_client_wait), or 0 after fl_set_error. A big value's data
 * is not copied: keep it until fl_task_client_wait_written has returned. */
uint32_t fl_partition_send_tensor(fl_task_client *c, uint64_t step_id, const char *key, const fl_tensor *value);

#endif
