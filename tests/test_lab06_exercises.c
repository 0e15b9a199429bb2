/* test_lab06_exercises.c: chapter 6's exercises, run as a student runs them
 * (the Makefile builds the checks first): each reference solution passes,
 * each exercise file's check fails naming the file to edit until solved.
 * The reduce-scatter check needs mpirun and is skipped, saying so, without
 * it. Then the fusion-threshold judge is shown tables it must refuse, and
 * the step-time formulas give the numbers the book works by hand. */
#include "flowlab.h"
#include "lab_runner.h"
#include "fusion_judge.h"
#include "step_time_model.h"
#include "../labs/06-allreduce/cost_model.c" /* what step_time_model.h calls */
#include "solutions/fusion_threshold.c" /* the measured table, the reference answer */

/* The reference table with one change, judged. */
typedef struct {
    const char *what, *must_say;
    bool change;   /* set run `run` of row `row` to `speed` images/sec */
    int row, run;
    double speed;
    bool drop;     /* leave row `dropped` out */
    int dropped;
    double loss;   /* row 1's loss, when not 0 */
    long best;     /* the answer, when not 0 */
    bool flip_clear;
} bad_table;

static int judge_changed(const bad_table *b, char *why, size_t len)
{
    fusion_measurement t[8];
    int n = 0;
    for (int i = 0; i < my_measurement_count; i++)
        if (!b->drop || i != b->dropped)
            t[n++] = my_measurements[i];
    if (b->change)
        t[b->row].images_per_sec[b->run] = b->speed;
    if (b->loss != 0)
        t[1].loss = b->loss;
    bool clear = b->flip_clear ? !my_best_is_clear : my_best_is_clear;
    return judge_fusion(t, n, b->best ? b->best : my_best_threshold, clear, why, len);
}

static void test_fusion_judge(void)
{
    char why[512];
    ok(judge_fusion(my_measurements, my_measurement_count, my_best_threshold, my_best_is_clear, why,
                    sizeof why) == 0, "the measured table is accepted, its best not clearly best");
    static const bad_table bad[] = {
        {"without threshold 0", "both ends", .drop = true, .dropped = 0},
        {"without the all-in-one end", "both ends", .drop = true, .dropped = 4},
        {"with another run's loss", "loss", .loss = 0.9},
        {"with a speed of 0", "not a speed", .change = true, .row = 2, .run = 1, .speed = 0},
        {"with one threshold 3x faster", "differ by", .change = true, .row = 2, .run = 0, .speed = 4100},
        {"naming a best its numbers do not support", "fastest runs say", .best = 67108864},
        {"calling a difference within the noise clear", "should be false", .flip_clear = true},
        /* 1 MiB's second fastest run now beats 64 KiB's fastest, 1173.4: clearly best. */
        {"calling a clear difference noise", "should be true", .change = true, .row = 2, .run = 0, .speed = 1180},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = judge_changed(&bad[i], why, sizeof why);
        ok(rc != 0 && strstr(why, bad[i].must_say), "the judge refuses the table %s", bad[i].what);
        if (rc == 0 || !strstr(why, bad[i].must_say))
            diag("rc %d, said: %s", rc, rc ? why : "(nothing)");
    }
}

/* The numbers the chapter works by hand (2 and 128 workers) and the stated
 * cluster of the step-time exercise (8 workers): 13.1 MB over 25 Gbit/s
 * links with 25 us of latency, 85 ms of compute a step. */
static void test_step_time_model(void)
{
    double b = MODEL_GRADIENT_BYTES, alpha = 25e-6, bw = 25e9 / 8;
    is_near(model_ring_allreduce_seconds(2, b, alpha, bw) * 1e3, 4.2415, 1e-3,
            "the ring on 2 workers: 2 alpha + bytes/B = 4.24 ms");
    is_near(model_ring_allreduce_seconds(128, b, alpha, bw) * 1e3, 14.668, 1e-2,
            "on 128 workers: 254 alpha + 1.98 bytes/B = 14.7 ms");
    is_near(model_ring_allreduce_seconds(8, b, alpha, bw) * 1e3, 7.6852, 1e-3,
            "on 8 workers: 14 alpha + 1.75 bytes/B = 7.69 ms");
    step_model stated = {0.085, b, alpha, bw, false};
    is_near(model_step_seconds(&stated, 8) * 1e3, 92.685, 1e-2, "an 8-worker step of 85 ms compute: 92.69 ms");
    stated.overlap = true;
    is_near(model_step_seconds(&stated, 8) * 1e3, 85.0, 1e-9, "with overlap the sums hide behind the compute");
    is_near(model_ps_seconds(128, 1, b, alpha, bw) * 1e3, 536.56, 1e-1,
            "one ps for 128 workers: 128 bytes/B + 2 alpha = 537 ms");
}

static void test_reduce_scatter(void)
{
    char check[700];
    snprintf(check, sizeof check, "%s/exercises/06-allreduce/solutions/check_reduce_scatter", build_dir);
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        skip("the reduce-scatter exercise", "MPI is not installed (apt-get install libopenmpi-dev openmpi-bin)");
        return;
    }
    if (access(check, X_OK) != 0) {
        skip("the reduce-scatter exercise", "its check is not built: mpicc is missing");
        return;
    }
    static const char *const names[][2] = {{"reduce_scatter", "reduce-scatter"}};
    test_exercise_checks("06-allreduce", names, 1);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* Every check is built together; the first one stands for them all. */
    lab_runner_start(argv[0], "test_lab06_exercises", "exercises/06-allreduce/solutions/check_step_time");
    static const char *const names[][2] = {{"step_time", "step-time"}, {"fusion_threshold", "fusion-threshold"},
                                           {"ps_shards", "ps-shards"}};
    test_exercise_checks("06-allreduce", names, 3);
    test_reduce_scatter();
    test_fusion_judge();
    test_step_time_model();
    lab_runner_finish();
    return done_testing();
}
