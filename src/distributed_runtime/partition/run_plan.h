/* run_plan.h: what one run asks of each task, given the graph cut once for
 * every run (graph_partition.c, every node a root): the master registers
 * one partition per task, so that a task's variables live in one session,
 * and each run names the feeds, fetches and targets it needs there, the
 * Sends it needs among the targets (run_plan.c). */
#ifndef FLOWLAB_DIST_RUN_PLAN_H
#define FLOWLAB_DIST_RUN_PLAN_H

#include "graph_partition.h"

/* One task's share of a run; its feed values and step id are filled in per
 * step. feed_index[k]: the run's feed that run.feed_names[k] is. */
typedef struct {
    int part; /* the partition of the cut */
    fl_partition_run run;
    int *feed_index;
} fl_task_plan;

typedef struct {
    fl_task_plan *tasks; /* only tasks with something to do */
    int ntasks;
    int *fetch_task, *fetch_slot; /* fetch i: tasks[fetch_task[i]]'s output fetch_slot[i] */
    bool *needed; /* by node id of the graph as the plan saw it: what the run needs */
    int nnodes;
} fl_run_plan;

/* 0, or -1 with the error set (a node on a task the cut does not have). */
int fl_run_plan_make(const fl_graph *g, const fl_partitioned_run *cut, const fl_partition_request *req,
                     fl_run_plan *out);
void fl_run_plan_free(fl_run_plan *plan);

#endif
