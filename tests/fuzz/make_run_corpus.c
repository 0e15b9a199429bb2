/* make_run_corpus.c: writes fuzz_graph_run's seeds (tests/fuzz/corpus-run/)
 * with the encoder: small partitions that train (every op family and its
 * gradients, three optimizers), and issue 35's hostile partitions, each a
 * good graph with one shape or axis changed before encoding. */
#include <stdio.h>
#include <stdlib.h>

#include "distributed_runtime/partition/partition_def.h"
#include "runtime.h"

static int write_seed(const char *dir, const char *name, fl_graph *g)
{
    fl_graph_partition p = {.job = "worker", .graph = g};
    fl_wire_buf bytes = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/seed-%s", dir, name);
    FILE *f = !fl_graph_failed(g) && fl_partition_def_encode(&p, &bytes) == 0 ? fopen(path, "wb") : NULL;
    int rc = f && fwrite(bytes.data, 1, bytes.len, f) == bytes.len ? 0 : -1;
    if (f)
        fclose(f);
    if (rc != 0)
        fprintf(stderr, "make_run_corpus: cannot write %s: %s %s\n", path, fl_graph_error(g), fl_last_error());
    fl_wire_buf_free(&bytes);
    fl_graph_partition_free(&p);
    return rc;
}

static fl_node *mean(fl_graph *g, fl_node *x) { return fl_reduce_mean(g, x, NULL, 0, false, NULL); }

/* A two-layer net with every activation, a division and the loss: Adam. */
static fl_graph *mlp(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    fl_node *labels = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "labels");
    fl_node *w1 = fl_get_variable(g, "w1", fl_shape_make(2, 3, 4), fl_constant_initializer(0.5f));
    fl_node *b1 = fl_get_variable(g, "b1", fl_shape_make(1, 4), fl_zeros_initializer());
    fl_node *h = fl_relu(g, fl_add(g, fl_matmul(g, x, w1, false, false, NULL), b1, NULL), "h");
    fl_node *w2 = fl_get_variable(g, "w2", fl_shape_make(2, 4, 3), fl_constant_initializer(0.25f));
    fl_node *logits = fl_matmul(g, h, w2, false, false, "logits");
    fl_node *xent = fl_sparse_softmax_cross_entropy_with_logits(g, labels, logits, NULL);
    fl_node *ratio = fl_div(g, h, fl_add(g, fl_sigmoid(g, h, NULL), fl_scalar(g, 1.0f, NULL), NULL), NULL);
    fl_node *terms[] = {mean(g, xent), mean(g, fl_tanh(g, h, NULL)), mean(g, fl_softmax(g, logits, NULL)),
                        mean(g, ratio)};
    fl_node *loss = fl_add_n(g, terms, 4, "loss");
    fl_minimize(fl_adam_optimizer(0.01f, 0.9f, 0.999f, 1e-8f), g, loss, NULL, "train");
    return g;
}

/* Convolution and pooling, flattened: momentum. */
static fl_graph *convnet(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 4, 4, 1), "x");
    fl_node *f = fl_get_variable(g, "filter", fl_shape_make(4, 2, 2, 1, 2), fl_constant_initializer(0.1f));
    fl_node *c = fl_relu(g, fl_conv2d(g, x, f, 1, 1, FL_SAME, NULL), NULL);
    fl_node *pool = fl_max_pool2d(g, c, 2, 2, 2, 2, FL_VALID, NULL);
    fl_node *flat = fl_reshape(g, pool, fl_shape_make(2, -1, 8), NULL);
    fl_minimize(fl_momentum_optimizer(0.1f, 0.9f, true), g, mean(g, flat), NULL, "train");
    return g;
}

