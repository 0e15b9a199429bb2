/* check_average_gradients.c: checks my_average_gradients (exercise
 * average-gradients). Three towers hand it known gradients for three
 * variables, some of them missing; it compares the averages with the means
 * computed here by hand. */
#include "exercises.h"
#include "../../common/check.h"

int main(void)
{
    check_start("average-gradients", "labs/02-in-graph-towers/exercises/average_gradients.c");
    fl_graph *g = fl_graph_new();
    fl_node *vars[3] = {
        fl_get_variable(g, "a", fl_shape_make(1, 2), fl_zeros_initializer()),
        fl_get_variable(g, "b", fl_shape_make(2, 2, 2), fl_zeros_initializer()),
        fl_get_variable(g, "c", fl_shape_make(1, 1), fl_zeros_initializer())};
    /* tower t's gradient for a is t+1 (and -t-1), for b is (t+1)*k; c has none;
     * tower 2 has no gradient for b. */
    fl_grad_var towers[3][EX_MAX_VARS];
    for (int t = 0; t < 3; t++) {
        const float av[2] = {(float)(t + 1), -(float)(t + 1)};
        const float bv[4] = {1.0f * (t + 1), 2.0f * (t + 1), 3.0f * (t + 1), 4.0f * (t + 1)};
        fl_tensor *at = fl_tensor_from_floats(fl_shape_make(1, 2), av);
        fl_tensor *bt = fl_tensor_from_floats(fl_shape_make(2, 2, 2), bv);
        towers[t][0] = (fl_grad_var){fl_constant(g, at, NULL), vars[0]};
        towers[t][1] = (fl_grad_var){t == 2 ? NULL : fl_constant(g, bt, NULL), vars[1]};
        towers[t][2] = (fl_grad_var){NULL, vars[2]};
        fl_tensor_free(at);
        fl_tensor_free(bt);
    }
    check_graph(g);
    fl_grad_var out[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    int rc = my_average_gradients(g, towers, 3, 3, out);
    if (rc != 0 && !fl_graph_error(g) && !out[0].grad)
        fail("not implemented yet (my_average_gradients returned %d)", rc);
    check_graph(g);
    if (rc != 0)
        fail("my_average_gradients returned %d for valid gradients", rc);
    for (int v = 0; v < 3; v++)
        if (out[v].var != vars[v])
            fail("out[%d].var is not the variable %s; pair each average with its variable", v,
                 fl_node_name(vars[v]));
    if (!out[0].grad || !out[1].grad)
        fail("out[0].grad or out[1].grad is NULL, but those variables have gradients");
    if (out[2].grad)
        fail("out[2].grad should stay NULL: no tower has a gradient for c");
    char buf[32];
    if (!fl_shape_equal(fl_node_shape(out[1].grad), fl_shape_make(2, 2, 2)))
        fail("the average for b has shape %s; it should keep the gradients' shape [2,2]",
             fl_shape_format(fl_node_shape(out[1].grad), buf, sizeof buf));

    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *a = run(s, NULL, 0, out[0].grad, NULL);
    fl_tensor *b = run(s, NULL, 0, out[1].grad, NULL);
    if (fabsf(fl_tensor_floats(a)[0] - 2.0f) > 1e-6f || fabsf(fl_tensor_floats(a)[1] + 2.0f) > 1e-6f)
        fail("the average of 1, 2 and 3 came out as %g (want 2); divide the sum by the number of "
             "towers", fl_tensor_floats(a)[0]);
    for (int i = 0; i < 4; i++)
        if (fabsf(fl_tensor_floats(b)[i] - 1.5f * (float)(i + 1)) > 1e-6f)
            fail("b's average element %d is %g; want %g (two towers have a gradient for b, so "
                 "divide by 2, not 3)", i, fl_tensor_floats(b)[i], 1.5 * (i + 1));
    fl_tensor_free(a);
    fl_tensor_free(b);
    fl_session_free(s);
    fl_graph_free(g);
    pass();
}
