/* host_math.c: reference kernels for matmul and element-wise arithmetic.
 * Broadcasting is by suffix, so element i of the larger operand meets
 * element i % size of the smaller one: no index arithmetic per axis. */
#include <string.h>

#include "host_kernels.h"

/* C[M,N] = op(A) op(B), where op transposes when asked. The i-k-j loop order
 * streams rows of B and C, the cache-friendly order for row-major data. */
FL_HOST_KERNEL(fl_host_matmul)
{
    (void)ctx;
    bool ta = n->attrs.transpose_a, tb = n->attrs.transpose_b;
    const float *a = in[0]->data, *b = in[1]->data;
    float *c = out->data;
    int M = out->shape.dims[0], N = out->shape.dims[1];
    int K = ta ? in[0]->shape.dims[0] : in[0]->shape.dims[1];
    memset(c, 0, (size_t)M * (size_t)N * sizeof *c);
    for (int i = 0; i < M; i++) {
        float *c_row = c + (size_t)i * N;
        for (int k = 0; k < K; k++) {
            float a_ik = ta ? a[(size_t)k * M + i] : a[(size_t)i * K + k];
            if (tb) {
                for (int j = 0; j < N; j++)
                    c_row[j] += a_ik * b[(size_t)j * K + k];
            } else {
                const float *b_row = b + (size_t)k * N;
                for (int j = 0; j < N; j++)
                    c_row[j] += a_ik * b_row[j];
            }
        }
    }
    return 0;
}

typedef enum { ADD, SUB, MUL, DIV } arith;

static float apply_float(arith op, float x, float y)
{
    switch (op) {
    case ADD: return x + y;
    case SUB: return x - y;
    case MUL: return x * y;
    default: return x / y;
    }
}

static int apply_int(arith op, int32_t x, int32_t y, int32_t *result)
{
    switch (op) {
    case ADD: *result = (int32_t)((uint32_t)x + (uint32_t)y); return 0;
    case SUB: *result = (int32_t)((uint32_t)x - (uint32_t)y); return 0;
    case MUL: *result = (int32_t)((uint32_t)x * (uint32_t)y); return 0;
    default:
        if (y == 0 || (x == INT32_MIN && y == -1))
            return -1;
        *result = x / y;
        return 0;
    }
}

static int elementwise(arith op, fl_tensor *const *in, fl_tensor *out)
{
    int64_t count = fl_shape_size(out->shape);
    int64_t na = fl_shape_size(in[0]->shape), nb = fl_shape_size(in[1]->shape);
    if (out->dtype == FL_FLOAT32) {
        const float *a = in[0]->data, *b = in[1]->data;
        float *o = out->data;
        for (int64_t i = 0; i < count; i++)
            o[i] = apply_float(op, a[i % na], b[i % nb]);
        return 0;
    }
    const int32_t *a = in[0]->data, *b = in[1]->data;
    int32_t *o = out->data;
    for (int64_t i = 0; i < count; i++)
        if (apply_int(op, a[i % na], b[i % nb], &o[i]) != 0) {
            fl_set_error("integer division by zero at element %lld", (long long)i);
            return -1;
        }
    return 0;
}

FL_HOST_KERNEL(fl_host_add) { (void)n; (void)ctx; return elementwise(ADD, in, out); }
FL_HOST_KERNEL(fl_host_sub) { (void)n; (void)ctx; return elementwise(SUB, in, out); }
FL_HOST_KERNEL(fl_host_mul) { (void)n; (void)ctx; return elementwise(MUL, in, out); }
FL_HOST_KERNEL(fl_host_div) { (void)n; (void)ctx; return elementwise(DIV, in, out); }

FL_HOST_KERNEL(fl_host_neg)
{
    (void)n;
    (void)ctx;
    int64_t count = fl_shape_size(out->shape);
    if (out->dtype == FL_INT32) {
        const int32_t *x = in[0]->data;
        int32_t *o = out->data;
        for (int64_t i = 0; i < count; i++)
            o[i] = (int32_t)(0u - (uint32_t)x[i]);
        return 0;
    }
    const float *x = in[0]->data;
    float *o = out->data;
    for (int64_t i = 0; i < count; i++)
        o[i] = -x[i];
    return 0;
}

FL_HOST_KERNEL(fl_host_add_n)
{
    (void)ctx;
    int64_t count = fl_shape_size(out->shape);
    memcpy(out->data, in[0]->data, fl_tensor_bytes(out));
    for (int k = 1; k < n->ninputs; k++) {
        if (out->dtype == FL_INT32) {
            int32_t *o = out->data;
            const int32_t *x = in[k]->data;
            for (int64_t i = 0; i < count; i++)
                o[i] = (int32_t)((uint32_t)o[i] + (uint32_t)x[i]);
        } else {
            float *o = out->data;
            const float *x = in[k]->data;
            for (int64_t i = 0; i < count; i++)
                o[i] += x[i];
        }
    }
    return 0;
}

/* out[j] = sum of x[i] over every i with i % size(out) == j. */
FL_HOST_KERNEL(fl_host_sum_to_shape)
{
    (void)n;
    (void)ctx;
    int64_t count = fl_shape_size(in[0]->shape), size = fl_shape_size(out->shape);
    const float *x = in[0]->data;
    float *o = out->data;
    memset(o, 0, (size_t)size * sizeof *o);
    for (int64_t i = 0; i < count; i++)
        o[i % size] += x[i];
    return 0;
}

/* d(a / b)/db = -a / b^2, times dy; shaped like dy (the broadcast shape). */
FL_HOST_KERNEL(fl_host_div_grad_b)
{
    (void)n;
    (void)ctx;
    int64_t count = fl_shape_size(out->shape);
    int64_t na = fl_shape_size(in[1]->shape), nb = fl_shape_size(in[2]->shape);
    const float *dy = in[0]->data, *a = in[1]->data, *b = in[2]->data;
    float *o = out->data;
    for (int64_t i = 0; i < count; i++) {
        float bi = b[i % nb];
        o[i] = -dy[i] * a[i % na] / (bi * bi);
    }
    return 0;
}
