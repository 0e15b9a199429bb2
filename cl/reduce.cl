/* reduce.cl: Sum and Mean over any set of axes, and ReduceGrad.
 *
 * The launcher (cl/launch_array.c) first merges neighbouring axes that are
 * all reduced or all kept, and drops axes of size 1 (they change no flat
 * index). Almost every reduction a model makes then has one of two shapes:
 *
 *   rows  [outer, count]          sum each contiguous row of count elements:
 *                                 Sum/Mean of a whole tensor (outer = 1), a
 *                                 sum over the last axes;
 *   cols  [outer, count, inner]   sum count rows of inner elements, as a
 *                                 bias gradient sums over the batch (outer =
 *                                 1) or a sum over a middle axis does.
 *
 * Each shape has a kernel that reads memory in order, eight floats (one
 * 256-bit AVX register) at a time. When one output needs many inputs, one
 * work-item per output would leave all but one core idle (a whole-tensor
 * Sum would be a single work-item), so the inputs are cut into chunks of a
 * fixed size: pass 1 gives each chunk a work-item that writes a partial
 * sum, and pass 2, the same kernel, sums the partial sums. The chunks
 * depend only on the shape, never on the number of cores or on timing, so a
 * sum is the same bits from run to run.
 *
 * Floats are summed with Kahan's compensation, one compensation per lane:
 * the host sums in double, and a plain float sum of a million terms would
 * drift from it by more than the tests allow.
 *
 * reduce_float / reduce_int / reduce_grad below are the general versions,
 * for the rare patterns that are neither rows nor cols (reduce axes 0 and 2
 * of a rank-3 tensor, say) and for int32: one work-item per output element,
 * walking its inputs in increasing flat order as the host does. */

/* One step of Kahan summation: c carries what the last addition lost. It
 * works unchanged on float and float8, lane by lane. */
#define KAHAN(s, c, v)                 \
    {                                  \
        __typeof__(s) y_ = (v) - (c);  \
        __typeof__(s) t_ = (s) + y_;   \
        (c) = (t_ - (s)) - y_;         \
        (s) = t_;                      \
    }

/* rows: work-item (k, row) sums elements [k * chunk, (k + 1) * chunk) of
 * row `row` (a row of len elements) into out[row * nchunks + k], divided by
 * divisor (1 for a sum, the count on a mean's last pass). Two independent
 * float8 accumulators per work-item: each Kahan step is four dependent
 * additions, and two chains in flight keep the adder busy while one waits.
 * The lanes are combined in a fixed order, then the last (len % 16)
 * elements are added one by one. */
__kernel void reduce_rows(__global const float *x, int rows, int len, int chunk, int nchunks,
                          __global float *out, float divisor)
{
    int k = get_global_id(0), row = get_global_id(1);
    if (k >= nchunks || row >= rows)
        return;
    __global const float *p = x + (size_t)row * len;
    int i = k * chunk, end = min(len, i + chunk);
    float8 s0 = 0.0f, c0 = 0.0f, s1 = 0.0f, c1 = 0.0f;
    for (; i + 16 <= end; i += 16) {
        KAHAN(s0, c0, vload8(0, p + i));
        KAHAN(s1, c1, vload8(0, p + i + 8));
    }
    float lanes[16], s = 0.0f, c = 0.0f;
    vstore8(s0, 0, lanes);
    vstore8(s1, 0, lanes + 8);
    for (int l = 0; l < 16; l++)
        KAHAN(s, c, lanes[l]);
    for (; i < end; i++)
        KAHAN(s, c, p[i]);
    out[(size_t)row * nchunks + k] = s / divisor;
}

/* cols: x is [outer, count, inner]; work-item (v, part, o) sums columns
 * j = 8v .. 8v + 7 of rows [part * per_item, (part + 1) * per_item) of
 * block o into out[o, part, j .. j + 7] (out is [outer, nparts, inner]).
 * Each step loads eight neighbouring columns of one row with one vload8
 * and adds them to eight lanes: no lane combining, no index arithmetic
 * beyond one pointer step. Four rows at a time go to four independent
 * accumulators, combined at the end in a fixed order: one Kahan chain is
 * four dependent additions a row, and a single chain made a bias gradient
 * wait on the adder, not on memory (chapter 5: conv_1's bias gradient
 * went from 0.75 to 0.37 ms). The launcher groups the
 * work-items of one part so that the rows they share are read into cache
 * once. Columns past the last multiple of 8 are summed one at a time by the
 * last work-item. */
__kernel void reduce_cols(__global const float *x, int count, int inner, int per_item, int nparts,
                          __global float *out, float divisor)
{
    int j = get_global_id(0) * 8, part = get_global_id(1), o = get_global_id(2);
    if (j >= inner || part >= nparts)
        return;
    int r = part * per_item, end = min(count, r + per_item);
    __global const float *p = x + ((size_t)o * count + r) * inner + j;
    __global float *q = out + ((size_t)o * nparts + part) * inner + j;
    if (j + 8 <= inner) {
        float8 s = 0.0f, c = 0.0f, s1 = 0.0f, c1 = 0.0f, s2 = 0.0f, c2 = 0.0f, s3 = 0.0f, c3 = 0.0f;
        for (; r + 4 <= end; r += 4, p += 4 * (size_t)inner) {
            KAHAN(s, c, vload8(0, p));
            KAHAN(s1, c1, vload8(0, p + inner));
            KAHAN(s2, c2, vload8(0, p + 2 * (size_t)inner));
            KAHAN(s3, c3, vload8(0, p + 3 * (size_t)inner));
        }
        for (; r < end; r++, p += inner)
            KAHAN(s, c, vload8(0, p));
        /* each chain's sum is its s less what its c says was lost */
        KAHAN(s, c, s1);
        KAHAN(s, c, -c1);
        KAHAN(s, c, s2);
        KAHAN(s, c, -c2);
        KAHAN(s, c, s3);
        KAHAN(s, c, -c3);
        vstore8(s / divisor, 0, q);
        return;
    }
    for (int l = 0; l < inner - j; l++) {
        float s = 0.0f, c = 0.0f;
        __global const float *pl = p + l;
        for (int rr = r; rr < end; rr++, pl += inner)
            KAHAN(s, c, *pl);
        q[l] = s / divisor;
    }
}

