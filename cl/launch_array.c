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

/* ---- Sum, Mean, ReduceGrad (reduce.cl) ---- */

int fl_cl_run_groups(fl_cl_call *c, cl_uint dims, const size_t *global, const size_t *local)
{
    size_t rounded[3];
    for (cl_uint i = 0; i < dims; i++) {
        if (global[i] == 0)
            return 0;
        rounded[i] = (global[i] + local[i] - 1) / local[i] * local[i];
    }
    if (c->error != CL_SUCCESS)
        return fl_cl_fail("setting a kernel's arguments", c->error);
    cl_int err = clEnqueueNDRangeKernel(c->d->queue, c->d->kernels[c->kernel], dims, NULL, rounded,
                                        local, 0, NULL, NULL);
    return err == CL_SUCCESS ? 0 : fl_cl_fail("clEnqueueNDRangeKernel", err);
}

/* Elements one work-item sums (or writes) in the rows kernels, and rows in
 * the cols kernels (times eight columns): 32 KiB of floats, enough work that
 * launching the work-item costs little beside it, small enough that a
 * tensor of a few MiB still makes hundreds of work-items for the cores to
 * share. A fixed number, not one derived from the core count, so that a sum
 * is cut into the same chunks, and comes out the same bits, everywhere. */
#define CHUNK 8192
#define CHUNK_ROWS (CHUNK / 8)

static int rows_pass(fl_cl_device *d, fl_cl_kernel_id k, const void *x, int rows, int len,
                     int chunk, int nchunks, void *out, float divisor)
{
    fl_cl_call c = fl_cl_begin(d, k);
    fl_cl_mem(&c, x);
    fl_cl_int(&c, rows);
    fl_cl_int(&c, len);
    fl_cl_int(&c, chunk);
    fl_cl_int(&c, nchunks);
    fl_cl_mem(&c, out);
    fl_cl_float(&c, divisor);
    /* Work-groups of one chunk each: a chunk is a long loop already. Short
     * rows (one chunk each) go 64 rows to a group instead. */
    size_t global[2] = {(size_t)nchunks, (size_t)rows};
    size_t local[2] = {1, nchunks > 1 ? 1 : (rows < (int)d->group ? (size_t)rows : d->group)};
    return fl_cl_run_groups(&c, 2, global, local);
}

/* out[r] = (sum of row r of x [rows, len]) / divisor: one pass when a row
 * is one chunk, else partial sums per chunk into scratch, then their sum. */
int fl_cl_sum_rows(fl_cl_device *d, const void *x, int rows, int len, float divisor, void *out)
{
    int nchunks = (len + CHUNK - 1) / CHUNK;
    if (nchunks <= 1)
        return rows_pass(d, K_REDUCE_ROWS, x, rows, len, CHUNK, 1, out, divisor);
    cl_mem partial = fl_cl_scratch(d, (size_t)rows * nchunks * sizeof(float));
    if (!partial || rows_pass(d, K_REDUCE_ROWS, x, rows, len, CHUNK, nchunks, partial, 1.0f) != 0)
        return -1;
    return rows_pass(d, K_REDUCE_ROWS, partial, rows, nchunks, nchunks, 1, out, divisor);
}

/* The cols kernels' arguments (count, inner, per_item, nparts, then the
 * kernel's own) are set by the caller; this shapes the range. */
static int cols_run(fl_cl_call *c, int outer, int inner, int nparts)
{
    /* The work-items of one part read the same rows, eight columns each:
     * one work-group (up to 64 of them) keeps those rows on one core. */
    size_t vecs = ((size_t)inner + 7) / 8;
    size_t global[3] = {vecs, (size_t)nparts, (size_t)outer};
    size_t local[3] = {vecs < c->d->group ? vecs : c->d->group, 1, 1};
    return fl_cl_run_groups(c, 3, global, local);
}

static int cols_pass(fl_cl_device *d, const void *x, int outer, int count, int inner,
                     int per_item, int nparts, void *out, float divisor)
{
    fl_cl_call c = fl_cl_begin(d, K_REDUCE_COLS);
    fl_cl_mem(&c, x);
    fl_cl_int(&c, count);
    fl_cl_int(&c, inner);
    fl_cl_int(&c, per_item);
    fl_cl_int(&c, nparts);
    fl_cl_mem(&c, out);
    fl_cl_float(&c, divisor);
    return cols_run(&c, outer, inner, nparts);
}

/* out[o, j] = (sum over r of x[o, r, j]) / divisor, x [outer, count, inner]. */
int fl_cl_sum_cols(fl_cl_device *d, const void *x, int outer, int count, int inner,
                   float divisor, void *out)
{
    int nparts = (count + CHUNK_ROWS - 1) / CHUNK_ROWS;
    if (nparts <= 1)
        return cols_pass(d, x, outer, count, inner, count, 1, out, divisor);
    cl_mem partial = fl_cl_scratch(d, (size_t)outer * nparts * inner * sizeof(float));
    if (!partial || cols_pass(d, x, outer, count, inner, CHUNK_ROWS, nparts, partial, 1.0f) != 0)
        return -1;
    return cols_pass(d, partial, outer, nparts, inner, nparts, 1, out, divisor);
}

