/* ops_reduce.c: reduce_sum and reduce_mean over chosen axes, their one
 * gradient op, and the ops that score predictions: argmax, which reduces an
 * axis to the index of its maximum, and equal. ReduceGrad(dy, x) broadcasts dy back over the reduced axes
 * (dividing by how many elements were averaged, for a mean), so a mean over
 * a batch whose size is only known at run time still differentiates. */
#include <stdio.h>

#include "runtime.h"

/* What is left of x: reduced axes become 1 (keep_dims) or disappear. */
static fl_shape reduced_shape(fl_shape x, const fl_attrs *attrs)
{
    fl_shape out = {0};
    for (int i = 0; i < x.rank; i++) {
        if (!attrs->reduce_axis[i])
            out.dims[out.rank++] = x.dims[i];
        else if (attrs->keep_dims)
            out.dims[out.rank++] = 1;
    }
    return out;
}

/* The builders mark only axes x has; a partition from the wire may mark more. */
static int check_reduce_axes(const fl_attrs *attrs, int rank, fl_status *st)
{
    for (int i = rank; i < FL_MAX_RANK; i++)
        if (attrs->reduce_axis[i]) {
            fl_status_set(st, FL_INVALID_ARGUMENT, "reduces axis %d of a rank-%d input", i, rank);
            return -1;
        }
    return 0;
}

static int infer_reduce(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (check_reduce_axes(&n->attrs, in[0].rank, st) != 0)
        return -1;
    *out = reduced_shape(in[0], &n->attrs);
    return 0;
}

/* dy may be partly unknown at build time: unknown dims match anything. */
static bool shapes_compatible(fl_shape a, fl_shape b)
{
    if (a.rank != b.rank)
        return false;
    for (int i = 0; i < a.rank; i++)
        if (a.dims[i] >= 0 && b.dims[i] >= 0 && a.dims[i] != b.dims[i])
            return false;
    return true;
}

/* ReduceGrad(dy, x) has x's shape; dy must be x reduced the same way. */
static int infer_reduce_grad(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (fl_check_float_inputs(n, st) != 0 || check_reduce_axes(&n->attrs, in[1].rank, st) != 0)
        return -1;
    fl_shape want = reduced_shape(in[1], &n->attrs);
    if (!shapes_compatible(in[0], want)) {
        char sd[64], sw[64], sx[64];
        fl_status_set(st, FL_INVALID_ARGUMENT, "dy has shape %s, but %s reduced is %s",
                      fl_shape_format(in[0], sd, sizeof sd), fl_shape_format(in[1], sx, sizeof sx),
                      fl_shape_format(want, sw, sizeof sw));
        return -1;
    }
    *out = in[1];
    return 0;
}

static int grad_reduce(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *x = n->inputs[0];
    if (x->dtype != FL_FLOAT32) /* an integer sum has no gradient */
        return 0;
    fl_node *inputs[2] = {dy, x};
    fl_node_spec spec = {.op = FL_OP_REDUCE_GRAD, .default_name = "ReduceGrad", .inputs = inputs,
                         .ninputs = 2, .dtype = FL_FLOAT32, .attrs = n->attrs};
    spec.attrs.mean = n->op == FL_OP_REDUCE_MEAN;
    dx[0] = fl_add_node(g, &spec);
    return 0;
}

const fl_op_def fl_def_reduce_sum = {
    "Sum",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_reduce, grad_reduce};
const fl_op_def fl_def_reduce_mean = {
    "Mean",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_reduce, grad_reduce};
/* Second derivatives are out of scope: ReduceGrad itself has no gradient. */
const fl_op_def fl_def_reduce_grad = {
    "ReduceGrad",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_reduce_grad, NULL};

/* Marks the axes to reduce. NULL or none means all of them; -1 is the last. */
static int pick_axes(fl_graph *g, const char *name, int rank, const int *axes, int naxes,
                     bool *reduce)
{
    if (!axes || naxes == 0) {
        for (int i = 0; i < rank; i++)
            reduce[i] = true;
        return 0;
    }
    if (naxes < 0) {
        fl_graph_fail(g, name, "naxes is %d; pass 0 (or axes NULL) to reduce every axis", naxes);
        return -1;
    }
    if (rank == 0) {
        fl_graph_fail(g, name, "a scalar has no axis %d", axes[0]);
        return -1;
    }
    for (int k = 0; k < naxes; k++) {
        int axis = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (axis < 0 || axis >= rank) {
            fl_graph_fail(g, name, "axis %d is out of range for a rank-%d input (use %d to %d)",
                          axes[k], rank, -rank, rank - 1);
            return -1;
        }
        if (reduce[axis]) {
            fl_graph_fail(g, name, "axes list axis %d more than once", axis);
            return -1;
        }
        reduce[axis] = true;
    }
    return 0;
}

