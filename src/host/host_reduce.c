/* host_reduce.c: reference kernels for Sum, Mean and ReduceGrad.
 * Each element of x maps to one element of the reduced tensor: drop the
 * reduced axes from its coordinates and flatten what is left. The keep_dims
 * layout has the same flat order, since its reduced axes have size 1. */
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "host_kernels.h"

/* Flat index i of shape s as coordinates, last axis fastest. */
static void unravel(int64_t i, fl_shape s, int *coord)
{
    for (int d = s.rank - 1; d >= 0; d--) {
        coord[d] = (int)(i % s.dims[d]);
        i /= s.dims[d];
    }
}

/* Where element i of x lands in the reduced tensor. */
static int64_t reduced_index(int64_t i, fl_shape x, const bool *reduce)
{
    int coord[FL_MAX_RANK];
    unravel(i, x, coord);
    int64_t index = 0;
    for (int d = 0; d < x.rank; d++)
        if (!reduce[d])
            index = index * x.dims[d] + coord[d];
    return index;
}

/* How many elements of x meet in each element of the result. */
static int64_t reduced_count(fl_shape x, const bool *reduce)
{
    int64_t count = 1;
    for (int d = 0; d < x.rank; d++)
        if (reduce[d])
            count *= x.dims[d];
    return count;
}

/* 8 bytes an output element, twice the output's: fallible, on a run's
 * thread. A small result's (a loss, a mean) lie in the caller's stack
 * room, so that a warm step allocates nothing for them. */
enum { STACK_ACCUMULATORS = 64 };
static void *accumulators(int64_t count, size_t width, void *stack_room)
{
    if (count <= STACK_ACCUMULATORS) {
        memset(stack_room, 0, STACK_ACCUMULATORS * width);
        return stack_room;
    }
    void *acc = fl_try_malloc((size_t)count * width);
    if (acc)
        memset(acc, 0, (size_t)count * width);
    else
        fl_prefix_error("the reduction's accumulators: ");
    return acc;
}

/* Sums in double so that a mean over a large batch keeps its precision. */
static int reduce_floats(const fl_node *n, const fl_tensor *x, fl_tensor *out, bool mean)
{
    int64_t nx = fl_shape_size(x->shape), nout = fl_shape_size(out->shape);
    double room[STACK_ACCUMULATORS];
    double *acc = accumulators(nout, sizeof *acc, room);
    if (!acc)
        return -1;
    const float *xs = x->data;
    for (int64_t i = 0; i < nx; i++)
        acc[reduced_index(i, x->shape, n->attrs.reduce_axis)] += xs[i];
    int64_t count = reduced_count(x->shape, n->attrs.reduce_axis);
    float *o = out->data;
    for (int64_t j = 0; j < nout; j++) {
        if (!mean)
            o[j] = (float)acc[j];
        else
            o[j] = count ? (float)(acc[j] / (double)count) : NAN; /* mean of nothing */
    }
    if (acc != room)
        free(acc);
    return 0;
}

/* Integers sum in 64 bits and wrap to 32 at the end, like int32 addition;
 * an integer mean truncates toward zero, as TensorFlow's does. */
static int reduce_ints(const fl_node *n, const fl_tensor *x, fl_tensor *out, bool mean)
{
    int64_t nx = fl_shape_size(x->shape), nout = fl_shape_size(out->shape);
    int64_t room[STACK_ACCUMULATORS];
    int64_t *acc = accumulators(nout, sizeof *acc, room);
    if (!acc)
        return -1;
    const int32_t *xs = x->data;
    for (int64_t i = 0; i < nx; i++)
        acc[reduced_index(i, x->shape, n->attrs.reduce_axis)] += xs[i];
    int64_t count = reduced_count(x->shape, n->attrs.reduce_axis);
    int32_t *o = out->data;
    for (int64_t j = 0; j < nout; j++) {
        int64_t v = mean ? (count ? acc[j] / count : 0) : acc[j];
        o[j] = (int32_t)(uint32_t)(uint64_t)v;
    }
    if (acc != room)
        free(acc);
    return 0;
}

static int reduce(const fl_node *n, fl_tensor *const *in, fl_tensor *out, bool mean)
{
    if (in[0]->dtype == FL_INT32)
        return reduce_ints(n, in[0], out, mean);
    return reduce_floats(n, in[0], out, mean);
}

FL_HOST_KERNEL(fl_host_reduce_sum)
{
    (void)ctx;
    return reduce(n, in, out, false);
}

FL_HOST_KERNEL(fl_host_reduce_mean)
{
    (void)ctx;
    return reduce(n, in, out, true);
}

/* ReduceGrad(dy, x): every element of x gets the dy of the element it was
 * reduced into, divided by the count for a mean. */
FL_HOST_KERNEL(fl_host_reduce_grad)
{
    (void)ctx;
    const fl_tensor *dy = in[0], *x = in[1];
    int64_t nx = fl_shape_size(x->shape);
    int64_t count = reduced_count(x->shape, n->attrs.reduce_axis);
    float scale = n->attrs.mean && count > 0 ? 1.0f / (float)count : 1.0f;
    const float *d = dy->data;
    float *o = out->data;
    for (int64_t i = 0; i < nx; i++)
        o[i] = d[reduced_index(i, x->shape, n->attrs.reduce_axis)] * scale;
    return 0;
}
