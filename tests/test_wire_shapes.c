/* test_wire_shapes.c: issue 35's memory-safety bugs, one by one: a node
 * built the way the partition decoder builds it (fl_add_node, no builder's
 * checks), or a partition whose bytes say a wrong shape, is refused with a
 * message naming the node and the input at fault; a run whose fed shapes
 * disagree fails the same way, and nothing reads past a buffer. */
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/partition/partition_def.h"
#include "runtime.h"
#include "tap.h"

static fl_node *node(fl_graph *g, fl_op_kind op, const char *name, fl_node *a, fl_node *b, const fl_attrs *attrs)
{
    fl_node *inputs[2] = {a, b};
    fl_node_spec spec = {.op = op, .name = name, .inputs = inputs, .ninputs = b ? 2 : 1, .dtype = FL_FLOAT32,
                         .exact_name = true};
    if (attrs)
        spec.attrs = *attrs;
    return fl_add_node(g, &spec);
}

static fl_node *input(fl_graph *g, const char *name, fl_shape shape)
{
    return fl_placeholder(g, FL_FLOAT32, shape, name);
}

/* The two-input gradients took their shape from input 0 alone: with dy [4]
 * and x [2^20] the kernel read 4 elements of x, and with dy [2^20] and x [4]
 * a megabyte past its end (the 4 MB a server sent back). */
static void test_pair_gradients(void)
{
    const fl_op_kind ops[] = {FL_OP_RELU_GRAD, FL_OP_SIGMOID_GRAD, FL_OP_TANH_GRAD, FL_OP_SOFTMAX_GRAD};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        const char *type = fl_op_def_of(ops[i])->type;
        fl_graph *g = fl_graph_new();
        fl_node *dy = input(g, "dy", fl_shape_make(1, 1 << 20)), *x = input(g, "x", fl_shape_make(1, 4));
        ok(node(g, ops[i], "grad", dy, x, NULL) == NULL, "%s of dy [1048576] and x [4] is refused", type);
        contains(fl_graph_error(g), "grad: input 1 (x) has shape [4] but input 0 (dy) has [1048576]", type);
        fl_graph_free(g);
        g = fl_graph_new();
        fl_node *ints = fl_placeholder(g, FL_INT32, fl_shape_make(1, 4), "labels");
        ok(node(g, ops[i], "grad", input(g, "dy", fl_shape_make(1, 4)), ints, NULL) == NULL,
           "%s of an int32 input is refused", type);
        contains(fl_graph_error(g), "grad: input 1 (labels) is int32, but this op needs float32", type);
        fl_graph_free(g);
    }
}

/* SumToShape(x, like): like larger than x made the kernel read past x. */
static void test_sum_to_shape(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = input(g, "x", fl_shape_make(1, 4)), *like = input(g, "like", fl_shape_make(2, 1024, 4));
    ok(node(g, FL_OP_SUM_TO_SHAPE, "sum", x, like, NULL) == NULL, "SumToShape to a larger shape is refused");
    contains(fl_graph_error(g), "sum: input 1 (like) has shape [1024,4], which does not broadcast into [4]",
             "SumToShape: the error names the node and the input");
    ok(node(g, FL_OP_SUM_TO_SHAPE, "ok_sum", like, x, NULL) != NULL, "SumToShape [1024,4] to [4] still builds: %s",
       fl_graph_error(g));
    fl_graph_free(g);
}

/* Each axis out of range for the input's rank, as a partition may say it. */
static void check_axis(fl_op_kind op, int axis, fl_shape shape, const char *want)
{
    const char *type = fl_op_def_of(op)->type;
    fl_graph *g = fl_graph_new();
    fl_node *x = input(g, "x", shape);
    fl_attrs attrs = {.axis = axis, .size = 1};
    fl_node *second = op == FL_OP_SLICE_GRAD ? x : op == FL_OP_CONCAT ? input(g, "y", shape) : NULL;
    ok(node(g, op, "n", x, second, &attrs) == NULL, "%s with axis %d of a rank-%d input is refused", type, axis,
       shape.rank);
    contains(fl_graph_error(g), want, type);
    fl_graph_free(g);
}

static void test_axes(void)
{
    /* Concat at registration: a stack buffer overflow in infer_concat. */
    check_axis(FL_OP_CONCAT, 4, fl_shape_make(2, 2, 3), "n: axis 4 is out of range for a rank-2 input");
    check_axis(FL_OP_CONCAT, -1, fl_shape_make(2, 2, 3), "n: axis -1 is out of range for a rank-2 input");
    check_axis(FL_OP_SLICE, 2, fl_shape_make(2, 2, 3), "n: axis 2 is out of range for a rank-2 input");
    check_axis(FL_OP_SLICE, -3, fl_shape_make(1, 3), "n: axis -3 is out of range");
    check_axis(FL_OP_SLICE_GRAD, 3, fl_shape_make(2, 2, 3), "n: axis 3 is out of range for a rank-2 input");
    check_axis(FL_OP_ARGMAX, 2, fl_shape_make(2, 2, 3), "n: axis 2 is out of range for a rank-2 input");
    check_axis(FL_OP_ARGMAX, 0, fl_shape_make(0), "n: axis 0 of a scalar input");
    fl_graph *g = fl_graph_new();
    fl_attrs attrs = {.begin = 2147483647, .size = 2};
    ok(node(g, FL_OP_SLICE, "n", input(g, "x", fl_shape_make(1, 4)), NULL, &attrs) == NULL,
       "a Slice window whose end overflows an int is refused");
    contains(fl_graph_error(g), "does not fit axis 0 of size 4", "Slice: the window is named");
    fl_graph_free(g);
}

