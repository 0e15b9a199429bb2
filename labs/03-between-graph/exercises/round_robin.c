/* round_robin.c: exercise round-robin. Write my_round_robin (see
 * exercises.h), the heart of TensorFlow's replica_device_setter.
 *
 * Hints: fl_node_op_type(node) is "VariableV2" for a variable. Keep the
 * count of variables in the ps_placement, not in a static variable: every
 * worker, and every graph, has its own. snprintf into placement->chosen.
 * Returning NULL leaves the choice to the device scopes outside; do not.
 *
 * Check your work: make exercises */
#include "exercises.h"

const char *my_round_robin(const fl_node *node, void *user)
{
    (void)node, (void)user;
    return NULL; /* TODO: your code here */
}
