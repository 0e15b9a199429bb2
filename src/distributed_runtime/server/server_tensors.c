/* server_tensors.c: what a ps makes of the tensors and updates it receives,
 * before it runs them: a frame's tensor in host order, the kernel an update
 * runs (an optimizer's kind, or an assignment), and a global step's value. */
#include <string.h>

#include "server_internal.h"

static fl_tensor tensor_from_wire(const fl_wire_tensor *w, void *data)
{
    fl_wire_tensor_read(w, data);
    return (fl_tensor){.dtype = w->dtype, .shape = w->shape, .data = data};
}

/* A received tensor in host order: read where it lies in the frame when it
 * can be (a 13 MB gradient is then not copied; kernels only read their
 * inputs, and the frame stays until it is served), else copied into the
 * server's scratch. */
fl_tensor fl_server_received(fl_server *s, const fl_wire_tensor *w)
{
    const void *in_place = fl_wire_tensor_in_place(w);
    if (in_place)
        return (fl_tensor){.dtype = w->dtype, .shape = w->shape, .data = (void *)in_place};
    fl_server_count(s, &s->stats.copied_in_bytes, w->bytes);
    if (w->bytes > s->scratch_cap) {
        s->scratch = fl_xrealloc(s->scratch, w->bytes);
        s->scratch_cap = w->bytes;
    }
    return tensor_from_wire(w, s->scratch);
}

fl_op_kind fl_server_apply_op(fl_wire_optimizer kind, const fl_wire_optimizer_args *o, fl_attrs *attrs)
{
    *attrs = (fl_attrs){.learning_rate = o->learning_rate, .momentum = o->momentum,
                        .use_nesterov = o->use_nesterov, .beta1 = o->beta1, .beta2 = o->beta2,
                        .epsilon = o->epsilon};
    if (kind == FL_WIRE_ADAM)
        return FL_OP_APPLY_ADAM;
    return kind == FL_WIRE_MOMENTUM ? FL_OP_APPLY_MOMENTUM : FL_OP_APPLY_GRADIENT_DESCENT;
}

fl_op_kind fl_server_update_op(const fl_wire_message *m, fl_attrs *attrs)
{
    memset(attrs, 0, sizeof *attrs);
    if (m->type == FL_WIRE_SYNC_ASSIGN)
        return FL_OP_ASSIGN;
    if (m->type == FL_WIRE_SYNC_ASSIGN_ADD)
        return FL_OP_ASSIGN_ADD;
    return fl_server_apply_op(m->u.apply.opt.kind, &m->u.apply.opt, attrs);
}

/* The variable's value as a step: the global step is an int32 scalar. */
bool fl_server_read_step(const fl_tensor *t, uint64_t *step)
{
    if (t->dtype != FL_INT32 || fl_shape_size(t->shape) != 1)
        return false;
    int32_t v = *(const int32_t *)t->data;
    *step = v < 0 ? 0 : (uint64_t)v;
    return true;
}
