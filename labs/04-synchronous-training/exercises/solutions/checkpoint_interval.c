/* solutions/checkpoint_interval.c: a reference answer to exercise
 * checkpoint-interval. */
#include <math.h>

#include "exercises.h"

double my_expected_waste(double step_s, double save_s, double mtbf_s, long save_every)
{
    if (!(step_s > 0 && save_s > 0 && mtbf_s > 0) || save_every < 1)
        return -1;
    double interval_s = (double)save_every * step_s;
    return save_s / interval_s + interval_s / (2 * mtbf_s);
}

/* The waste is convex in N: the best whole N is one of the two around
 * Young's interval, sqrt(2 save_s mtbf_s), kept within 1 .. max_steps. */
long my_best_save_every(double step_s, double save_s, double mtbf_s, long max_steps)
{
    if (!(step_s > 0 && save_s > 0 && mtbf_s > 0) || max_steps < 1)
        return -1;
    double young = sqrt(2 * save_s * mtbf_s) / step_s;
    long below = young < 1 ? 1 : young > (double)max_steps ? max_steps : (long)floor(young);
    long above = below < max_steps ? below + 1 : below;
    double waste_below = my_expected_waste(step_s, save_s, mtbf_s, below);
    return my_expected_waste(step_s, save_s, mtbf_s, above) < waste_below ? above : below;
}
