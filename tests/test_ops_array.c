/* test_ops_array.c: reshape, concat, slice, split, identity, stop_gradient,
 * cast, argmax and equal through a real session: hand-checked values,
 * build-time shapes with an unknown batch, errors by exact text (at build
 * time and at run time), and gradients against central differences. */
#include "flowlab.h"
#include "runtime.h" /* fl_op_def_of (the op table itself), fl_check_copy_size */
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

/* Runs fetch with nodes[i] fed values[i]. On failure returns NULL and copies
 * the session's message to error, or prints it when error is NULL. */
static fl_tensor *run_fed(fl_graph *g, fl_node *fetch, fl_node *const *nodes,
                          fl_tensor *const *values, int n, char *error)
{
    if (!fetch) {
        diag("build failed: %s", fl_graph_error(g));
        return NULL;
    }
    fl_feed feeds[4];
    for (int i = 0; i < n; i++)
        feeds[i] = (fl_feed){nodes[i], values[i]};
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    if (!s || fl_session_run(s, feeds, n, &fetch, 1, &out, NULL, 0) != 0) {
        const char *why = s ? fl_session_error(s) : fl_last_error();
        if (error)
            snprintf(error, FL_ERROR_LEN, "%s", why);
        else
            diag("run failed: %s", why);
        out = NULL;
    }
    fl_session_free(s);
    return out;
}

static fl_tensor *run1(fl_graph *g, fl_node *fetch, fl_node *x, fl_tensor *value)
{
    return run_fed(g, fetch, &x, &value, x ? 1 : 0, NULL);
}

/* Frees got. Compares int32 results as exact numbers too. */
static bool values_match(fl_tensor *got, fl_dtype dtype, fl_shape shape, const float *want)
{
    char sg[64], sw[64];
    bool pass = got != NULL;
    if (pass && (got->dtype != dtype || !fl_shape_equal(got->shape, shape))) {
        diag("%s %s, want %s %s", fl_dtype_name(got->dtype), fl_shape_format(got->shape, sg, sizeof sg),
             fl_dtype_name(dtype), fl_shape_format(shape, sw, sizeof sw));
        pass = false;
    }
    for (int64_t i = 0; pass && i < fl_shape_size(shape); i++) {
        double v = dtype == FL_INT32 ? fl_tensor_ints(got)[i] : fl_tensor_floats(got)[i];
        if (fabs(v - want[i]) > 1e-6 * (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0)) {
            diag("element %lld is %.7g, want %.7g", (long long)i, v, want[i]);
            pass = false;
        }
    }
    fl_tensor_free(got);
    return pass;
}

static bool has_shape(fl_node *n, const char *want)
{
    char buf[64];
    if (!n)
        return false;
    fl_shape_format(fl_node_shape(n), buf, sizeof buf);
    if (strcmp(buf, want) != 0)
        diag("build-time shape %s, want %s", buf, want);
    return strcmp(buf, want) == 0;
}

static fl_shape shape2(int a, int b) { return fl_shape_make(2, a, b); }

/* fl_constant copies its value, so the tensors made here are freed here. */
static fl_node *constant(fl_graph *g, fl_tensor *value, const char *name)
{
    fl_node *n = fl_constant(g, value, name);
    fl_tensor_free(value);
    return n;
}

/* ---- Reshape ---- */

static void test_reshape(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, shape2(-1, 6), "x");
    fl_node *images = fl_reshape(g, x, fl_shape_make(4, -1, 2, 3, 1), NULL);
    fl_node *fixed = fl_reshape(g, x, shape2(3, 4), NULL);
    ok(has_shape(images, "[?,2,3,1]"), "reshape [?,6] to [-1,2,3,1] is [?,2,3,1] at build time");
    ok(has_shape(fixed, "[3,4]"), "a fully given target is the build-time shape");
    is_string(fl_node_op_type(images), "Reshape", "op type Reshape");
    fl_tensor *value = iota(shape2(2, 6), 1, 1);
    ok(values_match(run1(g, images, x, value), FL_FLOAT32, fl_shape_make(4, 2, 2, 3, 1),
                    (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}),
       "-1 resolves to the fed batch of 2; the elements keep their order");
    ok(values_match(run1(g, fixed, x, value), FL_FLOAT32, shape2(3, 4),
                    (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}),
       "[2,6] fed into a [3,4] reshape");
    fl_tensor_free(value);
    fl_graph_free(g);
}

