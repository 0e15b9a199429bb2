/* dense_layer.c: exercise dense-layer. Write my_dense (see exercises.h).
 *
 * Hints: the number of input features is fl_node_shape(x).dims[1]. Open the
 * variable scope with fl_variable_scope_push(g, scope, FL_REUSE_INHERIT) and
 * close it with fl_variable_scope_pop. A kernel that starts at zero keeps
 * every unit identical forever; fl_glorot_uniform_initializer(0) does not.
 *
 * Check your work: make exercises */
#include "exercises.h"

fl_node *my_dense(fl_graph *g, fl_node *x, int units, bool relu, const char *scope)
{
    (void)g, (void)x, (void)units, (void)relu, (void)scope;
    return NULL; /* TODO: your code here */
}
