/* test_lab03_exercises.c: chapter 3's exercises, run as a student runs them
 * (the Makefile builds the checks first): each reference solution passes,
 * each exercise file's check fails naming the file to edit until solved, and
 * the staleness answer bears out what chapter 4 says of asynchronous steps. */
#include "flowlab.h"
#include "lab_runner.h"
#include "solutions/staleness.c" /* my_async_staleness, the reference answer */

/* Chapter 4: "With two workers the gradient is one step stale on average;
 * with fifty, it is dozens of steps stale". */
static void test_staleness_claims(void)
{
    int two[2] = {100, 100}, fifty[50];
    for (int w = 0; w < 50; w++)
        fifty[w] = 90 + w % 20; /* workers of slightly different speeds */
    long histogram[64];
    double mean_two = my_async_staleness(two, 2, 1000, histogram, 63);
    double mean_fifty = my_async_staleness(fifty, 50, 5000, histogram, 63);
    ok(fabs(mean_two - 1) < 0.01, "two equal workers: gradients %.3f steps stale on average", mean_two);
    ok(mean_fifty > 24 && mean_fifty < 63, "fifty workers: gradients %.1f steps stale on average", mean_fifty);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* Every check is built together; the first one stands for them all. */
    lab_runner_start(argv[0], "test_lab03_exercises", "exercises/03-between-graph/solutions/check_round_robin");
    static const char *const names[][2] = {{"partition_edges", "partition-edges"},
                                           {"cross_task_bytes", "cross-task-bytes"},
                                           {"round_robin", "round-robin"},
                                           {"ps_load", "ps-load"},
                                           {"staleness", "staleness"}};
    test_exercise_checks("03-between-graph", names, 5);
    test_staleness_claims();
    lab_runner_finish();
    return done_testing();
}
