/* test_lab07_exercises.c: chapter 7's exercises, run as a student runs them
 * (the Makefile builds the checks first): each reference solution passes,
 * each exercise file's check says PASS or "not implemented yet", naming
 * the file to edit. Then the reference answers, linked here, are held to
 * numbers the chapter works by hand: the bubble of the bench's pipeline and
 * the two splits' bytes at the lab's batch of 128. */
#include "flowlab.h"
#include "lab_runner.h"
#include "../labs/07-model-parallel/exercises/solutions/bubble.c"
#include "../labs/07-model-parallel/exercises/solutions/split_bytes.c"

static void test_reference_numbers(void)
{
    ok(fabs(my_bubble(2, 1) - 0.5) < 1e-12 && fabs(my_bubble(2, 4) - 0.2) < 1e-12,
       "the bubble of 2 stages: 50%% unpipelined, 20%% with 4 micro-batches");
    double speedup = (1 - my_bubble(2, 4)) / (1 - my_bubble(2, 1));
    ok(fabs(speedup - 1.6) < 1e-12, "so equal stages would run 1.6x faster with M = 4 (%.2f)", speedup);
    ok(my_column_split_bytes(128, 3136, 1024) == 3735552 && my_row_split_bytes(128, 3136, 1024) == 2654208,
       "dense_1 at batch 128: 3.74 MB per step split by columns, 2.65 MB by rows");
    op_time ops[] = {{"/gpu:0", "a", 0, 3}, {"/gpu:1", "b", 3, 1}};
    ok(fabs(my_idle_fraction(ops, 2, "/gpu:1") - 0.75) < 1e-12,
       "a device busy 1 ms of a 4 ms span is idle 75%% of it");
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_lab07_exercises", "labs/07-model-parallel/model_parallel");
    static const char *const names[][2] = {{"bubble", "bubble"},
                                           {"balanced_cut", "balanced-cut"},
                                           {"split_bytes", "split-bytes"},
                                           {"schedule_memory", "schedule-memory"}};
    test_exercise_checks("07-model-parallel", names, 4);
    test_reference_numbers();
    lab_runner_finish();
    return done_testing();
}