static void check_reshape_error(const char *what, fl_shape from, fl_shape target, const char *want)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, from, "x");
    ok(fl_reshape(g, x, target, NULL) == NULL, "%s: the builder returns NULL", what);
    is_string(fl_graph_error(g), want, what);
    fl_graph_free(g);
}

static void check_reshape_run_error(const char *what, fl_shape target, fl_shape fed, const char *want)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, fed.dims[1]), "x");
    fl_node *y = fl_reshape(g, x, target, "reshaped");
    fl_tensor *value = fl_tensor_new(FL_FLOAT32, fed);
    char error[FL_ERROR_LEN] = "";
    fl_tensor *got = run_fed(g, y, &x, &value, 1, error);
    ok(y && !got, "%s: the run fails", what);
    is_string(error, want, what);
    fl_tensor_free(got);
    fl_tensor_free(value);
    fl_graph_free(g);
}

static void test_reshape_errors(void)
{
    check_reshape_error("sizes differ at build time", shape2(2, 3), shape2(4, 2),
                        "Reshape: cannot reshape [2,3] (6 elements) into [4,2]");
    check_reshape_error("-1 cannot make the sizes match", shape2(2, 3), shape2(-1, 4),
                        "Reshape: cannot reshape [2,3] (6 elements) into [-1,4]");
    check_reshape_error("two -1s", shape2(2, 3), shape2(-1, -1),
                        "Reshape: only one dimension may be -1, got [-1,-1]");
    check_reshape_error("a dimension below -1", shape2(2, 3), shape2(3, -2),
                        "Reshape: dimension 1 of the target is -2; only -1 (inferred) may be negative");
    check_reshape_error("rank 5", shape2(2, 3), fl_shape_make(5, 1, 1, 1, 2, 3),
                        "Reshape: the target shape's rank must be 0 to 4");
    check_reshape_run_error("a fed batch that does not fit", shape2(128, 785), shape2(128, 784),
                            "reshaped: cannot reshape [128,784] (100352 elements) into [128,785]");
    check_reshape_run_error("a fed batch that does not divide", shape2(-1, 4), shape2(5, 3),
                            "reshaped: cannot reshape [5,3] (15 elements) into [-1,4]");
}

/* ---- fl_tensor_reshape: a host tensor's shape, in place ---- */

static void check_tensor_reshape_error(const char *what, fl_shape target, const char *want)
{
    fl_tensor *t = iota(fl_shape_make(4, 3, 2, 2, 1), 0, 1);
    ok(fl_tensor_reshape(t, target) == -1, "%s: fl_tensor_reshape returns -1", what);
    ok(strcmp(fl_last_error(), want) == 0, "%s: the message names both shapes", what);
    if (strcmp(fl_last_error(), want) != 0)
        diag("got:  %s\nwant: %s", fl_last_error(), want);
    char buf[32];
    ok(strcmp(fl_shape_format(t->shape, buf, sizeof buf), "[3,2,2,1]") == 0, "%s: the tensor keeps its shape", what);
    fl_tensor_free(t);
}

static void test_tensor_reshape(void)
{
    fl_tensor *images = iota(fl_shape_make(4, 3, 2, 2, 1), 0, 1); /* like fl_mnist_load's [N,28,28,1] */
    const float *before = fl_tensor_floats(images);
    char buf[32];
    ok(fl_tensor_reshape(images, fl_shape_make(2, -1, 4)) == 0 &&
           strcmp(fl_shape_format(images->shape, buf, sizeof buf), "[3,4]") == 0,
       "[3,2,2,1] flattened with [-1,4] is [3,4]");
    ok(fl_tensor_floats(images) == before && fl_tensor_floats(images)[7] == 7.0f,
       "in place: the same data, row-major as before");
    ok(fl_tensor_reshape(images, fl_shape_make(1, 12)) == 0 && images->shape.rank == 1, "[3,4] to [12]");
    fl_tensor_free(images);
    check_tensor_reshape_error("sizes differ", shape2(-1, 5),
                               "fl_tensor_reshape: cannot reshape [3,2,2,1] (12 elements) into [-1,5]; a reshape "
                               "keeps the number of elements (one dimension may be -1)");
    check_tensor_reshape_error("two -1s", shape2(-1, -1),
                               "fl_tensor_reshape: cannot reshape [3,2,2,1] into [-1,-1]: only one dimension may "
                               "be -1, got [-1,-1]");
    ok(fl_tensor_reshape(NULL, shape2(1, 1)) == -1, "no tensor: -1");
}

