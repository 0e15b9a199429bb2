/* test_ops_reduce.c: reduce_sum and reduce_mean through a real session:
 * hand-checked values over every choice of axes, int32 reductions, shapes
 * with an unknown batch, the error text for bad axes, and gradients against
 * central differences (including a mean over a batch known only at run time). */
#include "flowlab.h"
#include "tap.h"
#include "gradcheck.h"

/* start, start + step, ... in row-major order: easy to follow by hand. */
static fl_tensor *iota(fl_shape shape, float start, float step)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, shape);
    float *v = fl_tensor_floats(t);
    for (int64_t i = 0; i < fl_shape_size(shape); i++)
        v[i] = start + step * (float)i;
    return t;
}

static uint64_t rng_state = 0x2545f4914f6cdd1du;

static fl_tensor *random_tensor(fl_shape shape)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, shape);
    float *v = fl_tensor_floats(t);
    for (int64_t i = 0; i < fl_shape_size(shape); i++) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        v[i] = (float)((rng_state >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
    }
    return t;
}

/* Runs fetch with x fed value; NULL (and a diagnostic) on failure. With
 * error set, a failed run's message is copied there instead. */
static fl_tensor *run_fed(fl_graph *g, fl_node *fetch, fl_node *x, const fl_tensor *value,
                          char *error, size_t len)
{
    if (!fetch) {
        diag("build failed: %s", fl_graph_error(g));
        return NULL;
    }
    fl_feed feed = {x, value};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    if (!s || fl_session_run(s, &feed, x ? 1 : 0, &fetch, 1, &out, NULL, 0) != 0) {
        const char *why = s ? fl_session_error(s) : fl_last_error();
        if (error)
            snprintf(error, len, "%s", why);
        else
            diag("run failed: %s", why);
        out = NULL;
    }
    fl_session_free(s);
    return out;
}

static bool values_match(const fl_tensor *got, fl_shape shape, const float *want, double tol)
{
    char sg[64], sw[64];
    if (!got)
        return false;
    if (!fl_shape_equal(got->shape, shape)) {
        diag("shape %s, want %s", fl_shape_format(got->shape, sg, sizeof sg),
             fl_shape_format(shape, sw, sizeof sw));
        return false;
    }
    for (int64_t i = 0; i < fl_shape_size(shape); i++) {
        double v = got->dtype == FL_INT32 ? fl_tensor_ints(got)[i] : fl_tensor_floats(got)[i];
        if (fabs(v - want[i]) > tol * (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0)) {
            diag("element %lld is %.7g, want %.7g", (long long)i, v, want[i]);
            return false;
        }
    }
    return true;
}

/* ---- forward values ---- */

typedef struct {
    const char *what;
    bool mean;
    int axes[3];
    int naxes;
    bool keep_dims;
    fl_shape want_shape;
    float want[12];
} reduce_case;

/* x = 1..24 as [2,3,4]; axes chosen so every pattern of kept axes appears. */
static const reduce_case cases[] = {
    {"sum over everything", false, {0}, 0, false, {0, {0}}, {300}},
    {"sum over everything, keep_dims", false, {0}, 0, true, {3, {1, 1, 1}}, {300}},
    {"sum over axis 0", false, {0}, 1, false, {2, {3, 4}},
     {14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36}},
    {"sum over axis 1", false, {1}, 1, false, {2, {2, 4}}, {15, 18, 21, 24, 51, 54, 57, 60}},
    {"sum over axis -1 (the last)", false, {-1}, 1, false, {2, {2, 3}}, {10, 26, 42, 58, 74, 90}},
    {"sum over axes 0 and 2, keep_dims", false, {0, 2}, 2, true, {3, {1, 3, 1}}, {68, 100, 132}},
    {"sum over axes 2 and 0 (order does not matter)", false, {2, 0}, 2, false, {1, {3}},
     {68, 100, 132}},
    {"sum over all three axes listed", false, {0, 1, 2}, 3, false, {0, {0}}, {300}},
    {"mean over everything", true, {0}, 0, false, {0, {0}}, {12.5f}},
    {"mean over axis 0", true, {0}, 1, false, {2, {3, 4}},
     {7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}},
    {"mean over axis 1, keep_dims", true, {1}, 1, true, {3, {2, 1, 4}}, {5, 6, 7, 8, 17, 18, 19, 20}},
    {"mean over axes -1 and -3", true, {-1, -3}, 2, false, {1, {3}}, {8.5f, 12.5f, 16.5f}},
};

static void test_forward(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const reduce_case *c = &cases[i];
        fl_graph *g = fl_graph_new();
        fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(3, 2, 3, 4), "x");
        const int *axes = c->naxes ? c->axes : NULL;
        fl_node *y = c->mean ? fl_reduce_mean(g, x, axes, c->naxes, c->keep_dims, NULL)
                             : fl_reduce_sum(g, x, axes, c->naxes, c->keep_dims, NULL);
        fl_tensor *value = iota(fl_shape_make(3, 2, 3, 4), 1, 1);
        fl_tensor *got = run_fed(g, y, x, value, NULL, 0);
        ok(y && fl_shape_equal(fl_node_shape(y), c->want_shape) &&
               values_match(got, c->want_shape, c->want, 1e-6),
           "%s", c->what);
        fl_tensor_free(got);
        fl_tensor_free(value);
        fl_graph_free(g);
    }
}

