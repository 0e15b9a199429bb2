/* sync_step.h: which step of synchronous training (chapter 4) a worker is
 * at, one per cluster (the cluster's runtime state owns it): the global step
 * its variables were read at, which every synchronous update carries. */
#ifndef FLOWLAB_DISTRIBUTED_RUNTIME_SYNC_STEP_H
#define FLOWLAB_DISTRIBUTED_RUNTIME_SYNC_STEP_H

#include "distributed_runtime/transport/task_client.h"

typedef struct fl_sync_step fl_sync_step;

fl_sync_step *fl_sync_step_new(void);
void fl_sync_step_free(fl_sync_step *s);
/* The step (FL_WIRE_STEP_UNKNOWN until it is known: the first step, and
 * after a connection was lost), from the last token once it has come. */
uint64_t fl_sync_step_now(fl_sync_step *s);
/* The step will be the value a WAIT_STEP request `id` on c brings back. */
void fl_sync_step_expect_token(fl_sync_step *s, fl_task_client *c, uint32_t id);
/* Where the token's value lands: give it to fl_task_client_wait_step. */
void *fl_sync_step_token_buffer(fl_sync_step *s);
/* The step is unknown again: a connection was lost (lost: the client, or
 * NULL for all, when the worker says goodbye). */
void fl_sync_step_forget(fl_sync_step *s, fl_task_client *lost);

#endif
