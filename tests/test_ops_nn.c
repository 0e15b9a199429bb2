/* test_ops_nn.c: relu, sigmoid, tanh, softplus, softmax and the sparse softmax
 * cross-entropy: values checked by hand and gradients by finite differences. */
#include "gradcheck.h"

static fl_tensor *eval(fl_graph *g, fl_node *y)
{
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    if (fl_session_run(s, NULL, 0, &y, 1, &out, NULL, 0) != 0)
        diag("run failed: %s", fl_session_error(s));
    fl_session_free(s);
    return out;
}

static fl_node *const_floats(fl_graph *g, fl_shape shape, const float *v)
{
    fl_tensor *t = fl_tensor_from_floats(shape, v);
    fl_node *n = fl_constant(g, t, NULL);
    fl_tensor_free(t);
    return n;
}

static void expect(fl_tensor *t, const float *want, int n, const char *what)
{
    bool pass = t && fl_shape_size(t->shape) == n;
    for (int i = 0; pass && i < n; i++)
        pass = fabsf(fl_tensor_floats(t)[i] - want[i]) < 1e-5f;
    ok(pass, "%s", what);
    for (int i = 0; !pass && t && i < n && i < fl_shape_size(t->shape); i++)
        diag("[%d] got %.7g want %.7g", i, fl_tensor_floats(t)[i], want[i]);
    fl_tensor_free(t);
}

static void test_forward(void)
{
    const float x[4] = {-2, -0.5f, 0, 1.5f};
    fl_graph *g = fl_graph_new();
    fl_node *X = const_floats(g, fl_shape_make(1, 4), x);
    const float relu[4] = {0, 0, 0, 1.5f};
    const float sig[4] = {0.11920292f, 0.37754067f, 0.5f, 0.81757448f};
    const float th[4] = {-0.96402758f, -0.46211716f, 0, 0.90514825f};
    expect(eval(g, fl_relu(g, X, NULL)), relu, 4, "relu");
    expect(eval(g, fl_sigmoid(g, X, NULL)), sig, 4, "sigmoid");
    expect(eval(g, fl_tanh(g, X, NULL)), th, 4, "tanh");
    /* log(1 + e^x); at 100 and -100 e^x would overflow or vanish if taken as it is */
    const float big[4] = {100, -100, 20, -20};
    const float sp[4] = {0.12692801f, 0.47407698f, 0.69314718f, 1.70141327f};
    const float sp_big[4] = {100, 3.7200760e-44f, 20.000000002f, 2.0611537e-09f};
    expect(eval(g, fl_softplus(g, X, NULL)), sp, 4, "softplus");
    expect(eval(g, fl_softplus(g, const_floats(g, fl_shape_make(1, 4), big), NULL)), sp_big, 4,
           "softplus of large inputs: no overflow, no log(0)");

    /* softmax([1,2,3]) and a row of large values that would overflow exp() */
    const float logits[6] = {1, 2, 3, 1000, 1000, 1000};
    const float soft[6] = {0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f};
    fl_node *L = const_floats(g, fl_shape_make(2, 2, 3), logits);
    expect(eval(g, fl_softmax(g, L, NULL)), soft, 6, "softmax over the last axis, stable for large logits");

    /* loss_i = log(sum exp) - logit[label]: row 0 label 2 -> 0.40760596; row 1 -> log 3 */
    int32_t labels[2] = {2, 0};
    fl_tensor *lt = fl_tensor_from_ints(fl_shape_make(1, 2), labels);
    fl_node *Y = fl_constant(g, lt, NULL);
    const float xent[2] = {0.40760596f, 1.0986123f};
    expect(eval(g, fl_sparse_softmax_cross_entropy_with_logits(g, Y, L, NULL)), xent, 2,
           "sparse softmax cross-entropy");
    fl_tensor_free(lt);
    fl_graph_free(g);
}

typedef fl_node *(*unary)(fl_graph *, fl_node *, const char *);

static fl_node *build_unary(fl_graph *g, fl_node **x, void *user)
{
    return ((unary)user)(g, x[0], NULL);
}

static fl_node *build_xent(fl_graph *g, fl_node **x, void *user)
{
    (void)user;
    return fl_sparse_softmax_cross_entropy_with_logits(g, x[1], x[0], NULL);
}

static void test_gradients(void)
{
    struct { const char *what; unary fn; } ops[] = {
        {"relu", fl_relu}, {"sigmoid", fl_sigmoid}, {"tanh", fl_tanh}, {"softmax", fl_softmax},
        {"softplus", fl_softplus}};
    for (int i = 0; i < 5; i++) {
        fl_tensor *x = gc_random(fl_shape_make(2, 3, 5), -2, 2, 11 + i);
        /* keep relu's inputs away from the kink at 0, where the derivative jumps */
        for (int j = 0; j < 15; j++)
            if (fabsf(fl_tensor_floats(x)[j]) < 0.05f)
                fl_tensor_floats(x)[j] = 0.3f;
        gradcheck(ops[i].what, build_unary, (void *)ops[i].fn, 1, &x, 1e-2);
        fl_tensor_free(x);
    }
    int32_t labels[4] = {0, 3, 1, 2};
    fl_tensor *x[2] = {gc_random(fl_shape_make(2, 4, 4), -2, 2, 21),
                       fl_tensor_from_ints(fl_shape_make(1, 4), labels)};
    gradcheck("sparse softmax cross-entropy", build_xent, NULL, 2, x, 1e-2);
    fl_tensor_free(x[0]);
    fl_tensor_free(x[1]);
}

static void test_errors(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *labels = fl_placeholder(g, FL_INT32, fl_shape_make(1, 64), "labels");
    fl_node *logits = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 128, 10), "logits");
    fl_sparse_softmax_cross_entropy_with_logits(g, labels, logits, "xent");
    is_string(fl_graph_error(g),
              "xent: labels [64] and logits [128,10] do not match; expected labels [N] and logits [N,classes]",
              "mismatched labels and logits are refused by name");
    fl_graph_free(g);

    g = fl_graph_new();
    labels = fl_placeholder(g, FL_INT32, fl_shape_make(1, 2), "labels");
    logits = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 2, 10), "logits");
    fl_node *loss = fl_sparse_softmax_cross_entropy_with_logits(g, labels, logits, "xent");
    int32_t bad[2] = {3, 12};
    fl_tensor *lt = fl_tensor_from_ints(fl_shape_make(1, 2), bad);
    fl_tensor *xt = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, 2, 10));
    fl_feed feeds[2] = {{labels, lt}, {logits, xt}};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, feeds, 2, &loss, 1, &out, NULL, 0) != 0, "a label out of range fails the run");
    is_string(fl_session_error(s), "xent: label 12 in row 1 is outside [0, 10)", "and says which label");
    fl_session_free(s);
    fl_tensor_free(lt);
    fl_tensor_free(xt);
    fl_graph_free(g);
}

int main(void)
{
    test_forward();
    test_gradients();
    test_errors();
    return done_testing();
}
