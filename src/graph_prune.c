/* graph_prune.c: what a run of a graph needs: its roots and everything
 * they read, stopping at the nodes it feeds. One function for the session
 * (session_prune.c) and the client's master, which cuts the graph by task
 * (graph_partition.c, run_plan.c). */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* A stack of nodes still to visit; a node pushes its inputs and controls,
 * as many as it has (an AddN from the wire may have thousands). It starts
 * on the C stack, so a session's warm run of a small graph allocates
 * nothing here. */
#define ON_STACK 256
typedef struct {
    fl_node **nodes;
    size_t top, cap;
    fl_node *first[ON_STACK];
} visit_stack;

static void push(visit_stack *v, fl_node *n)
{
    if (v->top == v->cap) {
        v->cap = v->cap * 2 + 64;
        fl_node **grown = fl_xmalloc(v->cap * sizeof *grown);
        memcpy(grown, v->nodes, v->top * sizeof *grown);
        if (v->nodes != v->first)
            free(v->nodes);
        v->nodes = grown;
    }
    v->nodes[v->top++] = n;
}

void fl_graph_mark_needed(bool *needed, bool (*fed)(const void *arg, int id), const void *arg,
                          fl_node *const *roots, int nroots)
{
    visit_stack v;
    v.nodes = v.first;
    v.top = 0;
    v.cap = ON_STACK;
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
    if (v.nodes != v.first)
        free(v.nodes);
}
