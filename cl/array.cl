/* array.cl: kernels that move, convert or compare elements. Concat, Slice
 * and SliceGrad all copy a window of rows (copy_window); float32 and int32
 * are both four bytes, so the copies move uints whatever the dtype. */

/* dst[o * dst_row + dst_off + j] = src[o * src_row + src_off + j]
 * for j < width (dimension 0) and o < outer (dimension 1). */
__kernel void copy_window(__global const uint *src, int src_row, int src_off,
                          __global uint *dst, int dst_row, int dst_off, int width, int outer)
{
    int j = get_global_id(0), o = get_global_id(1);
    if (j >= width || o >= outer)
        return;
    dst[(size_t)o * dst_row + dst_off + j] = src[(size_t)o * src_row + src_off + j];
}

/* The rule, with its NaN and saturation, is src/scalar_rules.h's (joined
 * ahead of these files), as on the host. */
__kernel void cast_to_int(__global const float *x, __global int *out, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = fl_rule_float_to_int32(x[i]);
}

__kernel void cast_to_float(__global const int *x, __global float *out, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = (float)x[i];
}

/* One work-item per (outer, inner); strictly greater, so the first maximum wins. */
__kernel void argmax_float(__global const float *x, int outer, int dim, int inner,
                           __global int *out)
{
    int i = get_global_id(0);
    if (i >= outer * inner)
        return;
    __global const float *p = x + (size_t)(i / inner) * dim * inner + i % inner;
    int best = 0;
    for (int j = 1; j < dim; j++)
        if (p[(size_t)j * inner] > p[(size_t)best * inner])
            best = j;
    out[i] = best;
}

__kernel void argmax_int(__global const int *x, int outer, int dim, int inner, __global int *out)
{
    int i = get_global_id(0);
    if (i >= outer * inner)
        return;
    __global const int *p = x + (size_t)(i / inner) * dim * inner + i % inner;
    int best = 0;
    for (int j = 1; j < dim; j++)
        if (p[(size_t)j * inner] > p[(size_t)best * inner])
            best = j;
    out[i] = best;
}

/* Suffix broadcasting, as in elementwise.cl. */
__kernel void equal_float(__global const float *a, int na, __global const float *b, int nb,
                          __global int *out, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = a[i % na] == b[i % nb];
}

__kernel void equal_int(__global const int *a, int na, __global const int *b, int nb,
                        __global int *out, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = a[i % na] == b[i % nb];
}
