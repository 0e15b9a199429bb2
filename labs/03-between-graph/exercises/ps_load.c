/* ps_load.c: exercise ps-load. Write my_ps_load (see exercises.h): each ps
 * task's bytes under round-robin and under greedy-by-bytes placement.
 *
 * Hints: fl_shape_size(shape) is the number of elements. Work out the
 * chapter 1 model by hand first (conv_1 kernel [5,5,1,32] and bias [32],
 * conv_2 [5,5,32,64] and [64], dense_1 [3136,1024] and [1024], dense_2
 * [1024,10] and [10]) for 2 ps tasks, then let the check tell you.
 *
 * The question the check cannot ask: with greedy-by-bytes and 2 ps tasks,
 * dense_1's kernel (3136 x 1024 x 4 bytes = 12.8 MB) lands on task 0 and
 * every variable created after it goes to task 1, so task 0 ends with the
 * kernel and the 3.5 KB placed before it, task 1 with 0.25 MB. Why does
 * greedy never put anything beside the kernel afterwards, and why is that
 * still better than round-robin here? Can any placement of whole variables
 * make the busiest ps task hold less than 12.8 MB? That task sends the
 * kernel to every worker and receives its gradient from every worker at
 * every step: what would you change in the model to share that load out?
 *
 * Check your work: make exercises */
#include "exercises.h"

int my_ps_load(const fl_shape *shapes, int nvars, int num_ps, fl_ps_strategy strategy,
               int64_t *bytes)
{
    (void)shapes, (void)nvars, (void)num_ps, (void)strategy, (void)bytes;
    return -1; /* TODO: your code here */
}