/* ---- Concat ---- */

static void test_concat(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *a = fl_placeholder(g, FL_FLOAT32, shape2(-1, 2), "a");
    fl_node *b = fl_placeholder(g, FL_FLOAT32, shape2(-1, 1), "b");
    fl_node *ab[2] = {a, b}, *aa[2] = {a, a};
    fl_node *columns = fl_concat(g, ab, 2, -1, NULL);
    fl_node *rows = fl_concat(g, aa, 2, 0, NULL);
    ok(has_shape(columns, "[?,3]"), "concat [?,2] and [?,1] on axis -1 is [?,3]");
    ok(has_shape(rows, "[?,2]"), "concat of unknown batches on axis 0 is [?,2]");
    is_string(fl_node_op_type(rows), "Concat", "op type Concat");
    fl_tensor *va = iota(shape2(2, 2), 1, 1), *vb = iota(shape2(2, 1), 10, 10);
    fl_tensor *values[2] = {va, vb};
    ok(values_match(run_fed(g, columns, ab, values, 2, NULL), FL_FLOAT32, shape2(2, 3),
                    (float[]){1, 2, 10, 3, 4, 20}),
       "concat on the last axis interleaves rows");
    ok(values_match(run_fed(g, rows, ab, values, 1, NULL), FL_FLOAT32, shape2(4, 2),
                    (float[]){1, 2, 3, 4, 1, 2, 3, 4}),
       "concat on axis 0 stacks");
    fl_tensor_free(va);
    fl_tensor_free(vb);

    fl_node *ints[3] = {constant(g, fl_tensor_from_ints(fl_shape_make(1, 2), (int32_t[]){7, 8}), "i"),
                        NULL, NULL};
    ints[1] = ints[2] = ints[0];
    ok(values_match(run1(g, fl_concat(g, ints, 3, 0, NULL), NULL, NULL), FL_INT32,
                    fl_shape_make(1, 6), (float[]){7, 8, 7, 8, 7, 8}),
       "int32 concat of three inputs");
    fl_graph_free(g);
}

static void check_concat_error(const char *what, fl_shape sa, fl_dtype tb, fl_shape sb, int n,
                               int axis, const char *want)
{
    fl_graph *g = fl_graph_new();
    fl_node *inputs[2] = {fl_placeholder(g, FL_FLOAT32, sa, "a"), fl_placeholder(g, tb, sb, "b")};
    ok(fl_concat(g, inputs, n, axis, "cat") == NULL, "%s: the builder returns NULL", what);
    is_string(fl_graph_error(g), want, what);
    fl_graph_free(g);
}

static void test_concat_errors(void)
{
    check_concat_error("other dimensions differ", shape2(3, 3), FL_FLOAT32, shape2(2, 4), 2, 1,
                       "cat: input 1 (b) has shape [2,4], input 0 has [3,3]; all dimensions but axis 1 must match");
    check_concat_error("ranks differ", shape2(3, 3), FL_FLOAT32, fl_shape_make(1, 3), 2, 0,
                       "cat: input 1 (b) has shape [3], input 0 has [3,3]; all dimensions but axis 0 must match");
    check_concat_error("dtypes differ", shape2(3, 3), FL_INT32, shape2(3, 3), 2, 0,
                       "cat: inputs mix float32 and int32");
    check_concat_error("axis out of range", shape2(3, 3), FL_FLOAT32, shape2(3, 3), 2, 2,
                       "cat: axis 2 is out of range for a rank-2 input (use -2 to 1)");
    check_concat_error("no inputs", shape2(3, 3), FL_FLOAT32, shape2(3, 3), 0, 0,
                       "cat: concat needs at least one input");
    check_concat_error("scalars", fl_shape_make(0), FL_FLOAT32, fl_shape_make(0), 2, 0,
                       "cat: a scalar has no axis 0");
}

