/* ops_accumulator.c: TensorFlow's ConditionalAccumulator ops for synchronous
 * training (issue 36 item 2, stage B): AccumulatorApplyGradient,
 * AccumulatorTakeGradient, AccumulatorSetGlobalStep, AccumulatorWaitStep
 * (a worker's wait for the next step, where TensorFlow dequeues a token) and
 * AccumulatorClose (the chief's end of training: TensorFlow closes the token queue). Each names its
 * accumulator (TensorFlow's shared_name, in the edge_key attr) and its
 * gradients' shape; the state lives in the task's container (accumulator.c). */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

/* A step or a count: an int32 scalar. */
static int check_int_scalar(const fl_node *n, int i, const char *what, const fl_shape *in, fl_status *st)
{
    if (n->inputs[i]->dtype == FL_INT32 && in[i].rank == 0)
        return 0;
    fl_status_set(st, FL_INVALID_ARGUMENT, "its %s (%s) must be an int32 scalar", what, n->inputs[i]->name);
    return -1;
}

/* Its accumulator's name, and a shape of known dimensions (a ps makes the
 * accumulator from it, for whichever client sent the piece). */
static int check_named(const fl_node *n, fl_status *st)
{
    if (!n->attrs.edge_key[0]) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "an accumulator op needs the name of its accumulator");
        return -1;
    }
    fl_shape s = n->attrs.shape;
    bool ok = s.rank >= 0 && s.rank <= FL_MAX_RANK;
    for (int i = 0; ok && i < s.rank; i++)
        ok = s.dims[i] >= 0;
    if (!ok)
        fl_status_set(st, FL_INVALID_ARGUMENT, "accumulator %s: its shape attr (rank %d) is not valid: rank 0 to "
                      "%d, every dimension known", n->attrs.edge_key, s.rank, FL_MAX_RANK);
    return ok ? 0 : -1;
}

static int infer_apply(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (check_named(n, st) != 0 || check_int_scalar(n, 0, "local step", in, st) != 0)
        return -1;
    char want[64], got[64];
    if (n->inputs[1]->dtype != FL_FLOAT32 || !fl_shape_equal(in[1], n->attrs.shape)) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "accumulator %s takes float32 %s gradients, not %s %s",
                      n->attrs.edge_key, fl_shape_format(n->attrs.shape, want, sizeof want),
                      fl_dtype_name(n->inputs[1]->dtype), fl_shape_format(in[1], got, sizeof got));
        return -1;
    }
    *out = fl_shape_make(0); /* int32: 1 when the gradient was stale and dropped, else 0 */
    return 0;
}

static int infer_take(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (check_named(n, st) != 0 || check_int_scalar(n, 0, "num_required", in, st) != 0)
        return -1;
    *out = n->attrs.shape;
    return 0;
}

/* SetGlobalStep's new step, or Close's last one. */
static int infer_set_step(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (check_named(n, st) != 0 || check_int_scalar(n, 0, "global step", in, st) != 0)
        return -1;
    *out = fl_shape_make(0);
    return 0;
}

static int infer_wait_step(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (check_named(n, st) != 0 || check_int_scalar(n, 0, "local step", in, st) != 0)
        return -1;
    *out = fl_shape_make(0); /* int32: the accumulator's global step once it passed the local step */
    return 0;
}

const fl_op_def fl_def_accumulator_apply_gradient = {
    "AccumulatorApplyGradient", {.min_inputs = 2, .max_inputs = 2, .has_output = true, .in_container = true},
    infer_apply, NULL};
const fl_op_def fl_def_accumulator_take_gradient = {
    "AccumulatorTakeGradient", {.min_inputs = 1, .max_inputs = 1, .has_output = true, .in_container = true},
    infer_take, NULL};
const fl_op_def fl_def_accumulator_set_global_step = {
    "AccumulatorSetGlobalStep", {.min_inputs = 1, .max_inputs = 1, .in_container = true}, infer_set_step, NULL};
const fl_op_def fl_def_accumulator_close = {
    "AccumulatorClose", {.min_inputs = 1, .max_inputs = 1, .in_container = true}, infer_set_step, NULL};
const fl_op_def fl_def_accumulator_wait_step = {
    "AccumulatorWaitStep", {.min_inputs = 1, .max_inputs = 1, .has_output = true, .in_container = true},
    infer_wait_step, NULL};

static fl_node *build(fl_graph *g, fl_op_kind op, const char *accumulator, fl_shape shape, fl_node **inputs,
                      int ninputs, const char *name, const char *default_name)
{
    bool gives_step = op == FL_OP_ACCUMULATOR_APPLY_GRADIENT || op == FL_OP_ACCUMULATOR_WAIT_STEP;
    if (!accumulator || !accumulator[0] || strlen(accumulator) >= FL_EDGE_KEY_LEN)
        return fl_graph_fail(g, name ? name : default_name, "an accumulator's name of 1 to %d bytes is needed",
                             FL_EDGE_KEY_LEN - 1);
    fl_node_spec spec = {.op = op, .name = name, .default_name = default_name, .inputs = inputs,
                         .ninputs = ninputs, .dtype = gives_step ? FL_INT32 : FL_FLOAT32, .attrs = {.shape = shape}};
    snprintf(spec.attrs.edge_key, sizeof spec.attrs.edge_key, "%s", accumulator);
    return fl_add_node(g, &spec);
}

fl_node *fl_accumulator_apply_gradient(fl_graph *g, const char *accumulator, fl_node *local_step,
                                       fl_node *gradient, const char *name)
{
    fl_node *inputs[2] = {local_step, gradient};
    return build(g, FL_OP_ACCUMULATOR_APPLY_GRADIENT, accumulator, gradient ? gradient->shape : fl_shape_make(0),
                 inputs, 2, name, "AccumulatorApplyGradient");
}

fl_node *fl_accumulator_take_gradient(fl_graph *g, const char *accumulator, fl_shape shape, fl_node *num_required,
                                      const char *name)
{
    return build(g, FL_OP_ACCUMULATOR_TAKE_GRADIENT, accumulator, shape, &num_required, 1, name,
                 "AccumulatorTakeGradient");
}

fl_node *fl_accumulator_set_global_step(fl_graph *g, const char *accumulator, fl_shape shape, fl_node *step,
                                        const char *name)
{
    return build(g, FL_OP_ACCUMULATOR_SET_GLOBAL_STEP, accumulator, shape, &step, 1, name,
                 "AccumulatorSetGlobalStep");
}

fl_node *fl_accumulator_wait_step(fl_graph *g, const char *accumulator, fl_shape shape, fl_node *local_step,
                                  const char *name)
{
    return build(g, FL_OP_ACCUMULATOR_WAIT_STEP, accumulator, shape, &local_step, 1, name, "AccumulatorWaitStep");
}

fl_node *fl_accumulator_close(fl_graph *g, const char *accumulator, fl_shape shape, fl_node *step, const char *name)
{
    return build(g, FL_OP_ACCUMULATOR_CLOSE, accumulator, shape, &step, 1, name, "AccumulatorClose");
}
