/* launch_array.c: launchers for reductions (reduce.cl) and for ops that move,
 * convert or compare elements (array.cl): Concat, Slice and SliceGrad see a
 * tensor as [outer, axis, inner] and copy windows of its rows. */
#include "launch.h"

int fl_cl_copy(fl_cl_device *d, const void *src, void *dst, size_t bytes)
{
    if (bytes == 0 || src == dst)
        return 0;
    cl_int err = clEnqueueCopyBuffer(d->queue, (cl_mem)src, (cl_mem)dst, 0, 0, bytes, 0, NULL, NULL);
    return err == CL_SUCCESS ? 0 : fl_cl_fail("clEnqueueCopyBuffer", err);
}

int fl_cl_fill_bytes(fl_cl_device *d, void *dst, uint32_t pattern, size_t bytes)
{
    if (bytes == 0)
        return 0;
    cl_int err = clEnqueueFillBuffer(d->queue, (cl_mem)dst, &pattern, sizeof pattern, 0, bytes, 0,
                                     NULL, NULL);
    return err == CL_SUCCESS ? 0 : fl_cl_fail("clEnqueueFillBuffer", err);
}

/* ---- Sum, Mean, ReduceGrad: shapes padded to rank 4 with leading 1s ---- */

typedef struct {
    cl_int4 dims, reduce;
    int count; /* elements of x that meet in one output element */
} reduce_view;

static reduce_view view_reduced(fl_shape x, const bool *reduce_axis)
{
    reduce_view v = {.count = 1};
    int pad = FL_MAX_RANK - x.rank;
    for (int d = 0; d < 4; d++) {
        bool real = d >= pad;
        v.dims.s[d] = real ? x.dims[d - pad] : 1;
        v.reduce.s[d] = real && reduce_axis[d - pad];
        if (v.reduce.s[d])
            v.count *= v.dims.s[d];
    }
    return v;
}

static int reduce(fl_cl_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                  bool mean)
{
    int nx = fl_cl_count(in[0]), nout = fl_cl_count(out);
    if (nx < 0 || nout < 0)
        return -1;
    reduce_view v = view_reduced(in[0]->shape, n->attrs.reduce_axis);
    fl_cl_call c = fl_cl_begin(d, in[0]->dtype == FL_INT32 ? K_REDUCE_INT : K_REDUCE_FLOAT);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_value(&c, sizeof v.dims, &v.dims);
    fl_cl_value(&c, sizeof v.reduce, &v.reduce);
    fl_cl_int(&c, v.count);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, nout);
    fl_cl_int(&c, mean);
    return fl_cl_run(&c, (size_t)nout);
}

FL_CL_OP(fl_cl_reduce_sum) { (void)ctx; return reduce(d, n, in, out, false); }
FL_CL_OP(fl_cl_reduce_mean) { (void)ctx; return reduce(d, n, in, out, true); }

/* ReduceGrad(dy, x) */
FL_CL_OP(fl_cl_reduce_grad)
{
    (void)ctx;
    int nx = fl_cl_count(in[1]);
    if (nx < 0)
        return -1;
    reduce_view v = view_reduced(in[1]->shape, n->attrs.reduce_axis);
    float scale = n->attrs.mean && v.count > 0 ? 1.0f / (float)v.count : 1.0f;
    fl_cl_call c = fl_cl_begin(d, K_REDUCE_GRAD);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_value(&c, sizeof v.dims, &v.dims);
    fl_cl_value(&c, sizeof v.reduce, &v.reduce);
    fl_cl_float(&c, scale);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, nx);
    return fl_cl_run(&c, (size_t)nx);
}

/* ---- moving windows of rows ---- */

/* A window of width elements from each of outer rows. */
typedef struct {
    int src_row, src_off, dst_row, dst_off, width, outer;
} window;

static int copy_window(fl_cl_device *d, const void *src, void *dst, window w)
{
    fl_cl_call c = fl_cl_begin(d, K_COPY_WINDOW);
    fl_cl_mem(&c, src);
    fl_cl_int(&c, w.src_row);
    fl_cl_int(&c, w.src_off);
    fl_cl_mem(&c, dst);
    fl_cl_int(&c, w.dst_row);
    fl_cl_int(&c, w.dst_off);
    fl_cl_int(&c, w.width);
    fl_cl_int(&c, w.outer);
    return fl_cl_run_2d(&c, (size_t)w.width, (size_t)w.outer);
}

