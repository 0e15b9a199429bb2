/* saver_tasks.h: the saver of a session whose variables live on a
 * cluster's tasks (the client of a cluster, or a between-graph worker that
 * cuts its own graph): saver_tasks.c reads and writes them through the
 * session's master, one run each way. */
#ifndef FLOWLAB_SAVER_TASKS_H
#define FLOWLAB_SAVER_TASKS_H

#include "runtime.h"

/* Every variable of vars into values (new host tensors); -1 with the
 * session's error set ("saving the variables from their tasks: ..."). */
int fl_saver_read_from_tasks(fl_session *s, fl_node *const *vars, int n, fl_tensor **values);
/* values (host tensors) into vars, done on return; -1 with the error set. */
int fl_saver_write_to_tasks(fl_session *s, fl_node *const *vars, const fl_tensor *const *values, int n);

#endif
