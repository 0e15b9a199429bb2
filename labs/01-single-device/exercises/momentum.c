/* momentum.c: exercise momentum-update. Write my_momentum_update (see
 * exercises.h) without fl_momentum_optimizer: it is the answer key.
 *
 * Hints: a variable scope named after the variable
 * (fl_variable_scope_push(g, fl_node_name(var), FL_AUTO_REUSE)) gives the slot
 * the name "<var>/Momentum". fl_scalar makes a constant; fl_assign writes a
 * variable and its output is the new value, so an op that takes the assign
 * as input runs after the write. fl_assign_add adds to a variable.
 *
 * Check your work: make exercises */
#include "exercises.h"

fl_node *my_momentum_update(fl_graph *g, fl_node *var, fl_node *grad, float learning_rate,
                            float momentum)
{
    (void)g, (void)var, (void)grad, (void)learning_rate, (void)momentum;
    return NULL; /* TODO: your code here */
}
