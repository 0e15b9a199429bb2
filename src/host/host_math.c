/* host_math.c: reference kernels for matmul and element-wise arithmetic.
 * Broadcasting is by suffix, so element i of the larger operand meets
 * element i % size of the smaller one: no index arithmetic per axis. */
#include <string.h>

#include "host_kernels.h"
#include "scalar_rules.h"

/* C[M,N] = op(A) op(B), where op transposes when asked. The i-k-j loop order
 * streams rows of B and C, the cache-friendly order for row-major data. */
FL_HOST_KERNEL(fl_host_matmul)
{
    (void)ctx;
    fl_matmul_dims dims = fl_matmul_dims_of(n, in[0]->shape, out->shape);
    bool ta = dims.transpose_a, tb = dims.transpose_b;
    int M = dims.m, N = dims.n, K = dims.k;
    const float *a = in[0]->data, *b = in[1]->data;
    float *c = out->data;
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

static int apply_int(arith op, int32_t x, int32_t y, int32_t *result)
{
    switch (op) {
    case ADD: *result = fl_rule_int32_add(x, y); return 0;
    case SUB: *result = fl_rule_int32_sub(x, y); return 0;
    case MUL: *result = fl_rule_int32_mul(x, y); return 0;
    default:
        if (fl_rule_int32_div_fails(x, y))
            return -1;
        *result = x / y;
        return 0;
    }
}

/* o[j] = x[j] op y[j] for j < n: plain stride-1 loops, one per operator,
 * which the compiler turns into vector instructions. */
static void arith_float(arith op, const float *x, const float *y, float *o, int64_t n)
{
    switch (op) {
    case ADD: for (int64_t j = 0; j < n; j++) o[j] = x[j] + y[j]; return;
    case SUB: for (int64_t j = 0; j < n; j++) o[j] = x[j] - y[j]; return;
    case MUL: for (int64_t j = 0; j < n; j++) o[j] = x[j] * y[j]; return;
    default: for (int64_t j = 0; j < n; j++) o[j] = x[j] / y[j]; return;
    }
}

/* A float op whose smaller operand (size `inner`) repeats along the larger.
 * Blocks of `inner` elements would make a short inner loop for a bias
 * (inner = C) and a one-element one for a scalar (the towers' gradient
 * mean divides millions of elements by N). So a small operand is first
 * repeated into `tiled`, a multiple of inner elements long (`period`):
 * element i then meets tiled[i % period], one division per block. */
enum { TILE_FLOATS = 1024 };

typedef struct {
    arith op;
    const float *a, *b; /* a NULL small: no broadcasting */
    const float *small, *large;
    bool a_small;
    int64_t period;
    float *o;
} float_args;

static void float_range(void *p, int64_t begin, int64_t end)
{
    const float_args *f = p;
    if (!f->small) {
        arith_float(f->op, f->a + begin, f->b + begin, f->o + begin, end - begin);
        return;
    }
    for (int64_t i = begin; i < end;) {
        int64_t offset = i % f->period, n = f->period - offset < end - i ? f->period - offset : end - i;
        const float *small = f->small + offset, *large = f->large + i;
        arith_float(f->op, f->a_small ? small : large, f->a_small ? large : small, f->o + i, n);
        i += n;
    }
}

static void float_elementwise(arith op, const float *a, int64_t na, const float *b, int64_t nb, float *o,
                              int64_t count)
{
    float_args f = {.op = op, .a = a, .b = b, .o = o};
    float tiled[TILE_FLOATS];
    if (na < count || nb < count) {
        f.a_small = na < count;
        f.small = f.a_small ? a : b;
        f.large = f.a_small ? b : a;
        f.period = f.a_small ? na : nb;
        if (f.period < TILE_FLOATS / 2) {
            int64_t inner = f.period;
            f.period = TILE_FLOATS / inner * inner;
            for (int64_t j = 0; j < f.period; j++)
                tiled[j] = f.small[j % inner];
            f.small = tiled;
        }
    }
    fl_parallel_for(count, float_range, &f);
}

/* Integer ops are rare (step counters, labels): one element at a time. */
static int broadcast_int(arith op, const int32_t *a, int64_t na, const int32_t *b, int64_t nb, int32_t *o,
                         int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        if (apply_int(op, a[i % na], b[i % nb], &o[i]) != 0) {
            fl_set_error_code(FL_INVALID_ARGUMENT, "integer division by zero at element %lld", (long long)i);
            return -1;
        }
    return 0;
}

static int elementwise(arith op, fl_tensor *const *in, fl_tensor *out)
{
    int64_t count = fl_shape_size(out->shape);
    int64_t na = fl_shape_size(in[0]->shape), nb = fl_shape_size(in[1]->shape);
    if (count == 0)
        return 0;
    if (out->dtype == FL_INT32)
        return broadcast_int(op, in[0]->data, na, in[1]->data, nb, out->data, count);
    float_elementwise(op, in[0]->data, na, in[1]->data, nb, out->data, count);
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
            o[i] = fl_rule_int32_neg(x[i]);
        return 0;
    }
    const float *x = in[0]->data;
    float *o = out->data;
    for (int64_t i = 0; i < count; i++)
        o[i] = -x[i];
    return 0;
}

typedef struct {
    const fl_node *n;
    fl_tensor *const *in;
    fl_tensor *out;
} add_n_args;

/* The inputs are added in order, element by element, whatever the range. */
static void add_n_range(void *p, int64_t begin, int64_t end)
{
    const add_n_args *s = p;
    size_t width = fl_dtype_size(s->out->dtype);
    memcpy((char *)s->out->data + begin * width, (const char *)s->in[0]->data + begin * width,
           (size_t)(end - begin) * width);
    for (int k = 1; k < s->n->ninputs; k++) {
        if (s->out->dtype == FL_INT32) {
            int32_t *o = s->out->data;
            const int32_t *x = s->in[k]->data;
            for (int64_t i = begin; i < end; i++)
                o[i] = fl_rule_int32_add(o[i], x[i]);
        } else {
            float *o = s->out->data;
            const float *x = s->in[k]->data;
            for (int64_t i = begin; i < end; i++)
                o[i] += x[i];
        }
    }
}

FL_HOST_KERNEL(fl_host_add_n)
{
    (void)ctx;
    add_n_args args = {n, in, out};
    fl_parallel_for(fl_shape_size(out->shape), add_n_range, &args);
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
    if (size == 0)
        return 0;
    for (int64_t base = 0; base < count; base += size) /* same order as i % size, no division */
        for (int64_t j = 0; j < size; j++)
            o[j] += x[base + j];
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
    for (int64_t i = 0; i < count; i++)
        o[i] = fl_rule_div_grad_b(dy[i], a[i % na], b[i % nb]);
    return 0;
}
