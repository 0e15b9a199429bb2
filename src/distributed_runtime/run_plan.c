/* run_plan.c: which of a whole-graph cut's edges one run needs, and what it
 * asks each task. An edge is active when a node the run needs, and does
 * not feed, reads a value (or waits on a node) of another task; a task
 * takes part when it holds a root of the run or an active edge. A run that
 * only evaluates thus sends no gradient and wakes no task it does not use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_plan.h"

/* The cut's edges this run needs, marked by partition and index. */
typedef struct {
    const fl_partitioned_run *cut;
    bool **send_on, **recv_on;
} activity;

static int index_of_key(const fl_partition_edge *edges, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(edges[i].key, key) == 0)
            return i;
    return -1;
}

/* The edge from's value (or control token) -> to: both ends marked. */
static int activate(activity *a, int from, int to, const char *value, bool control)
{
    const fl_graph_partition *src = &a->cut->parts[from], *dst = &a->cut->parts[to];
    char key[2 * FL_WIRE_MAX_NAME + 32], token[FL_WIRE_MAX_NAME + 32];
    snprintf(token, sizeof token, "_send_control/%s", value);
    fl_partition_edge_key(src, dst, control ? token : value, control, key, sizeof key);
    int send = index_of_key(src->sends, src->nsends, key), recv = index_of_key(dst->recvs, dst->nrecvs, key);
    if (send < 0 || recv < 0) {
        fl_set_error_code(FL_INTERNAL, "%s: the edge %s is not in the registered partitions", value, key);
        return -1;
    }
    a->send_on[from][send] = a->recv_on[to][recv] = true;
    return 0;
}

static int activate_edges_of(activity *a, const fl_node *n)
{
    int to = fl_partition_of_node(a->cut, n);
    for (int i = 0; i < n->ninputs; i++) {
        int from = fl_partition_of_node(a->cut, n->inputs[i]);
        if (from != to && activate(a, from, to, n->inputs[i]->name, false) != 0)
            return -1;
    }
    for (int i = 0; i < n->ncontrols; i++) {
        int from = fl_partition_of_node(a->cut, n->controls[i]);
        if (from != to && activate(a, from, to, n->controls[i]->name, true) != 0)
            return -1;
    }
    return 0;
}

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

static void add_active_edges(fl_run_plan *plan, const activity *a)
{
    for (int p = 0; p < a->cut->nparts; p++) {
        const fl_graph_partition *part = &a->cut->parts[p];
        for (int i = 0; i < part->nsends; i++)
            if (a->send_on[p][i]) {
                fl_task_plan *t = task_for(plan, p);
                append_name(&t->run.send_keys, &t->run.nsends, part->sends[i].key);
            }
        for (int i = 0; i < part->nrecvs; i++)
            if (a->recv_on[p][i]) {
                fl_task_plan *t = task_for(plan, p);
                append_name(&t->run.recv_keys, &t->run.nrecvs, part->recvs[i].key);
            }
    }
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

static int activate_all(activity *a, const fl_graph *g, const bool *needed, const bool *fed)
{
    for (int id = 0; id < fl_graph_node_count(g); id++) {
        const fl_node *n = fl_graph_node(g, id);
        if (fl_partition_of_node(a->cut, n) < 0) {
            fl_set_error_code(FL_INTERNAL, "%s: on %s, which no registered partition holds", n->name, n->device);
            return -1;
        }
        if (needed[id] && !fed[id] && activate_edges_of(a, n) != 0)
            return -1;
    }
    return 0;
}

int fl_run_plan_make(const fl_graph *g, const fl_partitioned_run *cut, const fl_partition_request *req,
                     fl_run_plan *out)
{
    memset(out, 0, sizeof *out);
    size_t n = (size_t)fl_graph_node_count(g) + 1;
    bool *needed = fl_xcalloc(n, sizeof *needed), *fed = fl_xcalloc(n, sizeof *fed);
    fl_partition_prune(g, req, needed, fed);
    activity a = {cut, fl_xcalloc((size_t)cut->nparts + 1, sizeof *a.send_on),
                  fl_xcalloc((size_t)cut->nparts + 1, sizeof *a.recv_on)};
    for (int p = 0; p < cut->nparts; p++) {
        a.send_on[p] = fl_xcalloc((size_t)cut->parts[p].nsends + 1, sizeof **a.send_on);
        a.recv_on[p] = fl_xcalloc((size_t)cut->parts[p].nrecvs + 1, sizeof **a.recv_on);
    }
    int rc = activate_all(&a, g, needed, fed);
    if (rc == 0) {
        add_roots(out, cut, req, needed);
        add_active_edges(out, &a);
    }
    for (int p = 0; p < cut->nparts; p++) {
        free(a.send_on[p]);
        free(a.recv_on[p]);
    }
    free(a.send_on);
    free(a.recv_on);
    free(needed);
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
        free(r->send_keys);
        free(r->recv_keys);
        free(plan->tasks[t].feed_index);
    }
    free(plan->tasks);
    free(plan->fetch_task);
    free(plan->fetch_slot);
    memset(plan, 0, sizeof *plan);
}
