/* test_lab04_exercises.c: chapter 4's exercises, run as a student runs them
 * (the Makefile builds the checks first): each reference solution passes,
 * each exercise file's check fails naming the file to edit until solved; the
 * accumulator answer decides as a ps's real accumulator (accumulator.c) does, and the
 * checkpoint-interval answer's lost work is what steps-lost says a failure
 * costs on average. */
#include "flowlab.h"
#include "lab_runner.h"
#include "accumulator.h"
#include "solutions/accumulator.c" /* my_gradient_arrives, the reference answer */
#include "solutions/steps_lost.c"  /* my_steps_lost, the reference answer */
#include "solutions/checkpoint_interval.c" /* my_expected_waste, my_best_save_every */

#define SEQUENCES 200
#define ARRIVALS 40

/* One random sequence of gradients (local steps near the global step, as
 * workers of different speeds send them) through a real accumulator
 * (accumulator.c: an apply, then the chief's take of replicas_to_aggregate
 * when enough are held) and the exercise's; 0 when every decision agrees,
 * else the arrival that differed. */
static int compare_sequence(unsigned *seed, int replicas)
{
    fl_accumulator_set *set = fl_accumulator_set_new();
    fl_accumulator *real = fl_accumulator_find(set, "w/grad_accum", fl_shape_make(1, 2));
    fl_tensor *grad = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 2)), *mean = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 2));
    accumulator mine = {0};
    int differed = 0;
    for (int i = 0; i < ARRIVALS && !differed; i++) {
        int64_t global = fl_accumulator_read(real).global_step;
        int64_t step = global + (int64_t)(rand_r(seed) % 3) - 1; /* one step back, the same, or one ahead */
        step = step < 0 ? 0 : step;
        int stale = fl_accumulator_apply(real, step, grad, "AccumulatorApplyGradient");
        gradient_fate fate = stale == 1 ? GRADIENT_STALE : GRADIENT_HELD;
        if (stale == 0 && fl_accumulator_try_take(real, replicas, mean, "AccumulatorTakeGradient") == 1)
            fate = GRADIENT_APPLIED;
        if (stale < 0 || fate != my_gradient_arrives(&mine, (uint64_t)step, replicas))
            differed = i + 1;
    }
    fl_tensor_free(grad);
    fl_tensor_free(mean);
    fl_accumulator_set_free(set);
    return differed;
}

static void test_real_accumulators(void)
{
    unsigned seed = 4;
    int first_difference = 0, sequences = 0;
    for (int n = 0; n < SEQUENCES && !first_difference; n++, sequences++)
        first_difference = compare_sequence(&seed, 1 + n % 3);
    ok(first_difference == 0, "the accumulator answer decides as a real accumulator does in %d random sequences "
       "of %d gradients", sequences, ARRIVALS);
    if (first_difference)
        diag("sequence %d differed at gradient %d", sequences, first_difference);
}

/* A ps failure at a global step drawn evenly from a long run loses, on
 * average, what steps-lost says: (N-1)/2 steps with a save every N. The
 * checkpoint-interval model charges half an interval, N/2 steps: the two
 * agree to half a step, and its best N balances the two shares. */
static void test_waste_against_steps_lost(void)
{
    const long every = 40, run = 4000;
    double lost = 0;
    for (long died_at = 0; died_at < run; died_at++) {
        long restored;
        lost += (double)my_steps_lost(0, every, died_at, &restored);
    }
    double mean_lost = lost / run, step_s = 0.5, save_s = 2, mtbf_s = 3600;
    double modelled = (my_expected_waste(step_s, save_s, mtbf_s, every) - save_s / (every * step_s)) * mtbf_s / step_s;
    ok(fabs(mean_lost - modelled) <= 0.5 + 1e-9, "a failure loses %.2f steps on average with a save every %ld; the model "
       "charges %.2f", mean_lost, every, modelled);
    long best = my_best_save_every(step_s, save_s, mtbf_s, 100000);
    ok(best == 240, "a 0.5 s step, a 2 s save, a failure an hour: save every %ld steps (sqrt(2 x 2 x 3600) = 120 s)",
       best);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* Every check is built together; the first one stands for them all. */
    lab_runner_start(argv[0], "test_lab04_exercises", "exercises/04-synchronous-training/solutions/check_accumulator");
    static const char *const names[][2] = {{"accumulator", "accumulator"},
                                           {"steps_lost", "steps-lost"},
                                           {"checkpoint_interval", "checkpoint-interval"}};
    test_exercise_checks("04-synchronous-training", names, 3);
    test_real_accumulators();
    test_waste_against_steps_lost();
    lab_runner_finish();
    return done_testing();
}
