/* reduce.cl: Sum and Mean over any set of axes, and ReduceGrad. Shapes come
 * padded to rank 4 with leading 1s (which change no flat index); one
 * work-item owns one element of the reduced tensor and walks its inputs in
 * increasing flat order, as the host does. */

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
    for (int r = 0; r < count; r++) {
        float term = x[gather_index(j, r, dims, reduce)] - carry;
        float next = sum + term;
        carry = (next - sum) - term;
        sum = next;
    }
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