/* One good node encoded; then a shape or an attr changed in its bytes'
 * source, as a hostile sender would: the decoder refuses it by name. */
static void check_decode_refuses(const char *what, fl_op_kind op, fl_shape x_shape, int axis, const char *want)
{
    fl_graph_partition p = {.job = "worker"};
    fl_graph *g = p.graph = fl_graph_new();
    fl_node *dy = input(g, "dy", fl_shape_make(2, 2, 4)), *x = input(g, "x", fl_shape_make(2, 2, 4));
    fl_attrs attrs = {0};
    fl_node *n = node(g, op, "victim", dy, x, &attrs);
    x->attrs.shape = x->shape = x_shape;
    if (n)
        n->attrs.axis = axis;
    fl_wire_buf buf = {0};
    ok(n && fl_partition_def_encode(&p, &buf) == 0, "%s: the partition encodes: %s", what, fl_last_error());
    fl_graph_partition q;
    ok(fl_partition_def_decode(buf.data, buf.len, &q) != 0, "%s: the decoder refuses it", what);
    ok(fl_last_error_code() == FL_INVALID_ARGUMENT, "%s: INVALID_ARGUMENT", what);
    contains(fl_last_error(), want, what);
    fl_wire_buf_free(&buf);
    fl_graph_partition_free(&p);
}

static void test_from_the_wire(void)
{
    check_decode_refuses("ReluGrad from the wire", FL_OP_RELU_GRAD, fl_shape_make(2, 2, 1 << 20), 0,
                         "node victim: input 1 (x) has shape [2,1048576] but input 0 (dy) has [2,4]");
    check_decode_refuses("SumToShape from the wire", FL_OP_SUM_TO_SHAPE, fl_shape_make(2, 1024, 4), 0,
                         "node victim: input 1 (x) has shape [1024,4], which does not broadcast into [2,4]");
    check_decode_refuses("Concat's axis from the wire", FL_OP_CONCAT, fl_shape_make(2, 2, 4), 3,
                         "node victim: axis 3 is out of range for a rank-2 input");
}

/* Shapes unknown at build time are checked again when the run feeds them. */
static void test_at_run_time(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *dy = input(g, "dy", fl_shape_make(1, -1)), *x = input(g, "x", fl_shape_make(1, -1));
    fl_node *grad = node(g, FL_OP_RELU_GRAD, "relu_grad", dy, x, NULL);
    ok(grad != NULL, "ReluGrad of two [?] builds: %s", fl_graph_error(g));
    float big[1024] = {0}, small[4] = {1, 2, 3, 4};
    fl_tensor *tb = fl_tensor_from_floats(fl_shape_make(1, 1024), big);
    fl_tensor *ts = fl_tensor_from_floats(fl_shape_make(1, 4), small);
    fl_feed feeds[] = {{dy, tb}, {x, ts}};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, feeds, 2, &grad, 1, &out, NULL, 0) != 0 && out == NULL, "feeding dy [1024] and x [4] fails");
    ok(fl_last_error_code() == FL_INVALID_ARGUMENT, "with INVALID_ARGUMENT");
    contains(fl_last_error(), "relu_grad: input 1 (x) has shape [4] but input 0 (dy) has [1024]",
             "the run's error names the node and the input");
    feeds[1].value = tb;
    ok(fl_session_run(s, feeds, 2, &grad, 1, &out, NULL, 0) == 0 && out, "the next run, with one shape, works: %s",
       fl_last_error());
    fl_tensor_free(out);
    fl_tensor_free(tb);
    fl_tensor_free(ts);
    fl_session_free(s);
    fl_graph_free(g);
}

/* A SAME pooling window far larger than the image (the wire allows 65536):
 * the kernel visits only its taps inside the image, so the run is at once. */
static void test_huge_pool_window(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = input(g, "x", fl_shape_make(4, 1, 3, 3, 1));
    fl_attrs attrs = {.ksize_h = 65536, .ksize_w = 65536, .stride_h = 1, .stride_w = 1, .padding = FL_SAME};
    fl_node *pool = node(g, FL_OP_MAX_POOL, "pool", x, NULL, &attrs);
    float v[9] = {1, 2, 3, 4, 9, 6, 7, 8, 5};
    fl_tensor *t = fl_tensor_from_floats(fl_shape_make(4, 1, 3, 3, 1), v);
    fl_feed feed = {x, t};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    double start = fl_now_s();
    ok(pool && fl_session_run(s, &feed, 1, &pool, 1, &out, NULL, 0) == 0 && out, "a 65536x65536 SAME max pool runs: %s",
       fl_last_error());
    double took = fl_now_s() - start;
    ok(took < 5.0, "in %.3f s, not the minutes of 3.9e10 taps (waited up to 5 s)", took);
    ok(out && fl_tensor_floats(out)[0] == 9.0f && fl_tensor_floats(out)[8] == 9.0f, "every window holds the maximum, 9");
    fl_tensor_free(out);
    fl_tensor_free(t);
    fl_session_free(s);
    fl_graph_free(g);
}

int main(void)
{
    test_pair_gradients();
    test_sum_to_shape();
    test_axes();
    test_from_the_wire();
    test_at_run_time();
    test_huge_pool_window();
    done_testing();
}
