/* checkpoint_interval.c: exercise checkpoint-interval. Write
 * my_expected_waste and my_best_save_every (see exercises.h): how often
 * the chief should save, given how often a ps fails.
 *
 * Hints: the waste falls and then rises as N grows; where does its
 * derivative in N vanish? The continuous answer is an interval of
 * sqrt(2 x save_s x mtbf_s) seconds (Young's rule, book/references.md); the
 * best whole N is next to it, and max_steps may cut it short. Work it by
 * hand for a 1 s step, a 2 s save and a failure every 10,000 s first.
 *
 * Questions the check cannot ask: (1) Why does saving more often not
 * always lose less? (2) If failures become four times rarer, how does the
 * best interval change, and the waste? (3) Measure chapter 4's step and
 * save times (the lab's log says both; a save pulls 39.3 MB from the ps)
 * and choose --save_every for a ps that fails once a day. (4) What does
 * the model leave out that a real cluster has?
 *
 * Check your work: make exercises */
#include "exercises.h"

double my_expected_waste(double step_s, double save_s, double mtbf_s, long save_every)
{
    (void)step_s, (void)save_s, (void)mtbf_s, (void)save_every;
    return -2; /* TODO: your code here */
}

long my_best_save_every(double step_s, double save_s, double mtbf_s, long max_steps)
{
    (void)step_s, (void)save_s, (void)mtbf_s, (void)max_steps;
    return -2; /* TODO: your code here */
}
