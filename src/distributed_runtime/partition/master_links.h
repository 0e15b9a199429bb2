/* master_links.h: a between-graph worker's master talks to each task on a
 * connection of its own (master_links.c), not the cluster's: those carry
 * the sends of the worker's own server, and a task reads nothing more on a
 * connection while it runs a partition for it. */
#ifndef FLOWLAB_DIST_MASTER_LINKS_H
#define FLOWLAB_DIST_MASTER_LINKS_H

#include "flowlab_cluster.h"
#include "distributed_runtime/transport/task_client.h"

typedef struct {
    char job[32];
    int task;
    fl_task_client *client;
} fl_master_link;

typedef struct {
    fl_master_link *items;
    int count;
} fl_master_links;

/* The live connection to job/task, made (within FLOWLAB_TASK_DEADLINE) the
 * first time and again once broken; *replaced then gets the broken one,
 * already closed, to be forgotten by pointer only (else NULL). NULL with
 * the error set when the task does not answer. */
fl_task_client *fl_master_link_to(fl_master_links *l, const fl_cluster *c, const char *job, int task,
                                fl_task_client **replaced);
void fl_master_links_close(fl_master_links *l);

#endif
