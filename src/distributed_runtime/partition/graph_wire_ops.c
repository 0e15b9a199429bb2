/* graph_wire_ops.c: what each op may be given when a partition arrives on
 * the wire, checked before the runtime's shape functions see the node:
 * they trust the builders, which give each op its inputs, and a hostile
 * partition has no builder. Each op's signature (fl_op_def.sig, declared
 * with the op) says it. Used by graph_wire_decode.c. */
#include <stdio.h>

#include "graph_wire.h"

/* The op's signature bounds the count; a list is bounded by the wire's own
 * limit, as a partition's every list is. */
static int check_arity(fl_op_kind op, int ninputs, fl_status *st)
{
    if (fl_op_check_input_count(op, ninputs, st) != 0)
        return -1;
    if (ninputs <= FL_WIRE_MAX_LIST)
        return 0;
    fl_status_set(st, FL_INVALID_ARGUMENT, "a %s takes at most %d inputs on the wire, not %d", fl_op_def_of(op)->type,
                  FL_WIRE_MAX_LIST, ninputs);
    return -1;
}

/* An assignment or an update writes into its first inputs (an optimizer's
 * slots too): they must be variables, whose buffers the session keeps. */
static int check_state_inputs(fl_op_kind op, fl_node *const *inputs, int ninputs, fl_status *st)
{
    int written = fl_op_def_of(op)->sig.writes_inputs;
    for (int i = 0; i < written && i < ninputs; i++) {
        if (inputs[i]->op == FL_OP_VARIABLE)
            continue;
        fl_status_set(st, FL_INVALID_ARGUMENT, "input %d of a %s must be a variable; %s is a %s", i,
                      fl_op_def_of(op)->type, inputs[i]->name, fl_node_op_type(inputs[i]));
        return -1;
    }
    return 0;
}

/* The fused ops are the session's own, made for one run on a device that
 * has their kernel (session_fusion.c): a partition never carries them. */
static int check_not_fused(fl_op_kind op, fl_status *st)
{
    if (!fl_op_def_of(op)->sig.fused)
        return 0;
    fl_status_set(st, FL_INVALID_ARGUMENT, "a %s is made by the session's fusion pass, never sent in a partition",
                  fl_op_def_of(op)->type);
    return -1;
}

int fl_graph_wire_check_inputs(fl_op_kind op, fl_node *const *inputs, int ninputs, fl_status *st)
{
    return check_not_fused(op, st) != 0 || check_arity(op, ninputs, st) != 0 ||
                   check_state_inputs(op, inputs, ninputs, st) != 0
               ? -1
               : 0;
}