static void test_scalar_and_names(void)
{
    fl_graph *g = fl_graph_new();
    fl_tensor *three = fl_tensor_from_floats(fl_shape_make(0), (float[]){3});
    fl_node *c = fl_constant(g, three, "c");
    fl_node *sum = fl_reduce_sum(g, c, NULL, 0, false, NULL);
    fl_node *mean = fl_reduce_mean(g, c, NULL, 0, true, "avg");
    fl_tensor *got = run_fed(g, sum, NULL, NULL, NULL, 0);
    ok(got && fl_tensor_scalar(got) == 3.0f, "the sum of a scalar is the scalar");
    fl_tensor_free(got);
    is_string(sum ? fl_node_name(sum) : NULL, "Sum", "reduce_sum is named Sum by default");
    is_string(mean ? fl_node_op_type(mean) : NULL, "Mean", "reduce_mean's op type is Mean");
    is_string(mean ? fl_node_name(mean) : NULL, "avg", "a given name is used");
    fl_tensor_free(three);
    fl_graph_free(g);
}

/* Integers add exactly; an integer mean truncates toward zero, as in TF. */
static void test_int32(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_INT32, fl_shape_make(2, 2, 3), "x");
    int axis = 1;
    fl_node *sum = fl_reduce_sum(g, x, &axis, 1, false, NULL);
    fl_node *mean = fl_reduce_mean(g, x, &axis, 1, false, NULL);
    fl_tensor *value = fl_tensor_from_ints(fl_shape_make(2, 2, 3), (int32_t[]){1, 2, 4, -1, -2, -4});
    fl_tensor *got_sum = run_fed(g, sum, x, value, NULL, 0);
    fl_tensor *got_mean = run_fed(g, mean, x, value, NULL, 0);
    ok(sum && fl_node_dtype(sum) == FL_INT32, "an int32 sum is int32");
    ok(values_match(got_sum, fl_shape_make(1, 2), (float[]){7, -7}, 0), "int32 sum over axis 1");
    ok(values_match(got_mean, fl_shape_make(1, 2), (float[]){2, -2}, 0),
       "int32 mean truncates toward zero: 7/3 is 2, -7/3 is -2");
    fl_tensor_free(got_sum);
    fl_tensor_free(got_mean);
    fl_tensor_free(value);
    fl_graph_free(g);
}

/* [?,3]: shapes keep the unknown batch at build time, use the real one at run time. */
static void test_unknown_batch(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    int first = 0, last = -1;
    fl_node *over_batch = fl_reduce_mean(g, x, &first, 1, false, NULL);
    fl_node *per_row = fl_reduce_sum(g, x, &last, 1, true, NULL);
    fl_node *all = fl_reduce_mean(g, x, NULL, 0, false, NULL);
    char buf[64];
    is_string(fl_shape_format(fl_node_shape(over_batch), buf, sizeof buf), "[3]",
              "mean over the batch of [?,3] is [3]");
    is_string(fl_shape_format(fl_node_shape(per_row), buf, sizeof buf), "[?,1]",
              "sum over the last axis of [?,3], keep_dims, is [?,1]");
    is_string(fl_shape_format(fl_node_shape(all), buf, sizeof buf), "[]",
              "mean over everything is a scalar");
    fl_tensor *value = iota(fl_shape_make(2, 4, 3), 0, 1);
    fl_tensor *got = run_fed(g, over_batch, x, value, NULL, 0);
    ok(values_match(got, fl_shape_make(1, 3), (float[]){4.5f, 5.5f, 6.5f}, 1e-6),
       "mean over a fed batch of 4 divides by 4");
    fl_tensor_free(got);
    got = run_fed(g, per_row, x, value, NULL, 0);
    ok(values_match(got, fl_shape_make(2, 4, 1), (float[]){3, 12, 21, 30}, 1e-6),
       "sum per row of a fed batch of 4");
    fl_tensor_free(got);
    fl_tensor_free(value);
    fl_graph_free(g);
}

/* ---- errors, by exact text ---- */

static void check_error(const char *what, const int *axes, int naxes, fl_shape shape,
                        const char *want)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, shape, "x");
    fl_node *y = fl_reduce_sum(g, x, axes, naxes, false, NULL);
    ok(y == NULL, "%s: the builder returns NULL", what);
    is_string(fl_graph_error(g), want, what);
    fl_graph_free(g);
}

