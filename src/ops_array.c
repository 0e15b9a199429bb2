/* ops_array.c: ops that move, relabel or compare elements rather than do
 * arithmetic: reshape, concat, slice and split, identity, stop_gradient,
 * cast. (ArgMax and Equal, which score predictions, live with the
 * reductions; copies between devices are the session's, not ops.)
 * Sizes unknown at build time (a batch of ?) are settled at run time, when
 * each shape rule runs again on the real shapes. */
#include <stdint.h>
#include <stdio.h>

#include "runtime.h"

/* The axis counted from the front (-1 is the last axis), or -1 after
 * recording why it does not exist. */
static int normalize_axis(fl_graph *g, const char *name, int axis, int rank)
{
    if (rank == 0) {
        fl_graph_fail(g, name, "a scalar has no axis %d", axis);
        return -1;
    }
    int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
        fl_graph_fail(g, name, "axis %d is out of range for a rank-%d input (use %d to %d)", axis,
                      rank, -rank, rank - 1);
        return -1;
    }
    return a;
}

/* Passes dy through unchanged: Identity, Cast float32 -> float32. */
static int grad_pass(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    (void)g;
    (void)n;
    dx[0] = dy;
    return 0;
}

/* Lets nothing through, quietly: the loss simply does not depend on the
 * input (StopGradient). A NULL gradient rule would instead mean "cannot
 * differentiate this", an error when the loss depends on it. */
static int grad_none(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    (void)g;
    (void)n;
    (void)dy;
    (void)dx;
    return 0;
}

/* ---- Reshape(x) to attrs.shape, or Reshape(x, like) to like's run-time shape ---- */

static int infer_reshape(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    bool like = n->ninputs == 2;
    fl_shape target = like ? in[1] : n->attrs.shape;
    if (!like && fl_reshape_target_check(target, st) != 0)
        return -1;
    int64_t count = fl_shape_size(in[0]);
    /* Not checkable until run time: -1 stays unknown in the build-time shape. */
    if (count < 0 || (like && fl_shape_size(target) < 0)) {
        *out = target;
        return 0;
    }
    if (fl_reshape_target_resolve(target, count, out) == 0)
        return 0;
    char sx[64], starget[64];
    fl_status_set(st, FL_INVALID_ARGUMENT, "cannot reshape %s (%lld elements) into %s",
                  fl_shape_format(in[0], sx, sizeof sx), (long long)count,
                  fl_reshape_target_format(target, starget, sizeof starget));
    return -1;
}

static int grad_reshape(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    dx[0] = fl_reshape_like(g, dy, n->inputs[0], NULL);
    return 0;
}

const fl_op_def fl_def_reshape = {
    "Reshape",
    {.min_inputs = 1, .max_inputs = 2, .has_output = true, .aliases = FL_ALIAS_RENAMES_INPUT0},
    infer_reshape, grad_reshape};

static int check_target(fl_graph *g, const char *name, fl_shape shape)
{
    fl_status why = {0};
    if (fl_reshape_target_check(shape, &why) == 0)
        return 0;
    fl_graph_fail(g, name, "%s", why.message);
    return -1;
}

fl_node *fl_reshape(fl_graph *g, fl_node *x, fl_shape shape, const char *name)
{
    if (!g || check_target(g, name ? name : "Reshape", shape) != 0)
        return NULL;
    fl_node *inputs[1] = {x};
    fl_node_spec spec = {.op = FL_OP_RESHAPE, .name = name, .default_name = "Reshape",
                         .inputs = inputs, .ninputs = 1, .dtype = x ? x->dtype : FL_FLOAT32};
    spec.attrs.shape = shape;
    return fl_add_node(g, &spec);
}

fl_node *fl_reshape_like(fl_graph *g, fl_node *x, fl_node *like, const char *name)
{
    fl_node *inputs[2] = {x, like};
    fl_node_spec spec = {.op = FL_OP_RESHAPE, .name = name, .default_name = "Reshape",
                         .inputs = inputs, .ninputs = 2, .dtype = x ? x->dtype : FL_FLOAT32};
    return fl_add_node(g, &spec);
}

/* ---- Concat along attrs.axis ---- */

/* Input i against the output so far: same dtype, rank and dims but the axis. */
static int concat_input(const fl_node *n, const fl_shape *in, int i, fl_shape *out, fl_status *st)
{
    int axis = n->attrs.axis;
    bool match = in[i].rank == in[0].rank;
    for (int d = 0; match && d < in[0].rank; d++) {
        int a = out->dims[d], b = in[i].dims[d];
        if (d != axis && a >= 0 && b >= 0 && a != b)
            match = false;
        else if (d != axis && a < 0)
            out->dims[d] = b; /* keep whichever size is known */
    }
    if (!match) {
        char s0[64], si[64];
        fl_status_set(st, FL_INVALID_ARGUMENT,
                      "input %d (%s) has shape %s, input 0 has %s; all dimensions but axis %d must match",
                      i, n->inputs[i]->name, fl_shape_format(in[i], si, sizeof si),
                      fl_shape_format(in[0], s0, sizeof s0), axis);
        return -1;
    }
    return fl_check_input_dtype(n, i, n->inputs[0]->dtype, st);
}

