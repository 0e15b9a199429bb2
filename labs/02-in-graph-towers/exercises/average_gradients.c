/* average_gradients.c: exercise average-gradients. Write my_average_gradients
 * (see exercises.h).
 *
 * Hints: fl_add_n adds a list of nodes; fl_div by fl_scalar(g, n, NULL)
 * divides. Divide by the number of gradients you added, not by ntowers,
 * when some are NULL. The variable of out[v] is the same in every tower;
 * take tower 0's.
 *
 * Check your work: make exercises */
#include "exercises.h"

int my_average_gradients(fl_graph *g, fl_grad_var tower_grads[][EX_MAX_VARS], int ntowers,
                         int nvars, fl_grad_var *out)
{
    (void)g, (void)tower_grads, (void)ntowers, (void)nvars, (void)out;
    return -1; /* TODO: your code here */
}
