/* solutions/average_gradients.c: a reference answer to exercise average-gradients. */
#include "exercises.h"

int my_average_gradients(fl_graph *g, fl_grad_var tower_grads[][EX_MAX_VARS], int ntowers,
                         int nvars, fl_grad_var *out)
{
    for (int v = 0; v < nvars; v++) {
        fl_node *grads[EX_MAX_TOWERS];
        int n = 0;
        for (int t = 0; t < ntowers; t++)
            if (tower_grads[t][v].grad)
                grads[n++] = tower_grads[t][v].grad;
        fl_node *mean = NULL;
        if (n > 0)
            mean = fl_div(g, fl_add_n(g, grads, n, NULL), fl_scalar(g, (float)n, NULL), NULL);
        out[v] = (fl_grad_var){mean, tower_grads[0][v].var};
    }
    return fl_graph_error(g) ? -1 : 0;
}
