/* accumulator.c: exercise accumulator. Write my_gradient_arrives (see
 * exercises.h): the decision a ps makes, per variable, for every gradient a
 * worker sends under synchronous training.
 *
 * Hints: check the stale case first, and change nothing when it holds.
 * Then hold the gradient (a real ps adds it to a sum; here you only count
 * it) and see whether enough have come for the chief's take.
 *
 * The question the check cannot ask: with three workers and
 * replicas_to_aggregate 2, the slowest worker's gradient for every step
 * arrives after the step was applied. What does the ps do with it, and why
 * is that better than waiting for it? What would happen to the model if
 * the ps applied it anyway, one step late?
 *
 * Check your work: make exercises */
#include "exercises.h"

gradient_fate my_gradient_arrives(accumulator *a, uint64_t local_step, int replicas_to_aggregate)
{
    (void)a, (void)local_step, (void)replicas_to_aggregate;
    return (gradient_fate)-1; /* TODO: your code here */
}