/* ---- Slice and Split ---- */

static void test_slice(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, shape2(-1, 4), "x");
    fl_node *middle = fl_slice(g, x, 1, 1, 2, NULL);
    fl_node *last = fl_slice(g, x, -1, 3, 1, NULL);
    fl_node *rows = fl_slice(g, x, 0, 1, 2, "rows");
    ok(has_shape(middle, "[?,2]") && has_shape(rows, "[2,4]"), "slice shapes at build time");
    fl_tensor *value = iota(shape2(3, 4), 0, 1);
    ok(values_match(run1(g, middle, x, value), FL_FLOAT32, shape2(3, 2), (float[]){1, 2, 5, 6, 9, 10}),
       "columns 1 and 2");
    ok(values_match(run1(g, last, x, value), FL_FLOAT32, shape2(3, 1), (float[]){3, 7, 11}),
       "axis -1, the last column");
    ok(values_match(run1(g, rows, x, value), FL_FLOAT32, shape2(2, 4),
                    (float[]){4, 5, 6, 7, 8, 9, 10, 11}),
       "rows 1 and 2 of a fed batch");
    fl_tensor_free(value);

    value = iota(shape2(1, 4), 0, 1);
    char error[FL_ERROR_LEN] = "";
    ok(run_fed(g, rows, &x, &value, 1, error) == NULL, "a window past the fed batch fails");
    is_string(error, "rows: the window [1, 3) does not fit axis 0 of size 1",
              "the run-time error says why");
    fl_tensor_free(value);

    ok(fl_slice(g, x, 1, 3, 2, "wide") == NULL, "a window past a known size fails to build");
    is_string(fl_graph_error(g), "wide: the window [3, 5) does not fit axis 1 of size 4",
              "the build-time error says why");
    fl_graph_clear_error(g);
    ok(fl_slice(g, x, 1, -1, 2, "neg") == NULL, "a negative begin fails to build");
    is_string(fl_graph_error(g), "neg: begin -1 and size 2 must not be negative", "and says so");
    fl_graph_free(g);
}

/* [?,28,28,1] split across towers: the parts' batch is known only when fed. */
static void test_split(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 2, 2, 1), "images");
    fl_node *parts[2] = {NULL, NULL};
    ok(fl_split(g, x, 2, 0, parts, NULL) == 0, "split a [?,2,2,1] batch in two");
    ok(has_shape(parts[0], "[?,2,2,1]") && has_shape(parts[1], "[?,2,2,1]"),
       "the parts' batch is unknown at build time");
    is_string(parts[1] ? fl_node_name(parts[1]) : NULL, "split_1", "parts are named split, split_1");
    fl_tensor *value = iota(fl_shape_make(4, 4, 2, 2, 1), 0, 1);
    ok(values_match(run1(g, parts[1], x, value), FL_FLOAT32, fl_shape_make(4, 2, 2, 2, 1),
                    (float[]){8, 9, 10, 11, 12, 13, 14, 15}),
       "part 1 of a fed batch of 4 is examples 2 and 3");
    fl_tensor_free(value);

    value = iota(fl_shape_make(4, 3, 2, 2, 1), 0, 1);
    char error[FL_ERROR_LEN] = "";
    ok(run_fed(g, parts[0], &x, &value, 1, error) == NULL, "a batch of 3 cannot be split in two");
    is_string(error, "split: cannot split axis 0 of size 3 into 2 equal parts",
              "the run-time error says why");
    fl_tensor_free(value);

    fl_node *y = fl_placeholder(g, FL_FLOAT32, shape2(2, 6), "y");
    fl_node *thirds[3];
    ok(fl_split(g, y, 3, -1, thirds, "col") == 0, "split [2,6] in three on axis -1");
    ok(has_shape(thirds[2], "[2,2]"), "each third is [2,2]");
    value = iota(shape2(2, 6), 0, 1);
    ok(values_match(run1(g, thirds[2], y, value), FL_FLOAT32, shape2(2, 2), (float[]){4, 5, 10, 11}),
       "the last third");
    fl_tensor_free(value);
    fl_node *fifths[5];
    ok(fl_split(g, y, 5, 1, fifths, "five") == -1 && fifths[0] == NULL && fifths[4] == NULL,
       "6 columns do not split in 5; every part is NULL");
    is_string(fl_graph_error(g), "five: cannot split axis 1 of size 6 into 5 equal parts",
              "the build-time error says why");
    fl_graph_clear_error(g);
    ok(fl_split(g, y, 0, 1, fifths, NULL) == -1, "num 0 is refused");
    is_string(fl_graph_error(g), "split: split needs num >= 1 and an output array", "and says so");
    fl_graph_free(g);
}

