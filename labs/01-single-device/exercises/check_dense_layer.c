/* check_dense_layer.c: checks my_dense (exercise dense-layer). It builds two
 * layers, looks for their variables by name and shape, sets them to known
 * values and compares the outputs with x W + b computed here by hand. */
#include "exercises.h"
#include "../../common/check.h"

static fl_node *find_variable(fl_graph *g, const char *name, fl_shape want)
{
    char have[32], expected[32];
    fl_node *v = fl_graph_find(g, name);
    if (!v || strcmp(fl_node_op_type(v), "VariableV2") != 0)
        fail("no variable named %s; create it with fl_get_variable inside the variable scope",
             name);
    if (!fl_shape_equal(fl_node_shape(v), want))
        fail("%s has shape %s; it should be %s", name,
             fl_shape_format(fl_node_shape(v), have, sizeof have),
             fl_shape_format(want, expected, sizeof expected));
    return v;
}

int main(void)
{
    check_start("dense-layer", "labs/01-single-device/exercises/dense_layer.c");
    fl_graph *g = fl_graph_new();
    fl_graph_set_random_seed(g, 1);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    fl_node *y = my_dense(g, x, 2, false, "layer");
    if (!y && !fl_graph_error(g))
        fail("not implemented yet (my_dense returned NULL)");
    check_graph(g);
    fl_node *z = my_dense(g, x, 2, true, "relu_layer");
    check_graph(g);
    if (!z)
        fail("my_dense returned NULL for a second layer");
    char buf[32];
    if (!fl_shape_equal(fl_node_shape(y), fl_shape_make(2, -1, 2)))
        fail("the output has shape %s; for x [?,3] and 2 units it should be [?,2]",
             fl_shape_format(fl_node_shape(y), buf, sizeof buf));
    fl_node *w = find_variable(g, "layer/kernel", fl_shape_make(2, 3, 2));
    fl_node *b = find_variable(g, "layer/bias", fl_shape_make(1, 2));
    fl_node *w2 = find_variable(g, "relu_layer/kernel", fl_shape_make(2, 3, 2));
    fl_node *b2 = find_variable(g, "relu_layer/bias", fl_shape_make(1, 2));
    if (fl_trainable_variables(g, NULL, 0) != 4)
        fail("the two layers made %d trainable variables; they should make 4 (a kernel and a bias each)",
             fl_trainable_variables(g, NULL, 0));

    fl_node *init = fl_global_variables_initializer(g);
    fl_session *s = fl_session_new(g, NULL);
    run(s, NULL, 0, NULL, init);
    fl_tensor *w0 = run(s, NULL, 0, w, NULL);
    bool all_zero = true;
    for (int i = 0; i < 6; i++)
        all_zero = all_zero && fl_tensor_floats(w0)[i] == 0.0f;
    fl_tensor_free(w0);
    if (all_zero)
        fail("layer/kernel starts as all zeros, so every unit would learn the same thing; "
             "use a random initializer such as fl_glorot_uniform_initializer(0)");
    fl_tensor *b0 = run(s, NULL, 0, b, NULL);
    if (fl_tensor_floats(b0)[0] != 0.0f || fl_tensor_floats(b0)[1] != 0.0f)
        fail("layer/bias should start at zero (fl_zeros_initializer)");
    fl_tensor_free(b0);

    /* Known weights: both layers share them, so relu_layer = relu(layer). */
    const float wv[6] = {1, -2, 0.5f, 1, -1, 0.25f}, bv[2] = {0.5f, -1};
    const float xv[6] = {1, 2, 3, -1, 0, 2};
    fl_tensor *wt = fl_tensor_from_floats(fl_shape_make(2, 3, 2), wv);
    fl_tensor *bt = fl_tensor_from_floats(fl_shape_make(1, 2), bv);
    fl_node *set[4] = {fl_assign(g, w, fl_constant(g, wt, NULL), NULL),
                       fl_assign(g, b, fl_constant(g, bt, NULL), NULL),
                       fl_assign(g, w2, fl_constant(g, wt, NULL), NULL),
                       fl_assign(g, b2, fl_constant(g, bt, NULL), NULL)};
    fl_node *set_all = fl_group(g, set, 4, NULL);
    check_graph(g);
    run(s, NULL, 0, NULL, set_all);
    fl_tensor *xt = fl_tensor_from_floats(fl_shape_make(2, 2, 3), xv);
    fl_feed feed = {x, xt};
    fl_tensor *yt = run(s, &feed, 1, y, NULL);
    fl_tensor *zt = run(s, &feed, 1, z, NULL);
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 2; j++) {
            float want = bv[j];
            for (int k = 0; k < 3; k++)
                want += xv[n * 3 + k] * wv[k * 2 + j];
            float got = fl_tensor_floats(yt)[n * 2 + j], got_relu = fl_tensor_floats(zt)[n * 2 + j];
            if (fabsf(got - want) > 1e-5f)
                fail("y[%d][%d] is %g but x W + b is %g; is W [in,units] and multiplied on the "
                     "right (fl_matmul(g, x, w, false, false, NULL))?", n, j, got, want);
            float want_relu = want > 0 ? want : 0;
            if (fabsf(got_relu - want_relu) > 1e-5f)
                fail("with relu true, y[%d][%d] is %g but relu(x W + b) is %g", n, j, got_relu,
                     want_relu);
        }
    fl_tensor_free(yt);
    fl_tensor_free(zt);
    fl_tensor_free(xt);
    fl_tensor_free(wt);
    fl_tensor_free(bt);
    fl_session_free(s);
    fl_graph_free(g);
    pass();
}
