/* solutions/momentum.c: a reference answer to exercise momentum-update. */
#include "exercises.h"

fl_node *my_momentum_update(fl_graph *g, fl_node *var, fl_node *grad, float learning_rate,
                            float momentum)
{
    fl_variable_scope_push(g, fl_node_name(var), FL_AUTO_REUSE);
    fl_node *accum = fl_get_variable_typed(g, "Momentum", FL_FLOAT32, fl_node_shape(var),
                                           fl_zeros_initializer(), false);
    fl_variable_scope_pop(g);
    /* accum = momentum * accum + grad; the assign's output is the new accum */
    fl_node *new_accum = fl_assign(g, accum,
                                   fl_add(g, fl_mul(g, accum, fl_scalar(g, momentum, NULL), NULL),
                                          grad, NULL),
                                   NULL);
    /* var += -learning_rate * accum, reading accum after its write */
    return fl_assign_add(g, var, fl_mul(g, new_accum, fl_scalar(g, -learning_rate, NULL), NULL),
                         NULL);
}