/* ---- Identity, StopGradient, Cast ---- */

static void test_identity_and_cast(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 6), "x");
    fl_node *same = fl_identity(g, x, NULL), *stopped = fl_stop_gradient(g, x, NULL);
    fl_node *to_int = fl_cast(g, x, FL_INT32, NULL);
    fl_node *back = fl_cast(g, to_int, FL_FLOAT32, NULL);
    fl_tensor *value = fl_tensor_from_floats(fl_shape_make(1, 6), (float[]){1.7f, -1.7f, 2.5f, -0.5f, 3e9f, -3e9f});
    ok(values_match(run1(g, same, x, value), FL_FLOAT32, fl_shape_make(1, 6),
                    (float[]){1.7f, -1.7f, 2.5f, -0.5f, 3e9f, -3e9f}),
       "identity passes values through");
    ok(values_match(run1(g, stopped, x, value), FL_FLOAT32, fl_shape_make(1, 6),
                    (float[]){1.7f, -1.7f, 2.5f, -0.5f, 3e9f, -3e9f}),
       "stop_gradient passes values through");
    ok(fl_node_dtype(to_int) == FL_INT32, "cast to int32 is int32");
    ok(values_match(run1(g, to_int, x, value), FL_INT32, fl_shape_make(1, 6),
                    (float[]){1, -1, 2, 0, 2147483647.0f, -2147483648.0f}),
       "float32 to int32 truncates toward zero and saturates out of range");
    ok(values_match(run1(g, back, x, value), FL_FLOAT32, fl_shape_make(1, 6),
                    (float[]){1, -1, 2, 0, 2147483648.0f, -2147483648.0f}),
       "and back to float32");
    fl_tensor_free(value);
    ok(fl_cast(g, x, (fl_dtype)7, NULL) == NULL, "an unknown dtype is refused");
    is_string(fl_graph_error(g), "Cast: unknown dtype 7", "and says so");
    bool copy_op = false;
    for (int op = 0; op < FL_OP_COUNT; op++)
        copy_op = copy_op || strcmp(fl_op_def_of((fl_op_kind)op)->type, "Copy") == 0;
    ok(!copy_op, "no op is a Copy: the session copies values across devices, the graph never does");
    ok(fl_op_def_of(FL_OP_IDENTITY)->sig.aliases == FL_ALIAS_RENAMES_INPUT0 &&
           fl_op_def_of(FL_OP_RESHAPE)->sig.aliases == FL_ALIAS_RENAMES_INPUT0 &&
           fl_op_def_of(FL_OP_STOP_GRADIENT)->sig.aliases == FL_ALIAS_RENAMES_INPUT0,
       "Identity, StopGradient and Reshape rename their input");
    fl_graph_free(g);
}

/* ---- ArgMax and Equal ---- */

