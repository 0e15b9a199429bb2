/* host_array.c: reference kernels for ops that move or compare elements.
 * Concat, Slice and SliceGrad see a tensor as [outer, axis, inner]: for
 * each of the outer rows, a run of axis * inner contiguous elements, so
 * every copy is one memcpy of a row's window. float32 and int32 are both
 * four bytes, so these kernels copy either without looking at the dtype. */
#include <string.h>

#include "host_kernels.h"
#include "scalar_rules.h"

/* Identity, StopGradient and Reshape when the output is not input 0's
 * own buffer: the bytes are the same, only the shape may differ. */
FL_HOST_KERNEL(fl_host_copy_input0)
{
    (void)n;
    (void)ctx;
    if (fl_check_copy_size(in[0], out) != 0)
        return -1;
    if (out->data != in[0]->data)
        memcpy(out->data, in[0]->data, fl_tensor_bytes(out));
    return 0;
}

FL_HOST_KERNEL(fl_host_concat)
{
    (void)ctx;
    int axis = n->attrs.axis;
    fl_axis_view v = fl_view_around(out->shape, axis);
    char *dst = out->data;
    for (int64_t o = 0; o < v.outer; o++) {
        for (int i = 0; i < n->ninputs; i++) {
            size_t row = (size_t)(in[i]->shape.dims[axis] * v.inner) * fl_dtype_size(out->dtype);
            memcpy(dst, (const char *)in[i]->data + (size_t)o * row, row);
            dst += row;
        }
    }
    return 0;
}

FL_HOST_KERNEL(fl_host_slice)
{
    (void)ctx;
    fl_axis_view x = fl_view_around(in[0]->shape, n->attrs.axis);
    int64_t size = out->shape.dims[n->attrs.axis];
    int64_t begin = fl_slice_begin(&n->attrs, size);
    size_t elem = fl_dtype_size(out->dtype);
    size_t row = (size_t)(size * x.inner) * elem;
    for (int64_t o = 0; o < x.outer; o++) {
        const char *src = (const char *)in[0]->data + (size_t)((o * x.dim + begin) * x.inner) * elem;
        memcpy((char *)out->data + (size_t)o * row, src, row);
    }
    return 0;
}

/* SliceGrad(dy, x): zeros shaped like x, with dy copied into the window. */
FL_HOST_KERNEL(fl_host_slice_grad)
{
    (void)ctx;
    fl_axis_view x = fl_view_around(out->shape, n->attrs.axis);
    int64_t size = in[0]->shape.dims[n->attrs.axis];
    int64_t begin = fl_slice_begin(&n->attrs, size);
    size_t elem = fl_dtype_size(out->dtype);
    size_t row = (size_t)(size * x.inner) * elem;
    memset(out->data, 0, fl_tensor_bytes(out));
    for (int64_t o = 0; o < x.outer; o++) {
        char *dst = (char *)out->data + (size_t)((o * x.dim + begin) * x.inner) * elem;
        memcpy(dst, (const char *)in[0]->data + (size_t)o * row, row);
    }
    return 0;
}

FL_HOST_KERNEL(fl_host_cast)
{
    (void)n;
    (void)ctx;
    int64_t count = fl_shape_size(out->shape);
    if (in[0]->dtype == out->dtype) {
        memcpy(out->data, in[0]->data, fl_tensor_bytes(out));
        return 0;
    }
    if (out->dtype == FL_INT32) {
        const float *x = in[0]->data;
        int32_t *o = out->data;
        for (int64_t i = 0; i < count; i++)
            o[i] = fl_rule_float_to_int32(x[i]);
        return 0;
    }
    const int32_t *x = in[0]->data;
    float *o = out->data;
    for (int64_t i = 0; i < count; i++)
        o[i] = (float)x[i];
    return 0;
}

/* Element i as a double: exact for every float32 and int32, so one
 * comparison serves both dtypes. */
static double element(const fl_tensor *t, int64_t i)
{
    if (t->dtype == FL_INT32)
        return ((const int32_t *)t->data)[i];
    return ((const float *)t->data)[i];
}

/* Strictly greater, so the first of equal maxima wins. */
FL_HOST_KERNEL(fl_host_argmax)
{
    (void)ctx;
    fl_axis_view x = fl_view_around(in[0]->shape, n->attrs.axis);
    int32_t *o = out->data;
    for (int64_t outer = 0; outer < x.outer; outer++) {
        for (int64_t inner = 0; inner < x.inner; inner++) {
            int64_t first = outer * x.dim * x.inner + inner;
            int32_t best = 0;
            for (int64_t j = 1; j < x.dim; j++)
                if (element(in[0], first + j * x.inner) > element(in[0], first + best * x.inner))
                    best = (int32_t)j;
            o[outer * x.inner + inner] = best;
        }
    }
    return 0;
}

/* Suffix broadcasting: element i of the output meets element i % size of
 * each operand. */
FL_HOST_KERNEL(fl_host_equal)
{
    (void)n;
    (void)ctx;
    int64_t count = fl_shape_size(out->shape);
    int64_t na = fl_shape_size(in[0]->shape), nb = fl_shape_size(in[1]->shape);
    int32_t *o = out->data;
    for (int64_t i = 0; i < count; i++)
        o[i] = element(in[0], i % na) == element(in[1], i % nb);
    return 0;
}
