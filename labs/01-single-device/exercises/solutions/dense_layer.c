/* solutions/dense_layer.c: a reference answer to exercise dense-layer. */
#include "exercises.h"

fl_node *my_dense(fl_graph *g, fl_node *x, int units, bool relu, const char *scope)
{
    int in = fl_node_shape(x).dims[1];
    fl_variable_scope_push(g, scope, FL_REUSE_INHERIT);
    fl_node *w = fl_get_variable(g, "kernel", fl_shape_make(2, in, units),
                                 fl_glorot_uniform_initializer(0));
    fl_node *b = fl_get_variable(g, "bias", fl_shape_make(1, units), fl_zeros_initializer());
    fl_variable_scope_pop(g);
    fl_node *y = fl_add(g, fl_matmul(g, x, w, false, false, NULL), b, NULL);
    return relu ? fl_relu(g, y, NULL) : y;
}
