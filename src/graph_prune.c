/* graph_prune.c: what a run of a graph needs: its roots and everything
 * they read, stopping at the nodes it feeds. One function for the session
 * (session_prune.c) and the client's master, which cuts the graph by task
 * (graph_partition.c, run_plan.c). */
#include <stdlib.h>

#include "runtime.h"

/* A stack of nodes still to visit; a node pushes its inputs and controls,
 * as many as it has (an AddN from the wire may have thousands). */
typedef struct {
    fl_node **nodes;
    size_t top, cap;
} visit_stack;

static void push(visit_stack *v, fl_node *n)
{
    if (v->top == v->cap) {
        v->cap = v->cap * 2 + 64;
        v->nodes = fl_xrealloc(v->nodes, v->cap * sizeof *v->nodes);
    }
    v->nodes[v->top++] = n;
}

void fl_graph_mark_needed(bool *needed, bool (*fed)(const void *arg, int id), const void *arg,
                          fl_node *const *roots, int nroots)
{
    visit_stack v = {NULL, 0, 0};
    for (int i = 0; i < nroots; i++)
        push(&v, roots[i]);
    while (v.top > 0) {
        fl_node *n = v.nodes[--v.top];
        if (needed[n->id])
            continue;
        needed[n->id] = true;
        if (fed(arg, n->id)) /* a fed node's inputs are not needed */
            continue;
        for (int i = 0; i < n->ninputs; i++)
            if (!needed[n->inputs[i]->id])
                push(&v, n->inputs[i]);
        for (int i = 0; i < n->ncontrols; i++)
            if (!needed[n->controls[i]->id])
                push(&v, n->controls[i]);
    }
    free(v.nodes);
}
