/* task_trace.h: a task server's side of a traced step (task_trace.c): the
 * partition's session traces the step, and its ops go back to the client
 * in PARTITION_DONE (TensorFlow's RunMetadata step_stats). */
#ifndef FLOWLAB_DIST_TASK_TRACE_H
#define FLOWLAB_DIST_TASK_TRACE_H

#include "distributed_runtime/transport/wire.h"

/* Before the step, on the run's thread: tracing on, *began_us its start. */
void fl_task_trace_begin(fl_session *session, double *began_us);
/* After it: out gets the step's length and its ops (free with
 * fl_wire_step_trace_free), each on its device named with task
 * ("/job:worker/task:1"); tracing goes off until the next traced step. */
void fl_task_trace_end(fl_session *session, const char *task, double began_us, fl_wire_step_trace *out);

#endif