static int infer_concat(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    int axis = n->attrs.axis;
    if (fl_check_axis(axis, in[0].rank, st) != 0)
        return -1;
    *out = in[0];
    for (int i = 1; i < n->ninputs; i++)
        if (concat_input(n, in, i, out, st) != 0)
            return -1;
    int64_t total = 0;
    for (int i = 0; i < n->ninputs && total >= 0; i++)
        total = in[i].dims[axis] < 0 ? -1 : total + in[i].dims[axis];
    if (total > INT32_MAX) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "the inputs add up to %lld on axis %d, over a dimension's limit of %d",
                      (long long)total, axis, INT32_MAX);
        return -1;
    }
    out->dims[axis] = (int)total;
    return 0;
}

/* Part i of num_parts of dy, as Slice(dy, like): like is the input the part
 * stands for, there only so that the run-time shape rule can check that the
 * parts really were equal (else the gradient would be silently wrong). */
static fl_node *equal_part_like(fl_graph *g, fl_node *dy, int axis, int part, int num_parts,
                                fl_node *like)
{
    fl_node *inputs[2] = {dy, like};
    fl_node_spec spec = {.op = FL_OP_SLICE, .default_name = "Slice", .inputs = inputs,
                         .ninputs = 2, .dtype = dy->dtype};
    spec.attrs.axis = axis;
    spec.attrs.part = part;
    spec.attrs.num_parts = num_parts;
    return fl_add_node(g, &spec);
}

/* Each input's gradient is its window of dy. Windows need sizes: known ones
 * give fixed slices; unknown ones work only when all inputs are alike (the
 * usual case: towers' outputs), so that part i of n is input i's window. */
static int grad_concat(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    int axis = n->attrs.axis;
    bool all_known = true, all_alike = true;
    for (int i = 0; i < n->ninputs; i++) {
        int size = n->inputs[i]->shape.dims[axis];
        all_known = all_known && size >= 0;
        all_alike = all_alike && size == n->inputs[0]->shape.dims[axis];
    }
    if (!all_known && !all_alike) {
        fl_graph_fail(g, n->name, "cannot split the gradient of Concat: the inputs' sizes on axis %d differ and some are unknown at build time; give them known sizes",
                      axis);
        return -1;
    }
    int begin = 0;
    for (int i = 0; i < n->ninputs; i++) {
        int size = n->inputs[i]->shape.dims[axis];
        if (all_known)
            dx[i] = fl_slice(g, dy, axis, begin, size, NULL);
        else
            dx[i] = equal_part_like(g, dy, axis, i, n->ninputs, n->inputs[i]);
        begin += all_known ? size : 0;
    }
    return 0;
}

const fl_op_def fl_def_concat = {
    "Concat",
    {.min_inputs = 1, .max_inputs = FL_OP_INPUT_LIST, .has_output = true},
    infer_concat, grad_concat};

fl_node *fl_concat(fl_graph *g, fl_node *const *inputs, int n, int axis, const char *name)
{
    const char *what = name ? name : "Concat";
    if (!g)
        return NULL;
    if (n < 1 || !inputs)
        return fl_graph_fail(g, what, "concat needs at least one input");
    fl_node_spec spec = {.op = FL_OP_CONCAT, .name = name, .default_name = "Concat",
                         .inputs = inputs, .ninputs = n};
    for (int i = 0; i < n; i++)
        if (!inputs[i]) /* fl_add_node says so, or stays quiet after an earlier error */
            return fl_add_node(g, &spec);
    for (int i = 1; i < n; i++)
        if (inputs[i]->dtype != inputs[0]->dtype)
            return fl_graph_fail(g, what, "inputs mix %s and %s", fl_dtype_name(inputs[0]->dtype),
                                 fl_dtype_name(inputs[i]->dtype));
    spec.dtype = inputs[0]->dtype;
    spec.attrs.axis = normalize_axis(g, what, axis, inputs[0]->shape.rank);
    return spec.attrs.axis < 0 ? NULL : fl_add_node(g, &spec);
}

/* ---- Slice: a fixed window [begin, begin + size) of one axis, or part i of
 * num_parts equal parts (num_parts > 0), which can wait for run time ---- */

