/* elementwise_chunks.cl: the element-wise ops of the chapter 1 model (float
 * Add/Sub/Mul/Div with broadcasting, Relu and its gradient) written for a
 * CPU device: each work-item streams a chunk of float8 vectors.
 *
 * One work-item per element (elementwise.cl) leaves PoCL a loop over tiny
 * work-items, its per-item cost paid millions of times; here a work-item
 * takes `chunk` elements (thousands on a CPU, eight on a GPU, where many
 * work-items reading neighbouring vectors is the fast pattern), and the
 * vectors say outright which instructions to use. */

/* The x op y of elementwise.cl's binary_float, eight lanes at once. */
float8 apply8(int op, float8 x, float8 y)
{
    switch (op) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    default: return x / y;
    }
}

/* Eight values of an operand of `size` elements at output index i, where j
 * = i % size is kept by the caller: the operand itself (size == count), a
 * scalar, or a row repeated along the output (size a multiple of 8, so the
 * eight lanes never wrap around it). */
float8 operand8(__global const float *p, int size, int count, int i, int j)
{
    if (size == count)
        return vload8(0, p + i);
    if (size == 1)
        return (float8)(p[0]);
    return vload8(0, p + j);
}

/* out[i] = a[i % na] op b[i % nb] for i in this work-item's chunk. The
 * smaller operand's size `inner` divides count (suffix broadcasting). When
 * it is neither 1 nor a multiple of 8 (a bias of 3 channels, say), the
 * chunk runs one element at a time. */
__kernel void binary_float_chunks(int op, __global const float *a, int na, __global const float *b,
                                  int nb, __global float *out, int count, int chunk)
{
    int begin = get_global_id(0) * chunk, end = min(begin + chunk, count);
    int inner = min(na, nb), j = begin % inner, i = begin;
    bool repeats = inner != count && inner != 1; /* only then is j read */
    if (!repeats || inner % 8 == 0) {
        for (; i + 8 <= end; i += 8) {
            vstore8(apply8(op, operand8(a, na, count, i, j), operand8(b, nb, count, i, j)), 0, out + i);
            j = repeats && j + 8 == inner ? 0 : j + 8;
        }
    }
    for (; i < end; i++) {
        float x = a[na == count ? i : na == 1 ? 0 : j], y = b[nb == count ? i : nb == 1 ? 0 : j];
        out[i] = apply8(op, (float8)(x), (float8)(y)).s0;
        j = repeats && j + 1 == inner ? 0 : j + 1;
    }
}

/* Relu: fl_rule_relu (src/scalar_rules.h), whose float8 spelling is the
 * select below: v > 0 ? v : 0 lane by lane (NaN and -0 give +0). */
__kernel void relu_chunks(__global const float *x, __global float *out, int count, int chunk)
{
    int begin = get_global_id(0) * chunk, end = min(begin + chunk, count), i = begin;
    for (; i + 8 <= end; i += 8) {
        float8 v = vload8(0, x + i);
        vstore8(select((float8)(0.0f), v, v > 0.0f), 0, out + i);
    }
    for (; i < end; i++)
        out[i] = fl_rule_relu(x[i]);
}

/* ReluGrad(dy, x): fl_rule_relu_grad, x > 0 ? dy : 0, eight lanes at a time. */
__kernel void relu_grad_chunks(__global const float *dy, __global const float *x, __global float *out,
                               int count, int chunk)
{
    int begin = get_global_id(0) * chunk, end = min(begin + chunk, count), i = begin;
    for (; i + 8 <= end; i += 8)
        vstore8(select((float8)(0.0f), vload8(0, dy + i), vload8(0, x + i) > 0.0f), 0, out + i);
    for (; i < end; i++)
        out[i] = fl_rule_relu_grad(dy[i], x[i]);
}

/* A fused op's epilogue where its product's kernel cannot apply one (a
 * CLBlast GEMM; the fallback of launch_fused_fallback.c), in place: y[i] +=
 * bias[i % columns], then Relu when relu is set, the same float operations
 * as an Add and a Relu. Chunks are multiples of 8, so with columns a
 * multiple of 8 the eight lanes never wrap around the bias. */
__kernel void bias_relu_chunks(__global float *y, __global const float *bias, int columns, int relu,
                               int count, int chunk)
{
    int begin = get_global_id(0) * chunk, end = min(begin + chunk, count), i = begin;
    int j = begin % columns;
    if (columns % 8 == 0) {
        for (; i + 8 <= end; i += 8) {
            float8 v = vload8(0, y + i) + vload8(0, bias + j);
            vstore8(relu ? select((float8)(0.0f), v, v > 0.0f) : v, 0, y + i);
            j = j + 8 == columns ? 0 : j + 8;
        }
    }
    for (; i < end; i++) {
        float v = y[i] + bias[j];
        y[i] = relu ? fl_rule_relu(v) : v;
        j = j + 1 == columns ? 0 : j + 1;
    }
}
