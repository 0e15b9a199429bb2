/* solutions/accumulator.c: a reference answer to exercise accumulator. */
#include "exercises.h"

gradient_fate my_gradient_arrives(accumulator *a, uint64_t step, int replicas_to_aggregate)
{
    if (a->has_run && step <= a->last_run)
        return GRADIENT_STALE; /* its step was applied without it */
    if (a->count > 0 && step < a->step)
        return GRADIENT_STALE; /* older than the step being gathered */
    if (a->count > 0 && step > a->step)
        a->count = 0; /* the held step will never complete: give way */
    if (a->count++ == 0)
        a->step = step;
    if (a->count < replicas_to_aggregate)
        return GRADIENT_HELD;
    a->has_run = true;
    a->last_run = step;
    a->count = 0;
    return GRADIENT_APPLIED;
}
