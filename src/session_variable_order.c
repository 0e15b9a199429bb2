/* session_variable_order.c: the executor hands nodes to their devices in
 * creation order, except that a node waiting for a value another device or
 * task has not finished lets the nodes after it go ahead (session.c's
 * sweep). Two nodes that touch one variable, one of them updating it in
 * place, must not pass each other that way: the reader created before the
 * update would read the updated value, and one created after it the value
 * from before. They keep creation order, as one in-order device keeps it.
 * (Chapter 7's pair split on two tasks: a backward MatMul read dense_2's
 * kernel and waited for the logits' gradient from the other task; a sweep
 * saw that value arrive only at a later reader of it, the kernel's own
 * gradient, so ApplyAdam updated the kernel before the MatMul read it.) */
#include "session_internal.h"

/* Whether a and b are one variable's value: one node, or two values in one
 * buffer of one device (a variable and an alias of it, issued this run). */
static bool same_value(const fl_session *s, const fl_node *a, const fl_node *b)
{
    const fl_slot *x = &s->slots[a->id], *y = &s->slots[b->id];
    return a == b || (x->issued && y->issued && x->device == y->device && x->value.data &&
                      x->value.data == y->value.data);
}

/* Whether w updates in place a value r reads (or updates too). */
static bool updates_what_reads(const fl_session *s, const fl_node *w, const fl_node *r)
{
    int writes = fl_node_writes_inputs(w);
    for (int i = 0; i < writes && i < w->ninputs; i++)
        for (int j = 0; j < r->ninputs; j++)
            if (same_value(s, w->inputs[i], r->inputs[j]))
                return true;
    return false;
}

bool fl_session_passes_variable_use(const fl_session *s, const fl_node *n, const int *waiting, int nwaiting)
{
    for (int k = 0; k < nwaiting; k++) {
        const fl_node *before = fl_session_planned(s, waiting[k]);
        if (updates_what_reads(s, n, before) || updates_what_reads(s, before, n))
            return true;
    }
    return false;
}
