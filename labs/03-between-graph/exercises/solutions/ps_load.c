/* solutions/ps_load.c: a reference answer to exercise ps-load. */
#include "exercises.h"

/* The task holding the fewest bytes; the lowest index on a tie. */
static int least_loaded(const int64_t *bytes, int num_ps)
{
    int best = 0;
    for (int k = 1; k < num_ps; k++)
        if (bytes[k] < bytes[best])
            best = k;
    return best;
}

int my_ps_load(const fl_shape *shapes, int nvars, int num_ps, fl_ps_strategy strategy,
               int64_t *bytes)
{
    if (num_ps < 1 || (strategy != FL_PS_ROUND_ROBIN && strategy != FL_PS_GREEDY_BY_BYTES))
        return -1;
    for (int k = 0; k < num_ps; k++)
        bytes[k] = 0;
    for (int v = 0; v < nvars; v++) {
        int task = strategy == FL_PS_ROUND_ROBIN ? v % num_ps : least_loaded(bytes, num_ps);
        bytes[task] += 4 * fl_shape_size(shapes[v]);
    }
    return 0;
}