static void test_argmax(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, shape2(-1, 3), "logits");
    fl_node *per_row = fl_argmax(g, x, 1, NULL), *per_col = fl_argmax(g, x, 0, NULL);
    fl_node *last = fl_argmax(g, x, -1, NULL);
    ok(has_shape(per_row, "[?]") && has_shape(per_col, "[3]"), "argmax removes its axis");
    ok(fl_node_dtype(per_row) == FL_INT32, "argmax is int32");
    fl_tensor *value = fl_tensor_from_floats(shape2(2, 3), (float[]){1, 3, 3, 5, 0, -2});
    ok(values_match(run1(g, per_row, x, value), FL_INT32, fl_shape_make(1, 2), (float[]){1, 0}),
       "per row; of two equal maxima the first wins");
    ok(values_match(run1(g, last, x, value), FL_INT32, fl_shape_make(1, 2), (float[]){1, 0}),
       "axis -1 is the last axis");
    ok(values_match(run1(g, per_col, x, value), FL_INT32, fl_shape_make(1, 3), (float[]){1, 0, 0}),
       "per column");
    fl_tensor_free(value);
    fl_node *ints = constant(g, fl_tensor_from_ints(fl_shape_make(1, 4), (int32_t[]){-5, 9, -9, 9}), "i");
    ok(values_match(run1(g, fl_argmax(g, ints, 0, NULL), NULL, NULL), FL_INT32, fl_shape_make(0),
                    (float[]){1}),
       "argmax of an int32 vector is a scalar");
    ok(fl_argmax(g, x, 2, NULL) == NULL, "axis 2 of a matrix is refused");
    is_string(fl_graph_error(g), "ArgMax: axis 2 is out of range for a rank-2 input (use -2 to 1)",
              "and says so");
    fl_graph_clear_error(g);
    fl_node *empty = fl_placeholder(g, FL_FLOAT32, shape2(2, 0), "empty");
    ok(fl_argmax(g, empty, 1, "am") == NULL, "an empty axis is refused");
    is_string(fl_graph_error(g), "am: argmax over axis 1, which is empty", "and says so");
    fl_graph_free(g);
}

static void test_equal(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *a = fl_placeholder(g, FL_FLOAT32, shape2(-1, 3), "a");
    fl_node *b = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 3), "b");
    fl_node *eq = fl_equal(g, a, b, NULL);
    ok(has_shape(eq, "[?,3]") && fl_node_dtype(eq) == FL_INT32, "equal broadcasts [3] against [?,3], int32");
    fl_tensor *va = fl_tensor_from_floats(shape2(2, 3), (float[]){1, 2, 3, 1, 0, 3});
    fl_tensor *vb = fl_tensor_from_floats(fl_shape_make(1, 3), (float[]){1, 2, 4});
    fl_node *nodes[2] = {a, b};
    fl_tensor *values[2] = {va, vb};
    ok(values_match(run_fed(g, eq, nodes, values, 2, NULL), FL_INT32, shape2(2, 3),
                    (float[]){1, 1, 0, 1, 0, 0}),
       "1 where equal, else 0");
    fl_tensor_free(va);
    fl_tensor_free(vb);

    /* Accuracy, the way a lab computes it. */
    fl_node *logits = constant(g, fl_tensor_from_floats(shape2(4, 2), (float[]){0, 1, 2, 1, 3, 4, 0, -1}), "l");
    fl_node *labels = constant(g, fl_tensor_from_ints(fl_shape_make(1, 4), (int32_t[]){1, 0, 0, 0}), "y");
    fl_node *correct = fl_equal(g, fl_argmax(g, logits, 1, NULL), labels, NULL);
    fl_node *accuracy = fl_reduce_mean(g, fl_cast(g, correct, FL_FLOAT32, NULL), NULL, 0, false, NULL);
    ok(values_match(run1(g, accuracy, NULL, NULL), FL_FLOAT32, fl_shape_make(0), (float[]){0.75f}),
       "accuracy: mean(cast(equal(argmax(logits), labels)))");

    ok(fl_equal(g, a, labels, "mixed") == NULL, "float32 against int32 is refused");
    is_string(fl_graph_error(g), "mixed: inputs are float32 and int32; cast one with fl_cast", "and says so");
    fl_graph_clear_error(g);
    ok(fl_equal(g, a, fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 2), "c"), "eq") == NULL,
       "[2] against [?,3] is refused");
    is_string(fl_graph_error(g),
              "eq: shapes [?,3] and [2] do not broadcast (one must be a scalar or match the other's last dimensions)",
              "and says so");
    fl_graph_free(g);
}

/* ---- gradients ---- */

typedef enum { RESHAPE, CONCAT3, SLICE, SPLIT, IDENTITY, CAST_FLOAT } array_op;

