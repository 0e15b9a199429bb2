/* nn.cl: activations and their gradients, softmax and the sparse softmax
 * cross-entropy loss. Row kernels give one work-item a whole row (a
 * handful of classes), subtracting the row's maximum before exp(). The
 * activations' rules are src/scalar_rules.h's, joined ahead of this file. */

enum { ACT_RELU, ACT_SIGMOID, ACT_TANH, ACT_SOFTPLUS };

__kernel void activation(int act, __global const float *x, __global float *out, int n)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    float v = x[i];
    switch (act) {
    case ACT_RELU: out[i] = fl_rule_relu(v); break;
    case ACT_SIGMOID: out[i] = fl_rule_sigmoid(v); break;
    case ACT_SOFTPLUS: out[i] = fl_rule_softplus(v); break;
    default: out[i] = fl_rule_tanh(v); break;
    }
}

/* Inputs (dy, x) for Relu; (dy, y) for Sigmoid and Tanh. */
__kernel void activation_grad(int act, __global const float *dy, __global const float *v,
                              __global float *out, int n)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    switch (act) {
    case ACT_RELU: out[i] = fl_rule_relu_grad(dy[i], v[i]); break;
    case ACT_SIGMOID: out[i] = fl_rule_sigmoid_grad(dy[i], v[i]); break;
    case ACT_SOFTPLUS: out[i] = fl_rule_softplus_grad(dy[i], v[i]); break;
    default: out[i] = fl_rule_tanh_grad(dy[i], v[i]); break;
    }
}

float row_max(__global const float *x, int classes)
{
    float m = x[0];
    for (int j = 1; j < classes; j++)
        m = x[j] > m ? x[j] : m;
    return m;
}

void softmax_row(__global const float *x, __global float *y, int classes)
{
    float m = row_max(x, classes), sum = 0.0f;
    for (int j = 0; j < classes; j++) {
        y[j] = exp(x[j] - m);
        sum += y[j];
    }
    for (int j = 0; j < classes; j++)
        y[j] /= sum;
}

__kernel void softmax(__global const float *x, __global float *y, int rows, int classes)
{
    int r = get_global_id(0);
    if (r < rows)
        softmax_row(x + (size_t)r * classes, y + (size_t)r * classes, classes);
}

/* dx = y * (dy - sum_j dy_j y_j), row by row. */
__kernel void softmax_grad(__global const float *dy, __global const float *y,
                           __global float *out, int rows, int classes)
{
    int r = get_global_id(0);
    if (r >= rows)
        return;
    size_t at = (size_t)r * classes;
    float dot = 0.0f;
    for (int j = 0; j < classes; j++)
        dot += dy[at + j] * y[at + j];
    for (int j = 0; j < classes; j++)
        out[at + j] = y[at + j] * (dy[at + j] - dot);
}

/* A label outside [0, classes) cannot be used: record it, write NaN. */
bool bad_label(int label, int classes, int row, __global int *fault, int slot)
{
    if (label >= 0 && label < classes)
        return false;
    record_fault(fault, FAULT_LABEL, slot, row, label);
    return true;
}

/* loss_r = logsumexp(logits_r) - logits_r[label_r] */
__kernel void sparse_xent(__global const int *labels, __global const float *logits,
                          __global float *loss, int rows, int classes, __global int *fault,
                          int slot)
{
    int r = get_global_id(0);
    if (r >= rows)
        return;
    if (bad_label(labels[r], classes, r, fault, slot)) {
        loss[r] = NAN;
        return;
    }
    __global const float *x = logits + (size_t)r * classes;
    float m = row_max(x, classes), sum = 0.0f;
    for (int j = 0; j < classes; j++)
        sum += exp(x[j] - m);
    loss[r] = log(sum) + m - x[labels[r]];
}

/* Inputs (dy [N], labels [N], logits [N,C]): (softmax - onehot) * dy. */
__kernel void sparse_xent_grad(__global const float *dy, __global const int *labels,
                               __global const float *logits, __global float *out, int rows,
                               int classes, __global int *fault, int slot)
{
    int r = get_global_id(0);
    if (r >= rows)
        return;
    size_t at = (size_t)r * classes;
    if (bad_label(labels[r], classes, r, fault, slot)) {
        for (int j = 0; j < classes; j++)
            out[at + j] = NAN;
        return;
    }
    softmax_row(logits + at, out + at, classes);
    out[at + labels[r]] -= 1.0f;
    for (int j = 0; j < classes; j++)
        out[at + j] *= dy[r];
}
