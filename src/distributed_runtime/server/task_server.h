/* task_server.h: the one server of a task that its between-graph
 * worker's masters run their pieces in (task_server.c); the session
 * plugin acquires it when it opens such a master. */
#ifndef FLOWLAB_DIST_TASK_SERVER_H
#define FLOWLAB_DIST_TASK_SERVER_H

#include "flowlab_cluster.h"

/* The server of the cluster's own task: the one the program started, else
 * one started by the first session that needs it and stopped when the last
 * lets it go (a monitored session has several); NULL with the error set
 * when it cannot start. Each acquire is released once. */
fl_server *fl_task_server_acquire(const fl_cluster *c);
void fl_task_server_release(const fl_cluster *c);

#endif
