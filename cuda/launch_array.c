/* launch_array.c: CUDA launchers for reductions and for ops that move or
 * compare elements, and the device-to-device copy the other launchers
 * share. Concat, Slice and SliceGrad see a tensor as [outer, axis, inner] as
 * src/host/host_array.c does: each is one strided 2D copy
 * (cudaMemcpy2DAsync), a row of axis * inner elements per outer index, no
 * kernel of our own. */
#include <string.h>

#include "launch.h"

static int64_t count_of(const fl_tensor *t) { return fl_shape_size(t->shape); }

/* ---- reductions ---- */

static fl_cu_reduction reduction_of(const fl_node *n, fl_shape x)
{
    fl_cu_reduction r;
    memset(&r, 0, sizeof r);
    r.rank = x.rank;
    for (int d = 0; d < x.rank; d++) {
        r.dims[d] = x.dims[d];
        r.reduce[d] = n->attrs.reduce_axis[d];
    }
    return r;
}

static int reduce(fl_cuda_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out, bool mean)
{
    int64_t nout = count_of(out);
    if (nout == 0)
        return 0;
    fl_cu_reduction r = reduction_of(n, in[0]->shape);
    if (in[0]->dtype == FL_INT32)
        return fl_cuda_launched(fl_cu_reduce_i32(r, in[0]->data, out->data, nout, mean, d->stream));
    return fl_cuda_launched(fl_cu_reduce_f32(r, in[0]->data, out->data, nout, mean, d->stream));
}

FL_CUDA_OP(fl_cuda_reduce_sum)
{
    (void)ctx;
    return reduce(d, n, in, out, false);
}

FL_CUDA_OP(fl_cuda_reduce_mean)
{
    (void)ctx;
    return reduce(d, n, in, out, true);
}

/* ReduceGrad(dy, x): the scale is worked out here exactly as on the host. */
FL_CUDA_OP(fl_cuda_reduce_grad)
{
    (void)ctx;
    int64_t nx = count_of(in[1]);
    if (nx == 0)
        return 0;
    fl_cu_reduction r = reduction_of(n, in[1]->shape);
    int64_t count = 1;
    for (int a = 0; a < r.rank; a++)
        if (r.reduce[a])
            count *= r.dims[a];
    float scale = n->attrs.mean && count > 0 ? 1.0f / (float)count : 1.0f;
    return fl_cuda_launched(fl_cu_reduce_grad(r, in[0]->data, out->data, nx, scale, d->stream));
}

/* ---- copies ---- */

int fl_cuda_copy(fl_cuda_device *d, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src)
        return 0;
    return fl_cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, d->stream),
                         "cudaMemcpyAsync on the device");
}

/* Identity, StopGradient and Reshape share input 0's buffer: nothing to do.
 * Copy has its own buffer and gets the bytes. */
FL_CUDA_OP(fl_cuda_copy_input0)
{
    (void)n;
    (void)ctx;
    if (fl_check_copy_size(in[0], out) != 0)
        return -1;
    return fl_cuda_copy(d, out->data, in[0]->data, fl_tensor_bytes(out));
}

/* height rows of width bytes, from src (rows src_pitch apart) to dst (rows
 * dst_pitch apart). Pitches are limited to what the device allows (2 GiB on
 * current GPUs), far beyond the tensors here. */
static int copy_rows(fl_cuda_device *d, char *dst, size_t dst_pitch, const char *src,
                     size_t src_pitch, size_t width, int64_t height)
{
    if (width == 0 || height == 0)
        return 0;
    if (height == 1 || (width == dst_pitch && width == src_pitch)) /* one contiguous run */
        return fl_cuda_check(cudaMemcpyAsync(dst, src, width * (size_t)height, cudaMemcpyDeviceToDevice,
                                             d->stream), "cudaMemcpyAsync on the device");
    return fl_cuda_check(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, (size_t)height,
                                           cudaMemcpyDeviceToDevice, d->stream),
                         "cudaMemcpy2DAsync");
}

