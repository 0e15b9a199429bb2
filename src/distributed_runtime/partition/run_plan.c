/* run_plan.c: what one run asks each task of a whole-graph cut: its roots
 * and feeds there, and the Sends the run needs as targets. A Send is
 * needed when a node the run needs, and does not feed, reads a value (or
 * waits on a node) of another task; a task takes part when it holds a
 * root of the run or a needed Send or Recv. A run that only evaluates thus
 * sends no gradient and wakes no task it does not use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_plan.h"

static void append_name(const char ***list, int *n, const char *name)
{
    *list = fl_xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
    (*list)[(*n)++] = name;
}

static fl_task_plan *task_for(fl_run_plan *plan, int part)
{
    for (int t = 0; t < plan->ntasks; t++)
        if (plan->tasks[t].part == part)
            return &plan->tasks[t];
    plan->tasks = fl_xrealloc(plan->tasks, (size_t)(plan->ntasks + 1) * sizeof *plan->tasks);
    fl_task_plan *t = &plan->tasks[plan->ntasks++];
    *t = (fl_task_plan){.part = part};
    return t;
}

/* The run's roots and feeds, each on its task. */
static void add_roots(fl_run_plan *plan, const fl_partitioned_run *cut, const fl_partition_request *req,
                      const bool *needed)
{
    plan->fetch_task = fl_xcalloc((size_t)req->nfetches + 1, sizeof *plan->fetch_task);
    plan->fetch_slot = fl_xcalloc((size_t)req->nfetches + 1, sizeof *plan->fetch_slot);
    for (int i = 0; i < req->nfetches; i++) {
        fl_task_plan *t = task_for(plan, fl_partition_of_node(cut, req->fetches[i]));
        plan->fetch_task[i] = (int)(t - plan->tasks);
        plan->fetch_slot[i] = t->run.nfetches;
        append_name(&t->run.fetch_names, &t->run.nfetches, req->fetches[i]->name);
    }
    for (int i = 0; i < req->ntargets; i++) {
        fl_task_plan *t = task_for(plan, fl_partition_of_node(cut, req->targets[i]));
        append_name(&t->run.target_names, &t->run.ntargets, req->targets[i]->name);
    }
    for (int i = 0; i < req->nfeeds; i++)
        if (needed[req->feeds[i]->id]) {
            fl_task_plan *t = task_for(plan, fl_partition_of_node(cut, req->feeds[i]));
            t->feed_index = fl_xrealloc(t->feed_index, (size_t)(t->run.nfeeds + 1) * sizeof *t->feed_index);
            t->feed_index[t->run.nfeeds] = i;
            t->run.feed_values = fl_xrealloc(t->run.feed_values, (size_t)(t->run.nfeeds + 1) * sizeof *t->run.feed_values);
            t->run.feed_values[t->run.nfeeds] = NULL; /* each step's */
            append_name(&t->run.feed_names, &t->run.nfeeds, req->feeds[i]->name);
        }
}

/* The Send of before's value (or token) to n's task joins the targets of
 * before's task, once: the task that computes it must send it. */
static int activate(fl_run_plan *plan, const fl_partitioned_run *cut, const fl_node *n, const fl_node *before,
                    bool control)
{
    int from = fl_partition_of_node(cut, before), to = fl_partition_of_node(cut, n);
    if (from == to)
        return 0;
    const fl_node *send = fl_partition_send_of(&cut->parts[from], &cut->parts[to], before, control);
    if (!send) {
        fl_set_error_code(FL_INTERNAL, "%s: its %s to /job:%s/task:%d is not in the registered partitions",
                          before->name, control ? "control edge" : "value", cut->parts[to].job, cut->parts[to].task);
        return -1;
    }
    task_for(plan, to);
    fl_task_plan *t = task_for(plan, from);
    for (int i = 0; i < t->run.ntargets; i++)
        if (t->run.target_names[i] == send->name)
            return 0;
    append_name(&t->run.target_names, &t->run.ntargets, send->name);
    return 0;
}

static int check_placed(const fl_partitioned_run *cut, const fl_graph *g)
{
    for (int id = 0; id < fl_graph_node_count(g); id++) {
        const fl_node *n = fl_graph_node(g, id);
        if (fl_partition_of_node(cut, n) >= 0)
            continue;
        fl_set_error_code(FL_INTERNAL, "%s: on %s, which no registered partition holds", n->name, n->device);
        return -1;
    }
    return 0;
}

static int activate_all(fl_run_plan *plan, const fl_partitioned_run *cut, const fl_graph *g, const bool *needed,
                        const bool *fed)
{
    for (int id = 0; id < fl_graph_node_count(g); id++) {
        const fl_node *n = fl_graph_node(g, id);
        if (!needed[id] || fed[id])
            continue;
        for (int i = 0; i < n->ninputs; i++)
            if (activate(plan, cut, n, n->inputs[i], false) != 0)
                return -1;
        for (int i = 0; i < n->ncontrols; i++)
            if (activate(plan, cut, n, n->controls[i], true) != 0)
                return -1;
    }
    return 0;
}

int fl_run_plan_make(const fl_graph *g, const fl_partitioned_run *cut, const fl_partition_request *req,
                     fl_run_plan *out)
{
    memset(out, 0, sizeof *out);
    out->nnodes = fl_graph_node_count(g);
    bool *needed = out->needed = fl_xcalloc((size_t)out->nnodes + 1, sizeof *needed);
    bool *fed = fl_xcalloc((size_t)out->nnodes + 1, sizeof *fed);
    fl_partition_prune(g, req, needed, fed);
    int rc = check_placed(cut, g);
    if (rc == 0) {
        add_roots(out, cut, req, needed);
        rc = activate_all(out, cut, g, needed, fed);
    }
    free(fed);
    if (rc != 0)
        fl_run_plan_free(out);
    return rc;
}

void fl_run_plan_free(fl_run_plan *plan)
{
    for (int t = 0; t < plan->ntasks; t++) {
        fl_partition_run *r = &plan->tasks[t].run;
        free(r->feed_names);
        free(r->feed_values);
        free(r->fetch_names);
        free(r->target_names);
        free(plan->tasks[t].feed_index);
    }
    free(plan->tasks);
    free(plan->fetch_task);
    free(plan->fetch_slot);
    free(plan->needed);
    memset(plan, 0, sizeof *plan);
}