/* Identity, StopGradient, Reshape and Copy: the session aliases the first
 * three to their input, which leaves nothing to do. */
FL_CL_OP(fl_cl_copy_input0)
{
    (void)n;
    (void)ctx;
    size_t bytes = fl_tensor_bytes(out);
    if (fl_tensor_bytes(in[0]) != bytes) {
        char si[64], so[64];
        fl_set_error("cannot copy %s into %s", fl_shape_format(in[0]->shape, si, sizeof si),
                     fl_shape_format(out->shape, so, sizeof so));
        return -1;
    }
    return fl_cl_copy(d, in[0]->data, out->data, bytes);
}

FL_CL_OP(fl_cl_concat)
{
    (void)ctx;
    if (fl_cl_count(out) < 0)
        return -1;
    fl_axis_view v = fl_view_around(out->shape, n->attrs.axis);
    int offset = 0;
    for (int i = 0; i < n->ninputs; i++) {
        int width = in[i]->shape.dims[n->attrs.axis] * v.inner;
        window w = {width, 0, v.dim * v.inner, offset, width, v.outer};
        if (copy_window(d, in[i]->data, out->data, w) != 0)
            return -1;
        offset += width;
    }
    return 0;
}

/* Slice(x[, like]): the optional second input only gave the shape. */
FL_CL_OP(fl_cl_slice)
{
    (void)ctx;
    if (fl_cl_count(in[0]) < 0)
        return -1;
    fl_axis_view x = fl_view_around(in[0]->shape, n->attrs.axis);
    int size = out->shape.dims[n->attrs.axis];
    int begin = fl_slice_begin(&n->attrs, size);
    window w = {x.dim * x.inner, begin * x.inner, size * x.inner, 0, size * x.inner, x.outer};
    return copy_window(d, in[0]->data, out->data, w);
}

/* SliceGrad(dy, x): zeros shaped like x, with dy copied into the window. */
FL_CL_OP(fl_cl_slice_grad)
{
    (void)ctx;
    if (fl_cl_count(out) < 0)
        return -1;
    fl_axis_view x = fl_view_around(out->shape, n->attrs.axis);
    int size = in[0]->shape.dims[n->attrs.axis];
    int begin = fl_slice_begin(&n->attrs, size);
    if (fl_cl_fill_bytes(d, out->data, 0, fl_tensor_bytes(out)) != 0)
        return -1;
    window w = {size * x.inner, 0, x.dim * x.inner, begin * x.inner, size * x.inner, x.outer};
    return copy_window(d, in[0]->data, out->data, w);
}

FL_CL_OP(fl_cl_cast)
{
    (void)n;
    (void)ctx;
    int count = fl_cl_count(out);
    if (count < 0)
        return -1;
    if (in[0]->dtype == out->dtype)
        return fl_cl_copy(d, in[0]->data, out->data, fl_tensor_bytes(out));
    fl_cl_call c = fl_cl_begin(d, out->dtype == FL_INT32 ? K_CAST_TO_INT : K_CAST_TO_FLOAT);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, count);
    return fl_cl_run(&c, (size_t)count);
}

FL_CL_OP(fl_cl_argmax)
{
    (void)ctx;
    if (fl_cl_count(in[0]) < 0)
        return -1;
    fl_axis_view x = fl_view_around(in[0]->shape, n->attrs.axis);
    fl_cl_call c = fl_cl_begin(d, in[0]->dtype == FL_INT32 ? K_ARGMAX_INT : K_ARGMAX_FLOAT);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_int(&c, x.outer);
    fl_cl_int(&c, x.dim);
    fl_cl_int(&c, x.inner);
    fl_cl_mem(&c, out->data);
    return fl_cl_run(&c, (size_t)x.outer * (size_t)x.inner);
}

FL_CL_OP(fl_cl_equal)
{
    (void)n;
    (void)ctx;
    int count = fl_cl_count(out), na = fl_cl_count(in[0]), nb = fl_cl_count(in[1]);
    if (count < 0 || na < 0 || nb < 0)
        return -1;
    if (count == 0)
        return 0;
    fl_cl_call c = fl_cl_begin(d, in[0]->dtype == FL_INT32 ? K_EQUAL_INT : K_EQUAL_FLOAT);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_int(&c, na);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_int(&c, nb);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, count);
    return fl_cl_run(&c, (size_t)count);
}
