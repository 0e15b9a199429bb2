/* test_ops_math.c: matmul, broadcasting arithmetic and add_n: hand-checked
 * forward values, gradients against finite differences, and error texts. */
#include <stdlib.h>

#include "gradcheck.h"
#include "runtime.h" /* fl_matmul_dims_of */

static fl_tensor *run1(fl_graph *g, fl_node *y)
{
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    if (fl_session_run(s, NULL, 0, &y, 1, &out, NULL, 0) != 0)
        diag("run failed: %s", fl_session_error(s));
    fl_session_free(s);
    return out;
}

static bool floats_are(const fl_tensor *t, const float *want, int n, const char *what)
{
    bool pass = t && fl_shape_size(t->shape) == n;
    for (int i = 0; pass && i < n; i++)
        pass = fabsf(fl_tensor_floats(t)[i] - want[i]) < 1e-5f;
    ok(pass, "%s", what);
    if (!pass && t)
        for (int i = 0; i < n && i < fl_shape_size(t->shape); i++)
            diag("[%d] got %g want %g", i, fl_tensor_floats(t)[i], want[i]);
    return pass;
}

static fl_node *matrix(fl_graph *g, int rows, int cols, const float *v)
{
    fl_tensor *t = fl_tensor_from_floats(fl_shape_make(2, rows, cols), v);
    fl_node *n = fl_constant(g, t, NULL);
    fl_tensor_free(t);
    return n;
}

static void test_matmul_forward(void)
{
    const float a[6] = {1, 2, 3, 4, 5, 6};    /* [2,3] */
    const float b[6] = {7, 8, 9, 10, 11, 12}; /* [3,2] */
    const float ab[4] = {58, 64, 139, 154};
    const float at_a[9] = {17, 22, 27, 22, 29, 36, 27, 36, 45}; /* A^T A */
    const float a_at[4] = {14, 32, 32, 77};                      /* A A^T */
    const float bt_at[4] = {58, 139, 64, 154};                   /* B^T A^T = (AB)^T */
    fl_graph *g = fl_graph_new();
    fl_node *A = matrix(g, 2, 3, a), *B = matrix(g, 3, 2, b);
    fl_tensor *t;
    floats_are(t = run1(g, fl_matmul(g, A, B, false, false, NULL)), ab, 4, "matmul A B");
    fl_tensor_free(t);
    floats_are(t = run1(g, fl_matmul(g, A, A, true, false, NULL)), at_a, 9, "matmul A^T A");
    fl_tensor_free(t);
    floats_are(t = run1(g, fl_matmul(g, A, A, false, true, NULL)), a_at, 4, "matmul A A^T");
    fl_tensor_free(t);
    floats_are(t = run1(g, fl_matmul(g, B, A, true, true, NULL)), bt_at, 4, "matmul B^T A^T");
    fl_tensor_free(t);
    fl_graph_free(g);
}

static void test_broadcast_forward(void)
{
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const float bias[3] = {10, 20, 30};
    const float add[6] = {11, 22, 33, 14, 25, 36};
    const float sub[6] = {-9, -18, -27, -6, -15, -24};
    const float mul[6] = {10, 40, 90, 40, 100, 180};
    const float div_scalar[6] = {0.5f, 1, 1.5f, 2, 2.5f, 3};
    fl_graph *g = fl_graph_new();
    fl_node *X = matrix(g, 2, 3, x);
    fl_tensor *bt = fl_tensor_from_floats(fl_shape_make(1, 3), bias);
    fl_node *B = fl_constant(g, bt, "bias");
    fl_tensor *t;
    floats_are(t = run1(g, fl_add(g, X, B, NULL)), add, 6, "add broadcasts a bias over rows");
    fl_tensor_free(t);
    floats_are(t = run1(g, fl_sub(g, X, B, NULL)), sub, 6, "sub broadcasts");
    fl_tensor_free(t);
    floats_are(t = run1(g, fl_mul(g, B, X, NULL)), mul, 6, "mul broadcasts the smaller first operand");
    fl_tensor_free(t);
    floats_are(t = run1(g, fl_div(g, X, fl_scalar(g, 2.0f, NULL), NULL)), div_scalar, 6, "div by a scalar");
    fl_tensor_free(t);
    fl_node *three[3] = {X, X, X};
    const float sum3[6] = {3, 6, 9, 12, 15, 18};
    floats_are(t = run1(g, fl_add_n(g, three, 3, NULL)), sum3, 6, "add_n of three");
    fl_tensor_free(t);
    fl_tensor_free(bt);
    fl_graph_free(g);
}

/* Operands big enough that /cpu:0 splits the work across threads
 * (src/host/host_parallel.c), with each way the smaller operand can repeat:
 * not at all, a short bias (tiled), a long one, a scalar. Compared exactly
 * with the same float operation done here one element at a time. */
