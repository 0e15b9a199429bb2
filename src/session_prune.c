/* session_prune.c: what one run needs. Checks the fetches, targets and
 * feeds a caller passed, then marks the nodes they need: the roots and
 * everything they read, stopping at fed nodes, in the executor's arrays it
 * is lent. Running them is session.c's. */
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

/* ---- pruning: mark what the fetches and targets need (graph_prune.c) ---- */

static bool fed_a_tensor(const void *fed, int id) { return ((const fl_tensor *const *)fed)[id] != NULL; }

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
    fl_graph_mark_needed(needed, fed_a_tensor, fed, fetches, nfetches);
    fl_graph_mark_needed(needed, fed_a_tensor, fed, targets, ntargets);
    return 0;
}
