/* ops_shared.c: the shape rules and node builders several op families
 * share: same-shape-as-input-0, broadcasting, the checks of an input's
 * dtype, shape and axis, and one- and two-input nodes. Shape rules run on
 * graphs from the wire too, so each checks every input it reads. */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

int fl_infer_same_as_input0(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    (void)n;
    (void)st;
    *out = in[0];
    return 0;
}

static bool dim_compatible(int a, int b) { return a < 0 || b < 0 || a == b; }
static bool is_suffix(fl_shape big, fl_shape small);

int fl_check_input_dtype(const fl_node *n, int i, fl_dtype want, fl_status *st)
{
    if (n->inputs[i]->dtype == want)
        return 0;
    fl_status_set(st, FL_INVALID_ARGUMENT, "input %d (%s) is %s, but this op needs %s; use fl_cast", i,
                  n->inputs[i]->name, fl_dtype_name(n->inputs[i]->dtype), fl_dtype_name(want));
    return -1;
}

int fl_check_float_inputs(const fl_node *n, fl_status *st)
{
    for (int i = 0; i < n->ninputs; i++)
        if (fl_check_input_dtype(n, i, FL_FLOAT32, st) != 0)
            return -1;
    return 0;
}

int fl_check_same_shape(const fl_node *n, const fl_shape *in, int i, int j, fl_status *st)
{
    bool match = in[i].rank == in[j].rank;
    for (int d = 0; match && d < in[i].rank; d++)
        match = dim_compatible(in[i].dims[d], in[j].dims[d]);
    if (match)
        return 0;
    char si[64], sj[64];
    fl_status_set(st, FL_INVALID_ARGUMENT, "input %d (%s) has shape %s but input %d (%s) has %s; they must match", i,
                  n->inputs[i]->name, fl_shape_format(in[i], si, sizeof si), j, n->inputs[j]->name,
                  fl_shape_format(in[j], sj, sizeof sj));
    return -1;
}

int fl_check_axis(int axis, int rank, fl_status *st)
{
    if (axis >= 0 && axis < rank)
        return 0;
    if (rank == 0)
        fl_status_set(st, FL_INVALID_ARGUMENT, "axis %d of a scalar input: a scalar has no axis", axis);
    else
        fl_status_set(st, FL_INVALID_ARGUMENT,
                      "axis %d is out of range for a rank-%d input (the builder takes %d to %d)", axis, rank,
                      -rank, rank - 1);
    return -1;
}

/* Input i broadcasts into `into` (a scalar, or its trailing dims): it is
 * read at index % its size, so it must divide the output evenly. */
int fl_check_broadcasts_into(const fl_node *n, const fl_shape *in, int i, fl_shape into, fl_status *st)
{
    if (is_suffix(into, in[i]))
        return 0;
    char si[64], so[64];
    fl_status_set(st, FL_INVALID_ARGUMENT, "input %d (%s) has shape %s, which does not broadcast into %s", i,
                  n->inputs[i]->name, fl_shape_format(in[i], si, sizeof si), fl_shape_format(into, so, sizeof so));
    return -1;
}

/* Two inputs of one shape, both float32 (ReluGrad, SigmoidGrad, TanhGrad,
 * SoftmaxGrad): the output is input 0's shape, as it always was (a
 * partition states it), now that input 1 is known to match it. */
int fl_infer_same_float_pair(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st)
{
    if (fl_check_float_inputs(n, st) != 0 || fl_check_same_shape(n, in, 1, 0, st) != 0)
        return -1;
    *out = in[0];
    return 0;
}

/* b broadcasts against a when b is a scalar or a's trailing dims are b's. */
static bool is_suffix(fl_shape big, fl_shape small)
{
    if (small.rank > big.rank)
        return false;
    int offset = big.rank - small.rank;
    for (int i = 0; i < small.rank; i++)
        if (!dim_compatible(big.dims[offset + i], small.dims[i]))
            return false;
    return true;
}

int fl_broadcast_shape(fl_shape a, fl_shape b, fl_shape *out, fl_status *st)
{
    if (a.rank >= b.rank && is_suffix(a, b)) {
        *out = a;
        if (a.rank == b.rank) /* keep whichever dims are known */
            for (int i = 0; i < a.rank; i++)
                if (out->dims[i] < 0)
                    out->dims[i] = b.dims[i];
        return 0;
    }
    if (b.rank > a.rank && is_suffix(b, a)) {
        *out = b;
        return 0;
    }
    char sa[64], sb[64];
    fl_status_set(st, FL_INVALID_ARGUMENT,
                  "shapes %s and %s do not broadcast (one must be a scalar or match the other's last dimensions)",
                  fl_shape_format(a, sa, sizeof sa), fl_shape_format(b, sb, sizeof sb));
    return -1;
}

fl_node *fl_build_unary(fl_graph *g, fl_op_kind op, fl_node *x, const char *name,
                        const char *default_name)
{
    fl_node *inputs[1] = {x};
    fl_node_spec spec = {.op = op, .name = name, .default_name = default_name, .inputs = inputs,
                         .ninputs = 1, .dtype = x ? x->dtype : FL_FLOAT32};
    return fl_add_node(g, &spec);
}

fl_node *fl_build_binary(fl_graph *g, fl_op_kind op, fl_node *a, fl_node *b, const char *name,
                         const char *default_name)
{
    fl_node *inputs[2] = {a, b};
    fl_node_spec spec = {.op = op, .name = name, .default_name = default_name, .inputs = inputs,
                         .ninputs = 2, .dtype = a ? a->dtype : FL_FLOAT32};
    return fl_add_node(g, &spec);
}
