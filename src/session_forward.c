/* session_forward.c: buffer forwarding, as TensorFlow's executor does it: an
 * element-wise op whose first input nothing else reads in this run writes
 * its output over that input's buffer, so a step holds one buffer where it
 * held two (a convolution's output and its bias add; a pooling gradient and
 * the ReLU gradient after it). */
#include <string.h>

#include "session_internal.h"

/* Ops whose kernels read element i of input 0 before they write element i
 * of the output, and no other element: writing in place gives the same
 * values. Add's input 0 must have the output's shape (a bias is input 1). */
static bool writes_element_wise(fl_op_kind op)
{
    return op == FL_OP_ADD || op == FL_OP_RELU || op == FL_OP_RELU_GRAD;
}

/* Backends whose kernels for those ops were read for it; the CUDA module's
 * and a remote task's were not. */
static bool backend_checked(const fl_device *d)
{
    return strcmp(d->backend->name, "opencl") == 0 || strcmp(d->backend->name, "host") == 0;
}

bool fl_session_can_forward(const fl_session *s, const fl_node *n, const fl_tensor *in0, fl_shape shape)
{
    if (!writes_element_wise(n->op) || n->ninputs < 1)
        return false;
    const fl_node *x = n->inputs[0];
    const fl_slot *from = &s->slots[x->id], *slot = &s->slots[n->id];
    if (from->device != slot->device || !backend_checked(slot->device))
        return false;
    /* Only this op reads x (once), nobody gets x back or a copy of it, and
     * x's buffer is its own: not a variable's, a feed's or another's alias. */
    if (fl_session_readers(s, x->id) != 1 || from->fetched || from->crosses || fl_session_fed(s, x->id))
        return false;
    if (x->op == FL_OP_VARIABLE || x->op == FL_OP_CONST || x->op == FL_OP_PLACEHOLDER)
        return false;
    if (!from->buffer || from->value.data != from->buffer || in0->data != from->buffer)
        return false;
    return x->dtype == n->dtype && fl_shape_equal(in0->shape, shape);
}