/* Each input fills its band of every output row. */
FL_CUDA_OP(fl_cuda_concat)
{
    (void)ctx;
    int axis = n->attrs.axis;
    fl_axis_view v = fl_view_around(out->shape, axis);
    size_t elem = fl_dtype_size(out->dtype);
    size_t out_row = (size_t)(v.dim * v.inner) * elem, offset = 0;
    for (int i = 0; i < n->ninputs; i++) {
        size_t row = (size_t)(in[i]->shape.dims[axis] * v.inner) * elem;
        if (copy_rows(d, (char *)out->data + offset, out_row, in[i]->data, row, row, v.outer) != 0)
            return -1;
        offset += row;
    }
    return 0;
}

FL_CUDA_OP(fl_cuda_slice)
{
    (void)ctx;
    fl_axis_view x = fl_view_around(in[0]->shape, n->attrs.axis);
    int64_t size = out->shape.dims[n->attrs.axis];
    int64_t begin = fl_slice_begin(&n->attrs, size);
    size_t elem = fl_dtype_size(out->dtype);
    size_t row = (size_t)(size * x.inner) * elem, x_row = (size_t)(x.dim * x.inner) * elem;
    const char *src = (const char *)in[0]->data + (size_t)(begin * x.inner) * elem;
    return copy_rows(d, out->data, row, src, x_row, row, x.outer);
}

/* SliceGrad(dy, x): zeros shaped like x, with dy copied into the window. */
FL_CUDA_OP(fl_cuda_slice_grad)
{
    (void)ctx;
    size_t bytes = fl_tensor_bytes(out);
    if (bytes == 0)
        return 0;
    fl_axis_view x = fl_view_around(out->shape, n->attrs.axis);
    int64_t size = in[0]->shape.dims[n->attrs.axis];
    int64_t begin = fl_slice_begin(&n->attrs, size);
    size_t elem = fl_dtype_size(out->dtype);
    size_t row = (size_t)(size * x.inner) * elem, x_row = (size_t)(x.dim * x.inner) * elem;
    if (fl_cuda_check(cudaMemsetAsync(out->data, 0, bytes, d->stream), "cudaMemsetAsync") != 0)
        return -1;
    char *dst = (char *)out->data + (size_t)(begin * x.inner) * elem;
    return copy_rows(d, dst, x_row, in[0]->data, row, row, x.outer);
}

/* ---- converting and comparing ---- */

FL_CUDA_OP(fl_cuda_cast)
{
    (void)n;
    (void)ctx;
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    if (in[0]->dtype == out->dtype)
        return fl_cuda_check(cudaMemcpyAsync(out->data, in[0]->data, fl_tensor_bytes(out),
                                             cudaMemcpyDeviceToDevice, d->stream), "cudaMemcpyAsync");
    if (out->dtype == FL_INT32)
        return fl_cuda_launched(fl_cu_cast_f32_i32(in[0]->data, out->data, count, d->stream));
    return fl_cuda_launched(fl_cu_cast_i32_f32(in[0]->data, out->data, count, d->stream));
}

FL_CUDA_OP(fl_cuda_argmax)
{
    (void)ctx;
    fl_axis_view x = fl_view_around(in[0]->shape, n->attrs.axis);
    if (x.outer * x.inner == 0)
        return 0;
    if (x.dim == 0) { /* TensorFlow rejects this in shape inference; never read past the end */
        fl_set_error("ArgMax over an empty axis");
        return -1;
    }
    return fl_cuda_launched(fl_cu_argmax(in[0]->data, in[0]->dtype == FL_INT32, x.outer, x.dim,
                                         x.inner, out->data, d->stream));
}

FL_CUDA_OP(fl_cuda_equal)
{
    (void)n;
    (void)ctx;
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_equal(in[0]->data, in[0]->dtype == FL_INT32, count_of(in[0]),
                                        in[1]->data, in[1]->dtype == FL_INT32, count_of(in[1]),
                                        out->data, count, d->stream));
}