/* A reduction as blocks: neighbouring axes that are all reduced or all kept
 * merge into one, and axes of size 1 drop out (they change no flat index).
 * The common patterns become [outer kept, count reduced, inner kept], any
 * of the three possibly 1: a whole tensor is [1, n, 1], a bias gradient [1,
 * batch, C], Sum over axis 1 of [A, B, C] is [A, B, C]. False for the
 * others (reduced, kept, reduced: axes 0 and 2 of a rank-3 tensor). */
typedef struct {
    int outer, count, inner;
} reduce_blocks;

static bool blocks_of(fl_shape x, const bool *reduce_axis, reduce_blocks *b)
{
    int size[FL_MAX_RANK], groups = 0;
    bool reduced[FL_MAX_RANK];
    for (int d = 0; d < x.rank; d++) {
        if (x.dims[d] == 1)
            continue;
        if (groups > 0 && reduced[groups - 1] == reduce_axis[d]) {
            size[groups - 1] *= x.dims[d];
        } else {
            size[groups] = x.dims[d];
            reduced[groups++] = reduce_axis[d];
        }
    }
    *b = (reduce_blocks){1, 1, 1};
    int g = 0;
    if (g < groups && !reduced[g])
        b->outer = size[g++];
    if (g < groups && reduced[g])
        b->count = size[g++];
    if (g < groups && !reduced[g])
        b->inner = size[g++];
    return g == groups;
}

/* The general kernels: any pattern, any dtype; shapes padded to rank 4. */
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
    reduce_blocks b;
    /* Empty tensors (a mean of nothing is NaN) and int32 take the general kernel. */
    if (nx > 0 && in[0]->dtype == FL_FLOAT32 && blocks_of(in[0]->shape, n->attrs.reduce_axis, &b)) {
        float divisor = mean ? (float)b.count : 1.0f;
        if (b.inner == 1)
            return fl_cl_sum_rows(d, in[0]->data, b.outer, b.count, divisor, out->data);
        return fl_cl_sum_cols(d, in[0]->data, b.outer, b.count, b.inner, divisor, out->data);
    }
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

/* ReduceGrad(dy, x): the reduction's blocks run backwards, each row or
 * column of dy copied into every element it was summed from. */
static int reduce_grad_blocks(fl_cl_device *d, const void *dy, reduce_blocks b, float scale,
                              void *out)
{
    if (b.inner == 1) {
        int nchunks = (b.count + CHUNK - 1) / CHUNK;
        fl_cl_call c = fl_cl_begin(d, K_REDUCE_GRAD_ROWS);
        fl_cl_mem(&c, dy);
        fl_cl_int(&c, b.outer);
        fl_cl_int(&c, b.count);
        fl_cl_int(&c, CHUNK);
        fl_cl_int(&c, nchunks);
        fl_cl_float(&c, scale);
        fl_cl_mem(&c, out);
        size_t global[2] = {(size_t)nchunks, (size_t)b.outer};
        size_t local[2] = {1, nchunks > 1 ? 1 : (b.outer < (int)d->group ? (size_t)b.outer : d->group)};
        return fl_cl_run_groups(&c, 2, global, local);
    }
    int nparts = (b.count + CHUNK_ROWS - 1) / CHUNK_ROWS;
    fl_cl_call c = fl_cl_begin(d, K_REDUCE_GRAD_COLS);
    fl_cl_mem(&c, dy);
    fl_cl_int(&c, b.count);
    fl_cl_int(&c, b.inner);
    fl_cl_int(&c, CHUNK_ROWS);
    fl_cl_int(&c, nparts);
    fl_cl_float(&c, scale);
    fl_cl_mem(&c, out);
    return cols_run(&c, b.outer, b.inner, nparts);
}

FL_CL_OP(fl_cl_reduce_grad)
{
    (void)ctx;
    int nx = fl_cl_count(in[1]);
    if (nx < 0)
        return -1;
    reduce_view v = view_reduced(in[1]->shape, n->attrs.reduce_axis);
    float scale = n->attrs.mean && v.count > 0 ? 1.0f / (float)v.count : 1.0f;
    reduce_blocks b;
    if (nx > 0 && blocks_of(in[1]->shape, n->attrs.reduce_axis, &b))
        return reduce_grad_blocks(d, in[0]->data, b, scale, out->data);
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
    if (fl_check_copy_size(in[0], out) != 0)
        return -1;
    return fl_cl_copy(d, in[0]->data, out->data, fl_tensor_bytes(out));
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
