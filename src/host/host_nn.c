/* host_nn.c: reference kernels for activations, softmax and the loss.
 * Softmax subtracts the row's maximum first so exp() never overflows. */
#include <math.h>
#include <string.h>

#include "host_kernels.h"
#include "scalar_rules.h"

typedef float (*unary_fn)(float);
typedef float (*binary_fn)(float, float);

static int map_unary(unary_fn fn, fl_tensor *const *in, fl_tensor *out)
{
    int64_t count = fl_shape_size(out->shape);
    const float *x = in[0]->data;
    float *o = out->data;
    for (int64_t i = 0; i < count; i++)
        o[i] = fn(x[i]);
    return 0;
}

/* A gradient's inputs are (dy, x) for Relu and Softplus, (dy, y) for Sigmoid and Tanh. */
static int map_binary(binary_fn fn, fl_tensor *const *in, fl_tensor *out)
{
    int64_t count = fl_shape_size(out->shape);
    const float *dy = in[0]->data, *v = in[1]->data;
    float *o = out->data;
    for (int64_t i = 0; i < count; i++)
        o[i] = fn(dy[i], v[i]);
    return 0;
}

/* The rules themselves are src/scalar_rules.h's, shared with the devices. */
FL_HOST_KERNEL(fl_host_relu) { (void)n; (void)ctx; return map_unary(fl_rule_relu, in, out); }
FL_HOST_KERNEL(fl_host_sigmoid) { (void)n; (void)ctx; return map_unary(fl_rule_sigmoid, in, out); }
FL_HOST_KERNEL(fl_host_tanh) { (void)n; (void)ctx; return map_unary(fl_rule_tanh, in, out); }
FL_HOST_KERNEL(fl_host_softplus) { (void)n; (void)ctx; return map_unary(fl_rule_softplus, in, out); }
FL_HOST_KERNEL(fl_host_relu_grad) { (void)n; (void)ctx; return map_binary(fl_rule_relu_grad, in, out); }
FL_HOST_KERNEL(fl_host_sigmoid_grad) { (void)n; (void)ctx; return map_binary(fl_rule_sigmoid_grad, in, out); }
FL_HOST_KERNEL(fl_host_tanh_grad) { (void)n; (void)ctx; return map_binary(fl_rule_tanh_grad, in, out); }
FL_HOST_KERNEL(fl_host_softplus_grad) { (void)n; (void)ctx; return map_binary(fl_rule_softplus_grad, in, out); }

static int last_axis(const fl_tensor *t) { return t->shape.rank ? t->shape.dims[t->shape.rank - 1] : 1; }

static void softmax_row(const float *x, float *y, int classes)
{
    float max = x[0];
    for (int j = 1; j < classes; j++)
        max = x[j] > max ? x[j] : max;
    float sum = 0.0f;
    for (int j = 0; j < classes; j++) {
        y[j] = expf(x[j] - max);
        sum += y[j];
    }
    for (int j = 0; j < classes; j++)
        y[j] /= sum;
}

FL_HOST_KERNEL(fl_host_softmax)
{
    (void)n;
    (void)ctx;
    int classes = last_axis(out);
    int64_t rows = classes ? fl_shape_size(out->shape) / classes : 0;
    for (int64_t r = 0; r < rows; r++)
        softmax_row((const float *)in[0]->data + r * classes, (float *)out->data + r * classes, classes);
    return 0;
}

/* Inputs (dy, y): dx = y * (dy - sum_j dy_j y_j), row by row. */
FL_HOST_KERNEL(fl_host_softmax_grad)
{
    (void)n;
    (void)ctx;
    int classes = last_axis(out);
    int64_t rows = classes ? fl_shape_size(out->shape) / classes : 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *dy = (const float *)in[0]->data + r * classes;
        const float *y = (const float *)in[1]->data + r * classes;
        float *o = (float *)out->data + r * classes;
        float dot = 0.0f;
        for (int j = 0; j < classes; j++)
            dot += dy[j] * y[j];
        for (int j = 0; j < classes; j++)
            o[j] = y[j] * (dy[j] - dot);
    }
    return 0;
}

static int check_label(int32_t label, int classes, int64_t row)
{
    if (label >= 0 && label < classes)
        return 0;
    fl_set_error_code(FL_INVALID_ARGUMENT, "label %d in row %lld is outside [0, %d)", label, (long long)row, classes);
    return -1;
}

/* Inputs (labels [N], logits [N,C]): loss_i = logsumexp(logits_i) - logits_i[label_i]. */
FL_HOST_KERNEL(fl_host_sparse_xent)
{
    (void)n;
    (void)ctx;
    const int32_t *labels = in[0]->data;
    const float *logits = in[1]->data;
    float *loss = out->data;
    int classes = in[1]->shape.dims[1];
    for (int64_t r = 0; r < in[1]->shape.dims[0]; r++) {
        if (check_label(labels[r], classes, r) != 0)
            return -1;
        const float *x = logits + r * classes;
        float max = x[0];
        for (int j = 1; j < classes; j++)
            max = x[j] > max ? x[j] : max;
        double sum = 0.0;
        for (int j = 0; j < classes; j++)
            sum += exp((double)(x[j] - max));
        loss[r] = (float)(log(sum) + max - x[labels[r]]);
    }
    return 0;
}

/* Inputs (dy [N], labels [N], logits [N,C]): (softmax - onehot) * dy. */
FL_HOST_KERNEL(fl_host_sparse_xent_grad)
{
    (void)n;
    (void)ctx;
    const float *dy = in[0]->data;
    const int32_t *labels = in[1]->data;
    int classes = in[2]->shape.dims[1];
    for (int64_t r = 0; r < in[2]->shape.dims[0]; r++) {
        if (check_label(labels[r], classes, r) != 0)
            return -1;
        float *o = (float *)out->data + r * classes;
        softmax_row((const float *)in[2]->data + r * classes, o, classes);
        o[labels[r]] -= 1.0f;
        for (int j = 0; j < classes; j++)
            o[j] *= dy[r];
    }
    return 0;
}
