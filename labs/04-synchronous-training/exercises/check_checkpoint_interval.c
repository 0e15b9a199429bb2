/* check_checkpoint_interval.c: checks my_expected_waste and
 * my_best_save_every (exercise checkpoint-interval): the waste of a few
 * intervals worked by hand, the best interval against every interval tried
 * in turn (with max_steps cutting it short, and a save dearer than the time
 * between failures), and arguments that make no sense. */
#include "exercises.h"
#include "../../common/check.h"

static const struct {
    double step_s, save_s, mtbf_s;
    long save_every;
    double waste;
} wastes[] = {
    {1, 2, 10000, 100, 0.02 + 0.005},  /* 2 s a save per 100 s; half of 100 s per 10,000 s */
    {1, 2, 10000, 200, 0.01 + 0.01},   /* Young's interval: the two shares equal */
    {0.5, 3, 86400, 1000, 0.006 + 500.0 / 172800},
    {2, 1, 100, 1, 0.5 + 0.01},
};

static const struct {
    double step_s, save_s, mtbf_s;
    long max_steps;
} searches[] = {
    {1, 2, 10000, 100000},   /* 200 */
    {1, 2, 10000, 150},      /* cut short: 150 */
    {0.5, 3, 86400, 100000}, /* about 1440 */
    {0.37, 2.1, 86400, 100000},
    {0.2, 40, 30, 1000},     /* a save dearer than the time between failures: 1 */
    {3, 0.01, 1e7, 50},
};

static double waste(double step_s, double save_s, double mtbf_s, long n)
{
    return save_s / ((double)n * step_s) + (double)n * step_s / (2 * mtbf_s);
}

static void check_wastes(void)
{
    for (int i = 0; i < (int)(sizeof wastes / sizeof wastes[0]); i++) {
        double got = my_expected_waste(wastes[i].step_s, wastes[i].save_s, wastes[i].mtbf_s, wastes[i].save_every);
        if (got == -2 && i == 0)
            fail("not implemented yet (my_expected_waste returned -2)");
        if (fabs(got - wastes[i].waste) > 1e-9)
            fail("a %g s step, a %g s save, a failure every %g s, saving every %ld steps wastes %.6f of the time; "
                 "you said %.6f", wastes[i].step_s, wastes[i].save_s, wastes[i].mtbf_s, wastes[i].save_every,
                 wastes[i].waste, got);
    }
}

/* The best N, found by trying every N in turn. */
static long best_by_trying(double step_s, double save_s, double mtbf_s, long max_steps)
{
    long best = 1;
    for (long n = 2; n <= max_steps; n++)
        if (waste(step_s, save_s, mtbf_s, n) < waste(step_s, save_s, mtbf_s, best))
            best = n;
    return best;
}

static void check_searches(void)
{
    for (int i = 0; i < (int)(sizeof searches / sizeof searches[0]); i++) {
        double step = searches[i].step_s, save = searches[i].save_s, mtbf = searches[i].mtbf_s;
        long want = best_by_trying(step, save, mtbf, searches[i].max_steps);
        long got = my_best_save_every(step, save, mtbf, searches[i].max_steps);
        if (got == -2)
            fail("not implemented yet (my_best_save_every returned -2)");
        if (got != want)
            fail("a %g s step, a %g s save, a failure every %g s, at most %ld steps: the least waste is saving "
                 "every %ld steps (%.6f); you said %ld (%.6f)", step, save, mtbf, searches[i].max_steps, want,
                 waste(step, save, mtbf, want), got, got >= 1 ? waste(step, save, mtbf, got) : -1.0);
    }
}

static void check_refused(void)
{
    double w[] = {my_expected_waste(0, 2, 100, 10), my_expected_waste(1, 0, 100, 10),
                  my_expected_waste(1, 2, -5, 10), my_expected_waste(1, 2, 100, 0)};
    long n[] = {my_best_save_every(0, 2, 100, 10), my_best_save_every(1, -2, 100, 10),
                my_best_save_every(1, 2, 0, 10), my_best_save_every(1, 2, 100, 0)};
    const char *why[] = {"a step of 0 s", "a save of no time", "no time between failures", "N or max_steps 0"};
    for (int i = 0; i < 4; i++)
        if (w[i] != -1 || n[i] != -1)
            fail("%s makes no sense: both functions return -1 (you returned %g and %ld)", why[i], w[i], n[i]);
}

int main(void)
{
    check_start("checkpoint-interval", "labs/04-synchronous-training/exercises/checkpoint_interval.c");
    check_wastes();
    check_searches();
    check_refused();
    pass();
}
