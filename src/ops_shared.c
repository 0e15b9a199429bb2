/* ops_shared.c: the shape rules and node builders several op families
 * share: same-shape-as-input-0, broadcasting, and one- and two-input nodes. */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

int fl_infer_same_as_input0(const fl_node *n, const fl_shape *in, fl_shape *out, char *err)
{
    (void)n;
    (void)err;
    *out = in[0];
    return 0;
}

static bool dim_compatible(int a, int b) { return a < 0 || b < 0 || a == b; }

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

int fl_broadcast_shape(fl_shape a, fl_shape b, fl_shape *out, char *err)
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
    snprintf(err, FL_ERROR_LEN,
             "shapes %s and %s do not broadcast (one must be a scalar or match the other's last dimensions)",
             fl_shape_format(a, sa, sizeof sa), fl_shape_format(b, sb, sizeof sb));
    return -1;
}

fl_node *fl_build_unary(fl_graph *g, fl_op_kind op, fl_node *x, const char *name,
                        const char *default_name)
{
    fl_node *inputs[1] = {x};
    fl_node_spec spec = {.op = op, .name = name, .default_name = default_name, .inputs = inputs,
                         .ninputs = 1, .dtype = x ? x->dtype : FL_FLOAT32, .has_output = true};
    return fl_add_node(g, &spec);
}

fl_node *fl_build_binary(fl_graph *g, fl_op_kind op, fl_node *a, fl_node *b, const char *name,
                         const char *default_name)
{
    fl_node *inputs[2] = {a, b};
    fl_node_spec spec = {.op = op, .name = name, .default_name = default_name, .inputs = inputs,
                         .ninputs = 2, .dtype = a ? a->dtype : FL_FLOAT32, .has_output = true};
    return fl_add_node(g, &spec);
}