static void test_large_operands(void)
{
    enum { ROWS = 1200, COLS = 700, COUNT = ROWS * COLS };
    float *x = malloc(COUNT * sizeof *x), *y = malloc(COUNT * sizeof *y);
    for (int i = 0; i < COUNT; i++) {
        x[i] = (float)(i % 1009) * 0.25f - 50.0f;
        y[i] = (float)(i % 13) + 1.0f;
    }
    fl_graph *g = fl_graph_new();
    fl_node *X = matrix(g, ROWS, COLS, x), *Y = matrix(g, ROWS, COLS, y);
    fl_tensor *short_t = fl_tensor_from_floats(fl_shape_make(1, 3), y), *long_t = fl_tensor_from_floats(fl_shape_make(1, COLS), y);
    fl_node *X3 = fl_reshape(g, X, fl_shape_make(2, COUNT / 3, 3), NULL);
    struct {
        fl_node *node;
        int period; /* how often the second operand repeats; 0: a scalar 7 */
        char op;
        const char *what;
    } cases[] = {
        {fl_sub(g, X, Y, NULL), COUNT, '-', "large sub, same shapes"},
        {fl_add(g, X3, fl_constant(g, short_t, NULL), NULL), 3, '+', "large add of a 3-wide bias"},
        {fl_mul(g, X, fl_constant(g, long_t, NULL), NULL), COLS, '*', "large mul by a 700-wide row"},
        {fl_div(g, X, fl_scalar(g, 7.0f, NULL), NULL), 0, '/', "large div by a scalar"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fl_tensor *t = run1(g, cases[c].node);
        int bad = t && fl_shape_size(t->shape) == COUNT ? 0 : COUNT;
        for (int i = 0; bad == 0 && i < COUNT; i++) {
            float b = cases[c].period ? y[i % cases[c].period] : 7.0f, want;
            switch (cases[c].op) {
            case '+': want = x[i] + b; break;
            case '-': want = x[i] - b; break;
            case '*': want = x[i] * b; break;
            default: want = x[i] / b; break;
            }
            if (fl_tensor_floats(t)[i] != want && bad++ == 0)
                diag("element %d: got %.9g, want %.9g", i, fl_tensor_floats(t)[i], want);
        }
        ok(bad == 0, "%s: every element exact", cases[c].what);
        fl_tensor_free(t);
    }
    fl_node *three[3] = {X, Y, X};
    fl_tensor *t = run1(g, fl_add_n(g, three, 3, NULL));
    int bad = t ? 0 : 1;
    for (int i = 0; t && i < COUNT; i++)
        bad += fl_tensor_floats(t)[i] != (x[i] + y[i]) + x[i];
    ok(bad == 0, "large add_n adds its inputs in order (%d differ)", bad);
    fl_tensor_free(t);
    fl_tensor_free(short_t);
    fl_tensor_free(long_t);
    fl_graph_free(g);
    free(x);
    free(y);
}

static fl_node *build_matmul(fl_graph *g, fl_node **x, void *user)
{
    const bool *t = user;
    return fl_matmul(g, x[0], x[1], t[0], t[1], NULL);
}

static fl_node *build_binary(fl_graph *g, fl_node **x, void *user)
{
    typedef fl_node *(*binary)(fl_graph *, fl_node *, fl_node *, const char *);
    return ((binary)user)(g, x[0], x[1], NULL);
}

static fl_node *build_add_n(fl_graph *g, fl_node **x, void *user)
{
    (void)user;
    fl_node *in[3] = {x[0], x[1], x[0]};
    return fl_add_n(g, in, 3, NULL);
}

static void test_gradients(void)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            bool t[2] = {ta, tb};
            fl_tensor *x[2] = {gc_random(ta ? fl_shape_make(2, 4, 3) : fl_shape_make(2, 3, 4), -1, 1, 1),
                               gc_random(tb ? fl_shape_make(2, 5, 4) : fl_shape_make(2, 4, 5), -1, 1, 2)};
            char what[64];
            snprintf(what, sizeof what, "matmul transpose_a=%d transpose_b=%d", ta, tb);
            gradcheck(what, build_matmul, t, 2, x, 1e-2);
            fl_tensor_free(x[0]);
            fl_tensor_free(x[1]);
        }
    struct { const char *what; void *fn; } ops[] = {
        {"add", (void *)fl_add}, {"sub", (void *)fl_sub}, {"mul", (void *)fl_mul}, {"div", (void *)fl_div}};
    for (int i = 0; i < 4; i++) {
        fl_tensor *x[2] = {gc_random(fl_shape_make(3, 2, 3, 4), -1, 1, 3),
                           gc_random(fl_shape_make(1, 4), 0.5f, 2, 4)};
        char what[64];
        snprintf(what, sizeof what, "%s with a broadcast [4] operand", ops[i].what);
        gradcheck(what, build_binary, ops[i].fn, 2, x, 1e-2);
        fl_tensor *same[2] = {x[0], gc_random(fl_shape_make(3, 2, 3, 4), 0.5f, 2, 5)};
        snprintf(what, sizeof what, "%s of equal shapes", ops[i].what);
        gradcheck(what, build_binary, ops[i].fn, 2, same, 1e-2);
        fl_tensor_free(same[1]);
        fl_tensor_free(x[0]);
        fl_tensor_free(x[1]);
    }
    fl_tensor *x[2] = {gc_random(fl_shape_make(2, 3, 2), -1, 1, 6), gc_random(fl_shape_make(2, 3, 2), -1, 1, 8)};
    gradcheck("add_n with a repeated input", build_add_n, NULL, 2, x, 1e-2);
    fl_tensor_free(x[0]);
    fl_tensor_free(x[1]);
}

