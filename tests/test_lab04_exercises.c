/* test_lab04_exercises.c: chapter 4's exercises, run as a student runs them
 * (the Makefile builds the checks first): each reference solution passes,
 * each exercise file's check fails naming the file to edit until solved; the
 * accumulator answer decides as the ps's real accumulators do, and the
 * checkpoint-interval answer's lost work is what steps-lost says a failure
 * costs on average. */
#include "flowlab.h"
#include "lab_runner.h"
#include "distributed_runtime/ps/ps_sync.h"
#include "solutions/accumulator.c" /* my_gradient_arrives, the reference answer */
#include "solutions/steps_lost.c"  /* my_steps_lost, the reference answer */
#include "solutions/checkpoint_interval.c" /* my_expected_waste, my_best_save_every */

#define SEQUENCES 200
#define ARRIVALS 40

static gradient_fate fate_of(fl_wire_sync_outcome outcome)
{
    return outcome == FL_WIRE_SYNC_APPLIED ? GRADIENT_APPLIED
           : outcome == FL_WIRE_SYNC_DROPPED ? GRADIENT_STALE
                                            : GRADIENT_HELD;
}

/* One random sequence of gradients (steps near the last one, as workers of
 * different speeds send them) through a real ps accumulator and the
 * exercise's; 0 when every decision agrees, else the arrival that differed. */
static int compare_sequence(unsigned *seed, int replicas)
{
    fl_ps_store *store = fl_ps_store_new();
    fl_ps_sync *sync = fl_ps_sync_new(store);
    fl_tensor *w = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 2)), *grad = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 2));
    fl_status err = {0};
    fl_ps_store_init(store, "w", w, &err);
    fl_attrs attrs = {.learning_rate = 0.5f};
    const char *vars[1] = {"w"};
    accumulator mine = {0};
    uint64_t newest = 0;
    int differed = 0;
    for (int i = 0; i < ARRIVALS && !differed; i++) {
        uint64_t step = newest + (uint64_t)(rand_r(seed) % 3);
        step = step >= 1 ? step - 1 : 0; /* one step back, the same, or one ahead */
        newest = step > newest ? step : newest;
        fl_wire_sync s = {step, (uint32_t)replicas};
        fl_wire_sync_outcome outcome;
        if (fl_ps_sync_update(sync, FL_OP_APPLY_GRADIENT_DESCENT, &attrs, vars, 1, grad, &s, &outcome, &err) != 0 ||
            fate_of(outcome) != my_gradient_arrives(&mine, step, replicas))
            differed = i + 1;
    }
    fl_tensor_free(w);
    fl_tensor_free(grad);
    fl_ps_sync_free(sync);
    fl_ps_store_free(store);
    return differed;
}

static void test_real_accumulators(void)
{
    unsigned seed = 4;
    int first_difference = 0, sequences = 0;
    for (int n = 0; n < SEQUENCES && !first_difference; n++, sequences++)
        first_difference = compare_sequence(&seed, 1 + n % 3);
    ok(first_difference == 0, "the accumulator answer decides as the ps does in %d random sequences of %d gradients",
       sequences, ARRIVALS);
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
