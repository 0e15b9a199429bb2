/* launch_math.c: launchers for element-wise arithmetic (elementwise.cl) and
 * for activations, softmax and the sparse cross-entropy loss (nn.cl). */
#include "launch.h"

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV };               /* as in elementwise.cl */
enum { ACT_RELU, ACT_SIGMOID, ACT_TANH, ACT_SOFTPLUS };              /* as in nn.cl */

static int binary(fl_cl_device *d, const fl_node *n, int op, fl_tensor *const *in, fl_tensor *out)
{
    int count = fl_cl_count(out), na = fl_cl_count(in[0]), nb = fl_cl_count(in[1]);
    if (count < 0 || na < 0 || nb < 0)
        return -1;
    if (count == 0)
        return 0;
    bool ints = out->dtype == FL_INT32;
    fl_cl_call c = fl_cl_begin(d, ints ? K_BINARY_INT : K_BINARY_FLOAT_CHUNKS);
    fl_cl_int(&c, op);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_int(&c, na);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_int(&c, nb);
    fl_cl_mem(&c, out->data);
    if (ints) {
        fl_cl_int(&c, count);
        fl_cl_fault(&c, n, 0);
        return fl_cl_run(&c, (size_t)count);
    }
    fl_cl_int(&c, count);
    fl_cl_int(&c, d->chunk);
    return fl_cl_run_chunks(&c, (size_t)count);
}

FL_CL_OP(fl_cl_add) { (void)ctx; return binary(d, n, OP_ADD, in, out); }
FL_CL_OP(fl_cl_sub) { (void)ctx; return binary(d, n, OP_SUB, in, out); }
FL_CL_OP(fl_cl_mul) { (void)ctx; return binary(d, n, OP_MUL, in, out); }
FL_CL_OP(fl_cl_div) { (void)ctx; return binary(d, n, OP_DIV, in, out); }

FL_CL_OP(fl_cl_neg)
{
    (void)n;
    (void)ctx;
    int count = fl_cl_count(out);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, out->dtype == FL_INT32 ? K_NEG_INT : K_NEG_FLOAT);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, count);
    return fl_cl_run(&c, (size_t)count);
}

/* out = in[0], then out += in[k] for each k in turn: the host's order. */
FL_CL_OP(fl_cl_add_n)
{
    (void)ctx;
    int count = fl_cl_count(out);
    if (count < 0 || fl_cl_copy(d, in[0]->data, out->data, fl_tensor_bytes(out)) != 0)
        return -1;
    for (int k = 1; k < n->ninputs; k++) {
        fl_cl_call c = fl_cl_begin(d, out->dtype == FL_INT32 ? K_ACCUMULATE_INT : K_ACCUMULATE_FLOAT);
        fl_cl_mem(&c, out->data);
        fl_cl_mem(&c, in[k]->data);
        fl_cl_int(&c, count);
        if (fl_cl_run(&c, (size_t)count) != 0)
            return -1;
    }
    return 0;
}

/* out[j] = sum over rows r of x[r, j], x seen as [rows, size]: the column
 * sums of cl/reduce.cl, which a bias gradient is (see fl_cl_sum_cols), or
 * one row's sum when out is a scalar. */
FL_CL_OP(fl_cl_sum_to_shape)
{
    (void)n;
    (void)ctx;
    int count = fl_cl_count(in[0]), size = fl_cl_count(out);
    if (count < 0 || size < 0)
        return -1;
    if (size == 0)
        return 0;
    int rows = count / size;
    if (rows == 0)
        return fl_cl_fill_bytes(d, out->data, 0, fl_tensor_bytes(out));
    if (size == 1)
        return fl_cl_sum_rows(d, in[0]->data, 1, rows, 1.0f, out->data);
    return fl_cl_sum_cols(d, in[0]->data, 1, rows, size, 1.0f, out->data);
}

FL_CL_OP(fl_cl_div_grad_b)
{
    (void)n;
    (void)ctx;
    int count = fl_cl_count(out), na = fl_cl_count(in[1]), nb = fl_cl_count(in[2]);
    if (count < 0 || na < 0 || nb < 0)
        return -1;
    if (count == 0)
        return 0;
    fl_cl_call c = fl_cl_begin(d, K_DIV_GRAD_B);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_int(&c, na);
    fl_cl_mem(&c, in[2]->data);
    fl_cl_int(&c, nb);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, count);
    return fl_cl_run(&c, (size_t)count);
}