/* The ops that move elements, and their gradients: gradient descent. */
static fl_graph *arrays(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 2, 3), "x");
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 3), fl_constant_initializer(1.0f));
    fl_node *xw = fl_mul(g, x, w, NULL);
    fl_node *pair[] = {xw, fl_neg(g, xw, NULL)};
    fl_node *cat = fl_concat(g, pair, 2, 1, "cat");
    fl_node *parts[3];
    fl_split(g, cat, 3, 1, parts, "split");
    fl_node *window = fl_slice(g, cat, 1, 1, 2, "window");
    fl_node *best = fl_argmax(g, cat, 1, "best");
    fl_node *same = fl_cast(g, fl_equal(g, best, fl_argmax(g, xw, -1, NULL), NULL), FL_FLOAT32, NULL);
    fl_node *kept = fl_stop_gradient(g, fl_identity(g, same, NULL), NULL);
    fl_node *sum = fl_add(g, fl_reduce_sum(g, window, NULL, 0, false, NULL), mean(g, parts[2]), NULL);
    fl_node *loss = fl_sub(g, sum, fl_reduce_sum(g, kept, NULL, 0, true, NULL), "loss");
    fl_minimize(fl_gradient_descent_optimizer(0.1f), g, fl_reshape(g, loss, fl_shape_make(0), NULL), NULL, "train");
    return g;
}

/* ---- issue 35's partitions: a good node, then its bytes' source changed ---- */

static fl_node *raw(fl_graph *g, fl_op_kind op, const char *name, fl_node *a, fl_node *b, fl_attrs attrs)
{
    fl_node *inputs[2] = {a, b};
    fl_node_spec spec = {.op = op, .name = name, .inputs = inputs, .ninputs = b ? 2 : 1, .dtype = FL_FLOAT32,
                         .exact_name = true, .attrs = attrs};
    return fl_add_node(g, &spec);
}

/* op(a [2,4], b [2,4]) with b then said to be `lie`, and the axis `axis`. */
static fl_graph *hostile(fl_op_kind op, bool two_inputs, fl_shape lie, int axis)
{
    fl_graph *g = fl_graph_new();
    fl_node *a = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 2, 4), "a");
    fl_node *b = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 2, 4), "b");
    fl_node *n = raw(g, op, "victim", a, two_inputs ? b : NULL, (fl_attrs){.size = 2});
    b->attrs.shape = b->shape = lie;
    if (n)
        n->attrs.axis = axis;
    return g;
}

/* Two legal Fills whose MatMul is 1.1 PB. */
static fl_graph *petabyte(void)
{
    fl_graph *g = fl_graph_new();
    fl_attrs a = {.shape = fl_shape_make(2, 1 << 24, 1), .value = 1.0f}, b = a;
    b.shape = fl_shape_make(2, 1, 1 << 24);
    fl_node_spec fa = {.op = FL_OP_FILL, .name = "fa", .dtype = FL_FLOAT32, .attrs = a};
    fl_node_spec fb = fa;
    fb.name = "fb";
    fb.attrs = b;
    fl_matmul(g, fl_add_node(g, &fa), fl_add_node(g, &fb), false, false, "mm");
    return g;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_run_corpus DIR\n");
        return 2;
    }
    const char *d = argv[1];
    fl_shape big = fl_shape_make(2, 2, 1 << 20);
    int rc = write_seed(d, "mlp", mlp()) | write_seed(d, "convnet", convnet()) | write_seed(d, "arrays", arrays());
    rc |= write_seed(d, "relu-grad-overread", hostile(FL_OP_RELU_GRAD, true, big, 0));
    rc |= write_seed(d, "sigmoid-grad-overread", hostile(FL_OP_SIGMOID_GRAD, true, big, 0));
    rc |= write_seed(d, "tanh-grad-overread", hostile(FL_OP_TANH_GRAD, true, big, 0));
    rc |= write_seed(d, "softmax-grad-overread", hostile(FL_OP_SOFTMAX_GRAD, true, big, 0));
    rc |= write_seed(d, "sum-to-shape-overread", hostile(FL_OP_SUM_TO_SHAPE, true, fl_shape_make(2, 1024, 4), 0));
    rc |= write_seed(d, "concat-axis", hostile(FL_OP_CONCAT, true, fl_shape_make(2, 2, 4), 4));
    rc |= write_seed(d, "slice-axis", hostile(FL_OP_SLICE, false, fl_shape_make(2, 2, 4), 3));
    rc |= write_seed(d, "slice-grad-axis", hostile(FL_OP_SLICE_GRAD, true, fl_shape_make(2, 2, 4), -3));
    rc |= write_seed(d, "argmax-axis", hostile(FL_OP_ARGMAX, false, fl_shape_make(2, 2, 4), 2));
    rc |= write_seed(d, "matmul-petabyte", petabyte());
    return rc == 0 ? 0 : 1;
}
