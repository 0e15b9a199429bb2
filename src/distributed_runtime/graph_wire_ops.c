/* graph_wire_ops.c: what each op may be given when a partition arrives on
 * the wire, checked before the runtime's shape functions see the node:
 * they trust the builders, which give each op its inputs, and a hostile
 * partition has no builder. Used by graph_wire_decode.c. */
#include <stdio.h>

#include "graph_wire.h"

/* How many inputs each op's builder gives it: the ops' shape functions
 * read that many, so a node with another count is refused before them. */
typedef struct {
    fl_op_kind op;
    int min, max;
} arity;

static const arity ARITIES[] = {
    {FL_OP_FILL, 0, 1}, {FL_OP_ASSIGN, 2, 2}, {FL_OP_ASSIGN_ADD, 2, 2},
    {FL_OP_MATMUL, 2, 2}, {FL_OP_ADD, 2, 2}, {FL_OP_SUB, 2, 2}, {FL_OP_MUL, 2, 2}, {FL_OP_DIV, 2, 2},
    {FL_OP_NEG, 1, 1}, {FL_OP_ADD_N, 1, FL_WIRE_MAX_LIST}, {FL_OP_SUM_TO_SHAPE, 2, 2}, {FL_OP_DIV_GRAD_B, 3, 3},
    {FL_OP_RELU, 1, 1}, {FL_OP_RELU_GRAD, 2, 2}, {FL_OP_SIGMOID, 1, 1}, {FL_OP_SIGMOID_GRAD, 2, 2},
    {FL_OP_TANH, 1, 1}, {FL_OP_TANH_GRAD, 2, 2}, {FL_OP_SOFTMAX, 1, 1}, {FL_OP_SOFTMAX_GRAD, 2, 2},
    {FL_OP_SPARSE_XENT, 2, 2}, {FL_OP_SPARSE_XENT_GRAD, 3, 3}, {FL_OP_REDUCE_SUM, 1, 1},
    {FL_OP_REDUCE_MEAN, 1, 1}, {FL_OP_REDUCE_GRAD, 2, 2}, {FL_OP_RESHAPE, 1, 2},
    {FL_OP_CONCAT, 1, FL_WIRE_MAX_LIST}, {FL_OP_SLICE, 1, 2}, {FL_OP_SLICE_GRAD, 2, 2}, {FL_OP_IDENTITY, 1, 1},
    {FL_OP_STOP_GRADIENT, 1, 1}, {FL_OP_CAST, 1, 1}, {FL_OP_ARGMAX, 1, 1}, {FL_OP_EQUAL, 2, 2},
    {FL_OP_CONV2D, 2, 2}, {FL_OP_CONV2D_BACKPROP_INPUT, 3, 3}, {FL_OP_CONV2D_BACKPROP_FILTER, 3, 3},
    {FL_OP_MAX_POOL, 1, 1}, {FL_OP_MAX_POOL_GRAD, 3, 3}, {FL_OP_APPLY_GRADIENT_DESCENT, 2, 2},
    {FL_OP_APPLY_MOMENTUM, 3, 3}, {FL_OP_APPLY_ADAM, 6, 6},
}; /* any other op (sources, NoOp) takes none */

static int check_arity(fl_op_kind op, int ninputs, char *why, size_t len)
{
    int min = 0, max = 0;
    for (size_t i = 0; i < sizeof ARITIES / sizeof *ARITIES; i++)
        if (ARITIES[i].op == op) {
            min = ARITIES[i].min;
            max = ARITIES[i].max;
        }
    if (ninputs >= min && ninputs <= max)
        return 0;
    snprintf(why, len, "a %s takes %d to %d inputs, not %d", fl_op_def_of(op)->type, min, max, ninputs);
    return -1;
}

/* An assignment or an update writes into its first inputs (an optimizer's
 * slots too, all but the gradient): they must be variables, whose buffers
 * the session keeps for them. */
static int check_state_inputs(fl_op_kind op, fl_node *const *inputs, int ninputs, char *why, size_t len)
{
    bool assigns = op == FL_OP_ASSIGN || op == FL_OP_ASSIGN_ADD;
    bool updates = op == FL_OP_APPLY_GRADIENT_DESCENT || op == FL_OP_APPLY_MOMENTUM || op == FL_OP_APPLY_ADAM;
    int written = assigns ? 1 : updates ? ninputs - 1 : 0;
    for (int i = 0; i < written; i++) {
        if (inputs[i]->op == FL_OP_VARIABLE)
            continue;
        snprintf(why, len, "input %d of a %s must be a variable; %s is a %s", i, fl_op_def_of(op)->type,
                 inputs[i]->name, fl_node_op_type(inputs[i]));
        return -1;
    }
    return 0;
}

/* The fused ops are the session's own, made for one run on a device that
 * has their kernel (session_fusion.c): a partition never carries them. */
static int check_not_fused(fl_op_kind op, char *why, size_t len)
{
    if (op != FL_OP_FUSED_CONV2D && op != FL_OP_FUSED_MATMUL && op != FL_OP_MAX_POOL_RELU_GRAD)
        return 0;
    snprintf(why, len, "a %s is made by the session's fusion pass, never sent in a partition", fl_op_def_of(op)->type);
    return -1;
}

bool fl_graph_wire_op_has_output(fl_op_kind op)
{
    return op != FL_OP_NO_OP && op != FL_OP_APPLY_GRADIENT_DESCENT && op != FL_OP_APPLY_MOMENTUM &&
           op != FL_OP_APPLY_ADAM;
}

int fl_graph_wire_check_inputs(fl_op_kind op, fl_node *const *inputs, int ninputs, char *why, size_t len)
{
    return check_not_fused(op, why, len) != 0 || check_arity(op, ninputs, why, len) != 0 ||
                   check_state_inputs(op, inputs, ninputs, why, len) != 0
               ? -1
               : 0;
}