static fl_node *build_array(fl_graph *g, fl_node **xs, void *user)
{
    fl_node *parts[3];
    switch (*(const array_op *)user) {
    case RESHAPE: return fl_reshape(g, xs[0], fl_shape_make(3, 2, -1, 3), NULL);
    case CONCAT3: return fl_concat(g, xs, 3, 1, NULL);
    case SLICE: return fl_slice(g, xs[0], 1, 1, 2, NULL);
    case SPLIT: /* every part used, one of them twice */
        fl_split(g, xs[0], 3, 0, parts, NULL);
        return fl_add(g, fl_mul(g, parts[0], parts[1], NULL), fl_mul(g, parts[2], parts[2], NULL), NULL);
    case IDENTITY: return fl_mul(g, fl_identity(g, xs[0], NULL), xs[0], NULL);
    default: return fl_cast(g, fl_mul(g, xs[0], xs[0], NULL), FL_FLOAT32, NULL);
    }
}

static void test_gradchecks(void)
{
    array_op op = RESHAPE;
    fl_tensor *x = gc_random(fl_shape_make(3, 2, 3, 2), -1, 1, 11);
    gradcheck("reshape [2,3,2] to [2,-1,3]", build_array, &op, 1, &x, 1e-3);
    fl_tensor_free(x);

    op = CONCAT3;
    fl_tensor *xs[3] = {gc_random(shape2(2, 1), -1, 1, 1), gc_random(shape2(2, 3), -1, 1, 2),
                        gc_random(shape2(2, 2), -1, 1, 3)};
    gradcheck("concat [2,1], [2,3], [2,2] on axis 1", build_array, &op, 3, xs, 1e-3);
    for (int i = 0; i < 3; i++)
        fl_tensor_free(xs[i]);

    const struct {
        array_op op;
        const char *what;
        fl_shape shape;
    } unary[] = {
        {SLICE, "slice columns 1..2 of [3,4]", {2, {3, 4}}},
        {SPLIT, "split [6,2] in three, parts multiplied", {2, {6, 2}}},
        {IDENTITY, "identity(x) * x", {2, {2, 3}}},
        {CAST_FLOAT, "cast float32 to float32", {2, {2, 3}}},
    };
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        op = unary[i].op;
        x = gc_random(unary[i].shape, -1, 1, 20 + (unsigned)i);
        gradcheck(unary[i].what, build_array, &op, 1, &x, 1e-3);
        fl_tensor_free(x);
    }
}

/* Runs d loss / d x for x fed value; checks against want (NULL: no gradient). */
static void check_gradient(const char *what, fl_graph *g, fl_node *loss, fl_node *x,
                           fl_tensor *value, const float *want)
{
    fl_node *dx = NULL;
    bool built = fl_gradients(g, loss, &x, 1, &dx) == 0;
    if (!built)
        diag("%s", fl_graph_error(g));
    if (!want) {
        ok(built && dx == NULL, "%s", what);
        return;
    }
    ok(built && values_match(run1(g, dx, x, value), FL_FLOAT32, value->shape, want), "%s", what);
}

static fl_node *sum_all(fl_graph *g, fl_node *x) { return fl_reduce_sum(g, x, NULL, 0, false, NULL); }

/* Concat of two [?,2] fed 1 and 3 rows: splitting dy in equal halves would
 * be wrong, and the run says so instead of returning a wrong gradient. */
static void test_unequal_parts(fl_graph *g, fl_node *x)
{
    fl_node *y = fl_placeholder(g, FL_FLOAT32, shape2(-1, 2), "y");
    fl_node *xy[2] = {x, y};
    fl_node *dx = NULL;
    ok(fl_gradients(g, sum_all(g, fl_concat(g, xy, 2, 0, NULL)), &x, 1, &dx) == 0 && dx,
       "the gradient of a concat of two [?,2] builds");
    fl_tensor *values[2] = {iota(shape2(1, 2), 0, 1), iota(shape2(3, 2), 0, 1)};
    char error[FL_ERROR_LEN] = "", want[FL_ERROR_LEN] = "";
    ok(run_fed(g, dx, xy, values, 2, error) == NULL, "fed 1 and 3 rows, it fails at run time");
    snprintf(want, sizeof want, "%s: part 0 of 2 is 2 long on axis 0 but x is 1: Concat's gradient needs equal sizes where they are unknown at build time",
             dx ? fl_node_name(dx) : "?");
    is_string(error, want, "and says why");
    fl_tensor_free(values[0]);
    fl_tensor_free(values[1]);
}

