/* remote_device.h: the devices of other tasks ("/job:ps/task:0/cpu:0"): one
 * per task, connected on first use and kept for the life of the process
 * (cluster_connections.c), behind the remote backend (backend_remote.c). */
#ifndef FLOWLAB_DIST_REMOTE_DEVICE_H
#define FLOWLAB_DIST_REMOTE_DEVICE_H

#include "device.h"
#include "ps_client.h"

extern const fl_backend fl_remote_backend;

/* The device of task `task` of job `job` in cluster c, connecting to it (and
 * waiting for it, with a line every few seconds) the first time. NULL after
 * fl_set_error when the task does not answer within the deadline
 * (FLOWLAB_TASK_DEADLINE seconds, 120 by default). */
fl_device *fl_remote_device(const fl_cluster *c, const char *job, int task);
/* A remote device's impl: the task and the connection to it. */
typedef struct {
    char who[64]; /* "/job:ps/task:0" */
    char job[32];
    int task;
    const fl_cluster *cluster;
    fl_ps_client *client;
    uint64_t sent_before, received_before; /* on connections since lost */
} fl_remote_task;

static inline fl_ps_client *fl_remote_client(void *impl) { return ((fl_remote_task *)impl)->client; }

/* ---- synchronous replicas: this worker's step (sync_step.c) ----
 * The global step its variables were read at, which every synchronous
 * update carries (FL_WIRE_STEP_UNKNOWN until it is known: the first step,
 * and after a connection was lost). */
uint64_t fl_remote_sync_step(void);
/* The step will be the value a WAIT_STEP request `id` on c brings back. */
void fl_remote_sync_expect_token(fl_ps_client *c, uint32_t id);
/* Where the token's value lands: give it to fl_ps_client_wait_step. */
void *fl_remote_sync_token_buffer(void);
/* The step is unknown again: a connection was lost (lost: the client, or
 * NULL for all, when the worker says goodbye). */
void fl_remote_sync_forget(fl_ps_client *lost);

#endif
