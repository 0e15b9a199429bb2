/* host_fused.c: the host's kernels for the session's fused ops
 * (session_fusion.c), as the second half of each: backend_host.c first
 * runs the product's own kernel (fl_host_product_of: CBLAS or the plain
 * loops) into the output, then these add the bias and apply ReLU (or mask
 * the pooling gradient) in place. The result is bit for bit the unfused
 * ops': the same float operations in the same order, one trip through
 * memory fewer. */
#include "host_kernels.h"
#include "scalar_rules.h"

fl_op_kind fl_host_product_of(fl_op_kind op)
{
    switch (op) {
    case FL_OP_FUSED_CONV2D: return FL_OP_CONV2D;
    case FL_OP_FUSED_MATMUL: return FL_OP_MATMUL;
    case FL_OP_MAX_POOL_RELU_GRAD: return FL_OP_MAX_POOL_GRAD;
    default: return op;
    }
}

typedef struct {
    float *y;
    const float *bias;
    int64_t columns;
    bool relu;
} bias_relu_args;

static void bias_relu_rows(void *args, int64_t begin, int64_t end)
{
    const bias_relu_args *a = args;
    for (int64_t r = begin; r < end; r++) {
        float *row = a->y + r * a->columns;
        for (int64_t j = 0; j < a->columns; j++) {
            float v = row[j] + a->bias[j];
            row[j] = a->relu ? fl_rule_relu(v) : v;
        }
    }
}

/* FusedConv2D(x, filter, bias) and FusedMatMul(a, b, bias), after the
 * product: y[r, j] = max(0, y[r, j] + bias[j]) (no max when relu is off). */
FL_HOST_KERNEL(fl_host_bias_relu)
{
    (void)ctx;
    int64_t count = fl_shape_size(out->shape), columns = fl_shape_size(in[2]->shape);
    if (columns <= 0 || count == 0)
        return 0;
    bias_relu_args a = {out->data, in[2]->data, columns, n->attrs.fused_relu};
    fl_parallel_for(count / columns, bias_relu_rows, &a);
    return 0;
}

/* MaxPoolReluGrad(dy, x, y), after MaxPoolGrad: dx zero where x <= 0. */
FL_HOST_KERNEL(fl_host_relu_mask)
{
    (void)n;
    (void)ctx;
    int64_t count = fl_shape_size(out->shape);
    const float *x = in[1]->data;
    float *dx = out->data;
    for (int64_t i = 0; i < count; i++)
        dx[i] = fl_rule_relu_grad(dx[i], x[i]);
    return 0;
}