/* ReduceGrad, rows: every element of row `row` of out (len elements) gets
 * dy[row] * scale; work-item (k, row) writes one chunk of it, eight
 * elements per store. A whole-tensor Mean's gradient is one row. */
__kernel void reduce_grad_rows(__global const float *dy, int rows, int len, int chunk,
                               int nchunks, float scale, __global float *out)
{
    int k = get_global_id(0), row = get_global_id(1);
    if (k >= nchunks || row >= rows)
        return;
    float value = dy[row] * scale;
    float8 v8 = value;
    __global float *q = out + (size_t)row * len;
    int i = k * chunk, end = min(len, i + chunk);
    for (; i + 8 <= end; i += 8)
        vstore8(v8, 0, q + i);
    for (; i < end; i++)
        q[i] = value;
}

/* ReduceGrad, cols: out is [outer, count, inner] and gets dy[o, j] * scale
 * in every row of block o: work-item (v, part, o) loads columns 8v .. 8v+7
 * of dy once and stores them into its rows. No division or modulo per
 * element, which the general kernel pays four of. */
__kernel void reduce_grad_cols(__global const float *dy, int count, int inner, int per_item,
                               int nparts, float scale, __global float *out)
{
    int j = get_global_id(0) * 8, part = get_global_id(1), o = get_global_id(2);
    if (j >= inner || part >= nparts)
        return;
    int r = part * per_item, end = min(count, r + per_item);
    __global const float *d = dy + (size_t)o * inner + j;
    __global float *q = out + ((size_t)o * count + r) * inner + j;
    if (j + 8 <= inner) {
        float8 v = vload8(0, d) * scale;
        for (; r < end; r++, q += inner)
            vstore8(v, 0, q);
        return;
    }
    for (; r < end; r++, q += inner)
        for (int l = 0; l < inner - j; l++)
            q[l] = d[l] * scale;
}

/* ---- the general versions ---- */

/* Flat index in x of kept coordinates `kept` (an output element) combined
 * with reduced coordinates `r` (one of the elements reduced into it). */
int gather_index(int j, int r, const int *dims, const int *reduce)
{
    int coord[4];
    for (int d = 3; d >= 0; d--) {
        if (reduce[d]) {
            coord[d] = r % dims[d];
            r /= dims[d];
        } else {
            coord[d] = j % dims[d];
            j /= dims[d];
        }
    }
    return ((coord[0] * dims[1] + coord[1]) * dims[2] + coord[2]) * dims[3] + coord[3];
}

void unpack(int4 v, int *out)
{
    out[0] = v.s0;
    out[1] = v.s1;
    out[2] = v.s2;
    out[3] = v.s3;
}

/* count: how many elements of x meet in one output element. */
__kernel void reduce_float(__global const float *x, int4 dims4, int4 reduce4, int count,
                           __global float *out, int nout, int mean)
{
    int j = get_global_id(0);
    if (j >= nout)
        return;
    int dims[4], reduce[4];
    unpack(dims4, dims);
    unpack(reduce4, reduce);
    float sum = 0.0f, carry = 0.0f; /* Kahan: the host sums in double */
    for (int r = 0; r < count; r++)
        KAHAN(sum, carry, x[gather_index(j, r, dims, reduce)]);
    if (!mean)
        out[j] = sum;
    else
        out[j] = count ? sum / (float)count : NAN;
}

/* Integers sum in 64 bits and wrap to 32 at the end; a mean truncates. */
__kernel void reduce_int(__global const int *x, int4 dims4, int4 reduce4, int count,
                         __global int *out, int nout, int mean)
{
    int j = get_global_id(0);
    if (j >= nout)
        return;
    int dims[4], reduce[4];
    unpack(dims4, dims);
    unpack(reduce4, reduce);
    long sum = 0;
    for (int r = 0; r < count; r++)
        sum += x[gather_index(j, r, dims, reduce)];
    if (mean)
        sum = count ? sum / count : 0;
    out[j] = (int)(uint)(ulong)sum;
}

/* Where element i of x was reduced to. */
int scatter_index(int i, const int *dims, const int *reduce)
{
    int index = 0, stride = 1;
    for (int d = 3; d >= 0; d--) {
        int c = i % dims[d];
        i /= dims[d];
        if (!reduce[d]) {
            index += c * stride;
            stride *= dims[d];
        }
    }
    return index;
}

/* ReduceGrad(dy, x): each element of x gets its output's dy, times scale. */
__kernel void reduce_grad(__global const float *dy, int4 dims4, int4 reduce4, float scale,
                          __global float *out, int n)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    int dims[4], reduce[4];
    unpack(dims4, dims);
    unpack(reduce4, reduce);
    out[i] = dy[scatter_index(i, dims, reduce)] * scale;
}