static fl_node *build_reduce(fl_graph *g, fl_op_kind op, const char *type, fl_node *x,
                             const int *axes, int naxes, bool keep_dims, const char *name)
{
    if (!g)
        return NULL;
    fl_node *inputs[1] = {x};
    fl_node_spec spec = {.op = op, .name = name, .default_name = type, .inputs = inputs,
                         .ninputs = 1, .dtype = x ? x->dtype : FL_FLOAT32};
    spec.attrs.keep_dims = keep_dims;
    /* With x NULL, fl_add_node reports it (or stays quiet after an earlier error). */
    if (x && pick_axes(g, name ? name : type, x->shape.rank, axes, naxes, spec.attrs.reduce_axis) != 0)
        return NULL;
    return fl_add_node(g, &spec);
}

fl_node *fl_reduce_sum(fl_graph *g, fl_node *x, const int *axes, int naxes, bool keep_dims,
                       const char *name)
{
    return build_reduce(g, FL_OP_REDUCE_SUM, "Sum", x, axes, naxes, keep_dims, name);
}

fl_node *fl_reduce_mean(fl_graph *g, fl_node *x, const int *axes, int naxes, bool keep_dims,
                        const char *name)
{
    return build_reduce(g, FL_OP_REDUCE_MEAN, "Mean", x, axes, naxes, keep_dims, name);
}

/* ---- ArgMax: int32 index of the first largest element along an axis ---- */

static int infer_argmax(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    int axis = n->attrs.axis;
    if (fl_check_axis(axis, in[0].rank, st) != 0)
        return -1;
    if (in[0].dims[axis] == 0) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "argmax over axis %d, which is empty", axis);
        return -1;
    }
    *out = in[0];
    out->rank--;
    for (int d = axis; d < out->rank; d++)
        out->dims[d] = in[0].dims[d + 1];
    return 0;
}

/* An index or a comparison does not vary smoothly with x: nothing flows
 * back, quietly (a NULL rule would mean "cannot differentiate this"). */
static int grad_none(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    (void)g;
    (void)n;
    (void)dy;
    (void)dx;
    return 0;
}

const fl_op_def fl_def_argmax = {
    "ArgMax",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_argmax, grad_none};

fl_node *fl_argmax(fl_graph *g, fl_node *x, int axis, const char *name)
{
    if (!g)
        return NULL;
    fl_node *inputs[1] = {x};
    fl_node_spec spec = {.op = FL_OP_ARGMAX, .name = name, .default_name = "ArgMax",
                         .inputs = inputs, .ninputs = 1, .dtype = FL_INT32};
    if (x) {
        bool unused[FL_MAX_RANK] = {false};
        if (pick_axes(g, name ? name : "ArgMax", x->shape.rank, &axis, 1, unused) != 0)
            return NULL;
        spec.attrs.axis = axis < 0 ? axis + x->shape.rank : axis;
    }
    return fl_add_node(g, &spec);
}

/* ---- Equal: int32 1 where a == b, else 0, with broadcasting ---- */

static int infer_equal(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (n->inputs[0]->dtype != n->inputs[1]->dtype) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "inputs are %s and %s; cast one with fl_cast",
                      fl_dtype_name(n->inputs[0]->dtype), fl_dtype_name(n->inputs[1]->dtype));
        return -1;
    }
    return fl_broadcast_shape(in[0], in[1], out, st);
}

const fl_op_def fl_def_equal = {
    "Equal",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_equal, grad_none};

fl_node *fl_equal(fl_graph *g, fl_node *a, fl_node *b, const char *name)
{
    fl_node *inputs[2] = {a, b};
    fl_node_spec spec = {.op = FL_OP_EQUAL, .name = name, .default_name = "Equal",
                         .inputs = inputs, .ninputs = 2, .dtype = FL_INT32};
    return fl_add_node(g, &spec);
}