/* The window's length on an axis of size dim (-1: unknown, and so is a
 * part's length); the kernels place it from attrs. */
static int slice_size(const fl_attrs *a, int dim, int *size, fl_status *st)
{
    bool no_part = a->num_parts > 0 && (a->part < 0 || a->part >= a->num_parts);
    if (a->begin < 0 || a->size < 0 || a->num_parts < 0 || no_part) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "the window begin %d size %d (part %d of %d) does not exist",
                      a->begin, a->size, a->part, a->num_parts);
        return -1;
    }
    if (a->num_parts > 0) {
        if (dim >= 0 && dim % a->num_parts != 0) {
            fl_status_set(st, FL_INVALID_ARGUMENT, "cannot split axis %d of size %d into %d equal parts",
                          a->axis, dim, a->num_parts);
            return -1;
        }
        *size = dim < 0 ? -1 : dim / a->num_parts;
        return 0;
    }
    if (dim >= 0 && (int64_t)a->begin + a->size > dim) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "the window [%d, %lld) does not fit axis %d of size %d", a->begin,
                      (long long)a->begin + a->size, a->axis, dim);
        return -1;
    }
    *size = a->size;
    return 0;
}

static int slice_shape(const fl_attrs *a, fl_shape x, fl_shape *out, fl_status *st)
{
    if (fl_check_axis(a->axis, x.rank, st) != 0)
        return -1;
    *out = x;
    return slice_size(a, x.dims[a->axis], &out->dims[a->axis], st);
}

/* Slice(x), or Slice(x, like) from Concat's gradient: the part must be as
 * long as like, the input it belongs to. */
static int infer_slice(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (slice_shape(&n->attrs, in[0], out, st) != 0)
        return -1;
    int axis = n->attrs.axis, got = out->dims[axis];
    if (n->ninputs == 2 && in[1].rank != in[0].rank) {
        char sx[64], sl[64];
        fl_status_set(st, FL_INVALID_ARGUMENT,
                      "input 1 (%s) has shape %s, input 0 has %s: the part and its input need one rank",
                      n->inputs[1]->name, fl_shape_format(in[1], sl, sizeof sl), fl_shape_format(in[0], sx, sizeof sx));
        return -1;
    }
    if (n->ninputs == 2 && got >= 0 && in[1].dims[axis] >= 0 && got != in[1].dims[axis]) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "part %d of %d is %d long on axis %d but %s is %d: Concat's gradient needs equal sizes where they are unknown at build time",
                      n->attrs.part, n->attrs.num_parts, got, axis, n->inputs[1]->name, in[1].dims[axis]);
        return -1;
    }
    return 0;
}

/* SliceGrad(dy, x): x's shape, zero outside the window, dy inside it. */
static int infer_slice_grad(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    fl_shape window;
    if (slice_shape(&n->attrs, in[1], &window, st) != 0)
        return -1;
    bool match = in[0].rank == window.rank;
    for (int d = 0; match && d < window.rank; d++)
        match = in[0].dims[d] < 0 || window.dims[d] < 0 || in[0].dims[d] == window.dims[d];
    if (!match) {
        char sd[64], sw[64];
        fl_status_set(st, FL_INVALID_ARGUMENT, "dy has shape %s, but the slice has %s",
                      fl_shape_format(in[0], sd, sizeof sd), fl_shape_format(window, sw, sizeof sw));
        return -1;
    }
    *out = in[1];
    return fl_check_input_dtype(n, 0, n->inputs[1]->dtype, st);
}

static int grad_slice(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    fl_node *inputs[2] = {dy, n->inputs[0]};
    fl_node_spec spec = {.op = FL_OP_SLICE_GRAD, .default_name = "SliceGrad", .inputs = inputs,
                         .ninputs = 2, .dtype = dy->dtype, .attrs = n->attrs};
    dx[0] = fl_add_node(g, &spec);
    return 0;
}

const fl_op_def fl_def_slice = {
    "Slice",
    {.min_inputs = 1, .max_inputs = 2, .has_output = true},
    infer_slice, grad_slice};
const fl_op_def fl_def_slice_grad = {
    "SliceGrad",
    {.min_inputs = 2, .max_inputs = 2, .has_output = true},
    infer_slice_grad, NULL};

static fl_node *build_slice(fl_graph *g, fl_node *x, const fl_attrs *attrs, int axis,
                            const char *name, const char *default_name)
{
    fl_node *inputs[1] = {x};
    fl_node_spec spec = {.op = FL_OP_SLICE, .name = name, .default_name = default_name,
                         .inputs = inputs, .ninputs = 1, .dtype = x ? x->dtype : FL_FLOAT32, .attrs = *attrs};
    if (x) {
        spec.attrs.axis = normalize_axis(g, name ? name : default_name, axis, x->shape.rank);
        if (spec.attrs.axis < 0)
            return NULL;
    }
    return fl_add_node(g, &spec);
}