static void test_errors(void)
{
    check_error("axis past the end", (int[]){2}, 1, fl_shape_make(2, 3, 4),
                "Sum: axis 2 is out of range for a rank-2 input (use -2 to 1)");
    check_error("negative axis past the start", (int[]){0, -3}, 2, fl_shape_make(2, 3, 4),
                "Sum: axis -3 is out of range for a rank-2 input (use -2 to 1)");
    check_error("the same axis twice", (int[]){1, 0, -1}, 3, fl_shape_make(2, 3, 4),
                "Sum: axes list axis 1 more than once");
    check_error("an axis of a scalar", (int[]){0}, 1, fl_shape_make(0),
                "Sum: a scalar has no axis 0");
    check_error("a negative count", (int[]){0}, -1, fl_shape_make(2, 3, 4),
                "Sum: naxes is -1; pass 0 (or axes NULL) to reduce every axis");

    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 3), "x");
    ok(fl_reduce_mean(g, x, (int[]){1}, 1, false, "my_mean") == NULL &&
           fl_reduce_mean(g, NULL, NULL, 0, false, NULL) == NULL,
       "a failed builder's result passes on as NULL");
    is_string(fl_graph_error(g), "my_mean: axis 1 is out of range for a rank-1 input (use -1 to 0)",
              "the first error is kept and names the node");
    fl_graph_free(g);
}

/* ---- gradients ---- */

typedef struct {
    bool mean;
    int axes[3];
    int naxes;
    bool keep_dims;
} reduce_args;

static fl_node *build_reduce(fl_graph *g, fl_node **xs, void *user)
{
    const reduce_args *a = user;
    const int *axes = a->naxes ? a->axes : NULL;
    return a->mean ? fl_reduce_mean(g, xs[0], axes, a->naxes, a->keep_dims, NULL)
                   : fl_reduce_sum(g, xs[0], axes, a->naxes, a->keep_dims, NULL);
}

static void test_gradients(void)
{
    const struct {
        const char *what;
        reduce_args args;
        fl_shape shape;
    } grads[] = {
        {"d sum(all) / dx", {false, {0}, 0, false}, {2, {3, 4}}},
        {"d sum(axis 0) / dx", {false, {0}, 1, false}, {2, {3, 4}}},
        {"d sum(axes 0,2, keep_dims) / dx", {false, {0, 2}, 2, true}, {3, {2, 3, 4}}},
        {"d mean(all) / dx", {true, {0}, 0, false}, {3, {2, 3, 2}}},
        {"d mean(axis -1) / dx", {true, {-1}, 1, false}, {2, {3, 5}}},
        {"d mean(axes 1,3) / dx", {true, {1, 3}, 2, false}, {4, {2, 3, 2, 2}}},
    };
    for (size_t i = 0; i < sizeof grads / sizeof grads[0]; i++) {
        fl_tensor *x = random_tensor(grads[i].shape);
        gradcheck(grads[i].what, build_reduce, (void *)&grads[i].args, 1, &x, 1e-3);
        fl_tensor_free(x);
    }
}

/* The mean's divisor comes from the fed batch, not from the build-time [?,3]. */
static void test_gradient_unknown_batch(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    fl_node *loss = fl_reduce_mean(g, x, NULL, 0, false, NULL);
    fl_node *dx = NULL;
    ok(fl_gradients(g, loss, &x, 1, &dx) == 0 && dx, "gradient of a mean over [?,3] builds");
    fl_tensor *value = iota(fl_shape_make(2, 4, 3), 0, 1);
    fl_tensor *got = run_fed(g, dx, x, value, NULL, 0);
    float want[12];
    for (int i = 0; i < 12; i++)
        want[i] = 1.0f / 12.0f;
    ok(values_match(got, fl_shape_make(2, 4, 3), want, 1e-6),
       "each of 12 fed elements gets 1/12");
    fl_tensor_free(got);
    fl_tensor_free(value);
    fl_graph_free(g);
}

/* An int32 sum carries no gradient: it blocks quietly. */
static void test_int_sum_blocks(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 3), "x");
    fl_node *y = fl_cast(g, fl_reduce_sum(g, fl_cast(g, x, FL_INT32, NULL), NULL, 0, false, NULL),
                         FL_FLOAT32, NULL);
    fl_node *loss = fl_add(g, y, fl_reduce_sum(g, x, NULL, 0, false, NULL), NULL);
    fl_node *dx = NULL;
    ok(fl_gradients(g, loss, &x, 1, &dx) == 0 && dx, "gradient through an int32 sum builds");
    fl_tensor *value = iota(fl_shape_make(1, 3), 0.5f, 1);
    fl_tensor *got = run_fed(g, dx, x, value, NULL, 0);
    ok(values_match(got, fl_shape_make(1, 3), (float[]){1, 1, 1}, 0),
       "only the float32 path contributes");
    fl_tensor_free(got);
    fl_tensor_free(value);
    fl_graph_free(g);
}

int main(void)
{
    test_forward();
    test_scalar_and_names();
    test_int32();
    test_unknown_batch();
    test_errors();
    test_gradients();
    test_gradient_unknown_batch();
    test_int_sum_blocks();
    return done_testing();
}