static void test_errors(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 128, 3136), "x");
    fl_variable_scope_push(g, "dense_1", FL_REUSE_INHERIT);
    fl_node *w = fl_get_variable(g, "kernel", fl_shape_make(2, 3316, 1024), fl_zeros_initializer());
    fl_node *y = fl_matmul(g, x, w, false, false, NULL);
    fl_variable_scope_pop(g);
    ok(y == NULL, "a mismatched matmul returns NULL");
    is_string(fl_graph_error(g), "dense_1/MatMul: cannot multiply [128,3136] by [3316,1024]",
              "the error names the node and both shapes");
    ok(fl_relu(g, y, NULL) == NULL, "a builder given NULL returns NULL");
    is_string(fl_graph_error(g), "dense_1/MatMul: cannot multiply [128,3136] by [3316,1024]",
              "the first error is kept");
    fl_graph_free(g);

    g = fl_graph_new();
    fl_node *a = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, 4, 3), "a");
    fl_node *b = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 4), "b");
    fl_add(g, a, b, "bias_add");
    is_string(fl_graph_error(g),
              "bias_add: shapes [4,3] and [4] do not broadcast (one must be a scalar or match the other's last dimensions)",
              "a broadcast mismatch names the node and the shapes");
    fl_graph_free(g);

    g = fl_graph_new();
    fl_node *i = fl_placeholder(g, FL_INT32, fl_shape_make(1, 4), "labels");
    fl_node *f = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 4), "f");
    fl_add(g, i, f, NULL);
    is_string(fl_graph_error(g), "Add: inputs are int32 and float32; cast one with fl_cast",
              "mixed dtypes are refused");
    fl_graph_free(g);
}

static void test_run_time_shape_check(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    fl_node *y = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "y");
    fl_node *z = fl_add(g, x, y, "z");
    ok(z != NULL, "unknown batch dims build");
    fl_tensor *a = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, 2, 3));
    fl_tensor *b = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, 5, 3));
    fl_feed feeds[2] = {{x, a}, {y, b}};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, feeds, 2, &z, 1, &out, NULL, 0) != 0, "mismatched fed shapes fail at run time");
    contains(fl_session_error(s), "z: shapes [2,3] and [5,3] do not broadcast", "the run-time error names the node");
    fl_tensor_free(a);
    fl_tensor_free(b);
    fl_session_free(s);
    fl_graph_free(g);
}

/* The sizes every backend's MatMul kernel reads, for each transpose:
 * A is [3,2] or [2,3] (M = 3, K = 2), B is [2,4] or [4,2] (N = 4). */
static void test_matmul_dims(void)
{
    fl_graph *g = fl_graph_new();
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            fl_shape a = ta ? fl_shape_make(2, 2, 3) : fl_shape_make(2, 3, 2);
            fl_shape b = tb ? fl_shape_make(2, 4, 2) : fl_shape_make(2, 2, 4);
            fl_node *x = fl_placeholder(g, FL_FLOAT32, a, NULL);
            fl_node *y = fl_placeholder(g, FL_FLOAT32, b, NULL);
            fl_node *mm = fl_matmul(g, x, y, ta, tb, NULL);
            fl_matmul_dims d = fl_matmul_dims_of(mm, a, fl_shape_make(2, 3, 4));
            ok(d.m == 3 && d.n == 4 && d.k == 2 && d.transpose_a == ta && d.transpose_b == tb &&
                   d.lda == a.dims[1] && d.ldb == b.dims[1],
               "MatMul dims, transpose_a %d transpose_b %d: M %d N %d K %d lda %d ldb %d", ta, tb, d.m,
               d.n, d.k, d.lda, d.ldb);
        }
    fl_graph_free(g);
}

int main(void)
{
    test_matmul_dims();
    test_matmul_forward();
    test_broadcast_forward();
    test_large_operands();
    test_gradients();
    test_errors();
    test_run_time_shape_check();
    return done_testing();
}
