/* schedule_memory.c: a reference solution of exercise schedule-memory. */
#include "exercises.h"

/* GPipe holds every micro-batch until the backward passes begin; 1F1B lets
 * stage s start stages - s before the first comes back; recomputation keeps
 * their inputs and one micro-batch's activations, rebuilt. */
double my_held_bytes(int stages, int micro_batches, int s, double activations, double input, bool one_f_one_b,
                     bool recompute)
{
    int in_flight = micro_batches;
    if (one_f_one_b && stages - s < micro_batches)
        in_flight = stages - s;
    if (!recompute)
        return in_flight * activations;
    return in_flight * input + (activations - input);
}