fl_node *fl_slice(fl_graph *g, fl_node *x, int axis, int begin, int size, const char *name)
{
    if (!g)
        return NULL;
    if (begin < 0 || size < 0)
        return fl_graph_fail(g, name ? name : "Slice", "begin %d and size %d must not be negative",
                             begin, size);
    fl_attrs attrs = {.begin = begin, .size = size};
    return build_slice(g, x, &attrs, axis, name, "Slice");
}

fl_node *fl_split_part(fl_graph *g, fl_node *x, int axis, int part, int num_parts,
                       const char *name)
{
    if (!g)
        return NULL;
    if (num_parts < 1 || part < 0 || part >= num_parts)
        return fl_graph_fail(g, name ? name : "Slice", "part %d of %d does not exist", part,
                             num_parts);
    fl_attrs attrs = {.part = part, .num_parts = num_parts};
    return build_slice(g, x, &attrs, axis, name, "Slice");
}

int fl_split(fl_graph *g, fl_node *x, int num, int axis, fl_node **out, const char *name)
{
    if (!g)
        return -1;
    if (num < 1 || !out) {
        fl_graph_fail(g, name ? name : "split", "split needs num >= 1 and an output array");
        return -1;
    }
    int failed = 0;
    for (int i = 0; i < num; i++) {
        out[i] = failed ? NULL : fl_split_part(g, x, axis, i, num, name ? name : "split");
        failed = failed || !out[i];
    }
    return failed ? -1 : 0;
}

/* ---- Identity, StopGradient: the same tensor under a new name ---- */

const fl_op_def fl_def_identity = {
    "Identity",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true, .aliases = FL_ALIAS_RENAMES_INPUT0},
    fl_infer_same_as_input0, grad_pass};
const fl_op_def fl_def_stop_gradient = {
    "StopGradient",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true, .aliases = FL_ALIAS_RENAMES_INPUT0},
    fl_infer_same_as_input0, grad_none};

fl_node *fl_identity(fl_graph *g, fl_node *x, const char *name)
{
    return fl_build_unary(g, FL_OP_IDENTITY, x, name, "Identity");
}

fl_node *fl_stop_gradient(fl_graph *g, fl_node *x, const char *name)
{
    return fl_build_unary(g, FL_OP_STOP_GRADIENT, x, name, "StopGradient");
}

/* ---- Cast between float32 and int32 (toward zero, like TensorFlow) ---- */

/* Only a float-to-float cast is differentiable; integers carry no gradient. */
static int grad_cast(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx)
{
    if (n->dtype == FL_FLOAT32 && n->inputs[0]->dtype == FL_FLOAT32)
        return grad_pass(g, n, dy, dx);
    return 0;
}

/* The kernel converts into attrs.dtype: the node must say the same. */
static int infer_cast(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (n->attrs.dtype != n->dtype || (n->dtype != FL_FLOAT32 && n->dtype != FL_INT32)) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "casts to %s but its output is %s", fl_dtype_name(n->attrs.dtype),
                      fl_dtype_name(n->dtype));
        return -1;
    }
    *out = in[0];
    return 0;
}

const fl_op_def fl_def_cast = {
    "Cast",
    {.min_inputs = 1, .max_inputs = 1, .has_output = true},
    infer_cast, grad_cast};

fl_node *fl_cast(fl_graph *g, fl_node *x, fl_dtype dtype, const char *name)
{
    if (!g)
        return NULL;
    if (dtype != FL_FLOAT32 && dtype != FL_INT32)
        return fl_graph_fail(g, name ? name : "Cast", "unknown dtype %d", (int)dtype);
    fl_node *inputs[1] = {x};
    fl_node_spec spec = {.op = FL_OP_CAST, .name = name, .default_name = "Cast", .inputs = inputs,
                         .ninputs = 1, .dtype = dtype};
    spec.attrs.dtype = dtype;
    return fl_add_node(g, &spec);
}

int64_t fl_slice_begin(const fl_attrs *a, int64_t size)
{
    return a->num_parts > 0 ? a->part * size : a->begin;
}

/* Every backend's Identity/Reshape/Copy kernel checks this before copying. */
int fl_check_copy_size(const fl_tensor *from, const fl_tensor *to)
{
    if (fl_tensor_bytes(from) == fl_tensor_bytes(to))
        return 0;
    char sf[64], st[64];
    fl_set_error_code(FL_INVALID_ARGUMENT, "cannot copy %s into %s", fl_shape_format(from->shape, sf, sizeof sf),
                      fl_shape_format(to->shape, st, sizeof st));
    return -1;
}
