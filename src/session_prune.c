/* session_prune.c: what one run needs. Checks the fetches, targets and
 * feeds a caller passed, then marks the nodes they need: the roots and
 * everything they read, stopping at fed nodes, in the executor's arrays it
 * is lent. Running them is session.c's. */
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

/* ---- feeds ---- */

static int check_feed(fl_session *s, const fl_feed *f)
{
    char want[64], got[64];
    if (!f->node || !f->value || f->node->graph != s->graph)
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT,
                                    "a feed has a NULL node or value, or a node from another graph");
    const fl_node *n = f->node;
    if (!f->value->data && fl_shape_size(f->value->shape) > 0)
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "%s: fed a tensor whose data is NULL", n->name);
    if (f->value->dtype != n->dtype)
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT,
                                    "%s: fed %s but it is %s", n->name, fl_dtype_name(f->value->dtype),
                                    fl_dtype_name(n->dtype));
    bool fits = f->value->shape.rank == n->shape.rank;
    for (int i = 0; fits && i < n->shape.rank; i++)
        fits = n->shape.dims[i] < 0 || n->shape.dims[i] == f->value->shape.dims[i];
    if (!fits)
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "%s: fed a tensor of shape %s but it takes %s", n->name,
                               fl_shape_format(f->value->shape, got, sizeof got),
                               fl_shape_format(n->shape, want, sizeof want));
    return 0;
}

static int record_feeds(fl_session *s, const fl_feed *feeds, int nfeeds, const fl_tensor **fed)
{
    memset(fed, 0, (size_t)s->nslots * sizeof *fed);
    for (int i = 0; i < nfeeds; i++) {
        if (check_feed(s, &feeds[i]) != 0)
            return -1;
        fed[feeds[i].node->id] = feeds[i].value;
    }
    return 0;
}

/* ---- pruning: mark what the fetches and targets need ---- */

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

static void mark_needed(bool *needed, const fl_tensor *const *fed, fl_node *const *roots, int nroots)
{
    visit_stack v = {NULL, 0, 0};
    for (int i = 0; i < nroots; i++)
        push(&v, roots[i]);
    while (v.top > 0) {
        fl_node *n = v.nodes[--v.top];
        if (needed[n->id])
            continue;
        needed[n->id] = true;
        if (fed[n->id]) /* a fed node's inputs are not needed */
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

static int check_roots(fl_session *s, fl_node *const *nodes, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (!nodes[i] || nodes[i]->graph != s->graph)
            return fl_session_fail_code(s, FL_INVALID_ARGUMENT,
                                        "%s %d is NULL or from another graph (did building it fail? "
                                        "see fl_graph_error)", what, i);
    return 0;
}

/* ---- a run's roots ---- */

int fl_session_prune(fl_session *s, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                     fl_node *const *targets, int ntargets, bool *needed, const fl_tensor **fed)
{
    if (check_roots(s, fetches, nfetches, "fetch") || check_roots(s, targets, ntargets, "target"))
        return -1;
    for (int i = 0; i < nfetches; i++)
        if (!fetches[i]->has_output)
            return fl_session_fail_code(s, FL_INVALID_ARGUMENT,
                                        "%s: a %s has no value to fetch; pass it as a target instead",
                                        fetches[i]->name, fl_node_op_type(fetches[i]));
    if (record_feeds(s, feeds, nfeeds, fed) != 0)
        return -1;
    memset(needed, 0, (size_t)s->nslots * sizeof *needed);
    mark_needed(needed, fed, fetches, nfetches);
    mark_needed(needed, fed, targets, ntargets);
    return 0;
}