static int activation(fl_cl_device *d, int act, fl_tensor *const *in, fl_tensor *out)
{
    int count = fl_cl_count(out);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_ACTIVATION);
    fl_cl_int(&c, act);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, count);
    return fl_cl_run(&c, (size_t)count);
}

/* Inputs (dy, x) for Relu and Softplus, (dy, y) for Sigmoid and Tanh. */
static int activation_grad(fl_cl_device *d, int act, fl_tensor *const *in, fl_tensor *out)
{
    int count = fl_cl_count(out);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_ACTIVATION_GRAD);
    fl_cl_int(&c, act);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, count);
    return fl_cl_run(&c, (size_t)count);
}

/* Relu and its gradient, the chapter 1 model's, as vector streams. */
static int relu(fl_cl_device *d, fl_tensor *const *in, int ninputs, fl_tensor *out)
{
    int count = fl_cl_count(out);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, ninputs == 1 ? K_RELU_CHUNKS : K_RELU_GRAD_CHUNKS);
    for (int i = 0; i < ninputs; i++)
        fl_cl_mem(&c, in[i]->data);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, count);
    fl_cl_int(&c, d->chunk);
    return fl_cl_run_chunks(&c, (size_t)count);
}

FL_CL_OP(fl_cl_relu) { (void)n; (void)ctx; return relu(d, in, 1, out); }
FL_CL_OP(fl_cl_sigmoid) { (void)n; (void)ctx; return activation(d, ACT_SIGMOID, in, out); }
FL_CL_OP(fl_cl_tanh) { (void)n; (void)ctx; return activation(d, ACT_TANH, in, out); }
FL_CL_OP(fl_cl_relu_grad) { (void)n; (void)ctx; return relu(d, in, 2, out); }
FL_CL_OP(fl_cl_sigmoid_grad) { (void)n; (void)ctx; return activation_grad(d, ACT_SIGMOID, in, out); }
FL_CL_OP(fl_cl_tanh_grad) { (void)n; (void)ctx; return activation_grad(d, ACT_TANH, in, out); }
FL_CL_OP(fl_cl_softplus) { (void)n; (void)ctx; return activation(d, ACT_SOFTPLUS, in, out); }
FL_CL_OP(fl_cl_softplus_grad) { (void)n; (void)ctx; return activation_grad(d, ACT_SOFTPLUS, in, out); }

/* Rows and classes of a tensor seen as [rows, last axis]. */
static int rows_of(const fl_tensor *t, int *classes)
{
    int count = fl_cl_count(t);
    *classes = t->shape.rank ? t->shape.dims[t->shape.rank - 1] : 1;
    return count < 0 ? -1 : (*classes ? count / *classes : 0);
}

FL_CL_OP(fl_cl_softmax)
{
    (void)n;
    (void)ctx;
    int classes, rows = rows_of(out, &classes);
    if (rows < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_SOFTMAX);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, rows);
    fl_cl_int(&c, classes);
    return fl_cl_run(&c, (size_t)rows);
}

FL_CL_OP(fl_cl_softmax_grad)
{
    (void)n;
    (void)ctx;
    int classes, rows = rows_of(out, &classes);
    if (rows < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_SOFTMAX_GRAD);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, rows);
    fl_cl_int(&c, classes);
    return fl_cl_run(&c, (size_t)rows);
}

/* Labels are checked on the device: a bad one is reported when the step
 * waits (see fl_cl_device_wait), naming this op. */
FL_CL_OP(fl_cl_sparse_xent)
{
    (void)ctx;
    int classes, rows = rows_of(in[1], &classes);
    if (rows < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_SPARSE_XENT);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, rows);
    fl_cl_int(&c, classes);
    fl_cl_fault(&c, n, classes);
    return fl_cl_run(&c, (size_t)rows);
}

FL_CL_OP(fl_cl_sparse_xent_grad)
{
    (void)ctx;
    int classes, rows = rows_of(in[2], &classes);
    if (rows < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_SPARSE_XENT_GRAD);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_mem(&c, in[2]->data);
    fl_cl_mem(&c, out->data);
    fl_cl_int(&c, rows);
    fl_cl_int(&c, classes);
    fl_cl_fault(&c, n, classes);
    return fl_cl_run(&c, (size_t)rows);
}