static void test_gradient_flow(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, shape2(-1, 2), "x");
    fl_tensor *value = iota(shape2(2, 2), 1, 1);
    check_gradient("nothing flows through stop_gradient", g, sum_all(g, fl_stop_gradient(g, x, NULL)), x,
                   value, NULL);
    check_gradient("x * stop_gradient(x): d/dx is the stopped x", g,
                   sum_all(g, fl_mul(g, x, fl_stop_gradient(g, x, NULL), NULL)), x, value,
                   (float[]){1, 2, 3, 4});
    fl_node *through_int = fl_cast(g, fl_cast(g, x, FL_INT32, NULL), FL_FLOAT32, NULL);
    check_gradient("nothing flows through a cast to int32", g, sum_all(g, through_int), x, value, NULL);
    fl_node *hits = fl_cast(g, fl_equal(g, fl_argmax(g, x, 1, NULL), fl_argmax(g, x, 1, NULL), NULL),
                            FL_FLOAT32, NULL);
    check_gradient("nothing flows through argmax and equal", g, sum_all(g, hits), x, value, NULL);
    check_gradient("reshape of [?,2]: the gradient takes the fed shape", g,
                   sum_all(g, fl_mul(g, fl_reshape(g, x, fl_shape_make(1, -1), NULL), fl_reshape(g, x, fl_shape_make(1, -1), NULL), NULL)),
                   x, value, (float[]){2, 4, 6, 8});
    fl_node *both[2] = {x, fl_mul(g, x, x, NULL)};
    check_gradient("concat of two [?,2] on axis 0 splits dy at run time", g,
                   sum_all(g, fl_concat(g, both, 2, 0, NULL)), x, value, (float[]){3, 5, 7, 9});
    fl_node *parts[2];
    fl_split(g, x, 2, 0, parts, NULL);
    check_gradient("split of [?,2]: each part's gradient lands in its rows", g,
                   sum_all(g, fl_mul(g, parts[1], parts[1], NULL)), x, value, (float[]){0, 0, 6, 8});
    fl_tensor_free(value);

    test_unequal_parts(g, x);

    fl_node *fixed = fl_placeholder(g, FL_FLOAT32, shape2(3, 2), "fixed");
    fl_node *mixed[2] = {x, fixed};
    fl_node *dx = NULL;
    ok(fl_gradients(g, sum_all(g, fl_concat(g, mixed, 2, 0, "mixed")), &x, 1, &dx) == -1,
       "concat of [?,2] and [3,2] on axis 0 cannot be differentiated");
    is_string(fl_graph_error(g),
              "mixed: cannot split the gradient of Concat: the inputs' sizes on axis 0 differ and some are unknown at build time; give them known sizes",
              "and says why");
    fl_graph_free(g);
}

/* The size check every backend's Identity/Reshape/Copy kernel makes. */
static void test_copy_size_check(void)
{
    fl_tensor *six = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, 2, 3));
    fl_tensor *flat = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 6));
    fl_tensor *four = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 4));
    ok(fl_check_copy_size(six, flat) == 0, "a copy of [2,3] into [6] moves the same bytes");
    ok(fl_check_copy_size(six, four) == -1 && strcmp(fl_last_error(), "cannot copy [2,3] into [4]") == 0,
       "a copy of [2,3] into [4] is refused, naming both shapes: %s", fl_last_error());
    fl_tensor_free(six);
    fl_tensor_free(flat);
    fl_tensor_free(four);
}

int main(void)
{
    test_copy_size_check();
    test_reshape();
    test_reshape_errors();
    test_tensor_reshape();
    test_concat();
    test_concat_errors();
    test_slice();
    test_split();
    test_identity_and_cast();
    test_argmax();
    test_equal();
    test_gradchecks();
    test_gradient_flow();
    return done_testing();
}
