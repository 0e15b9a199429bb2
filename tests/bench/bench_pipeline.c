/* bench_pipeline.c: chapter 7's pipeline in `make bench`. The lab split by
 * layers (convolutions on /gpu:0, dense layers on /gpu:1) runs a batch of
 * 128 whole, then as 4 micro-batches of 32, on two PoCL devices sharing a
 * pool of two threads on the same two CPUs (bench_cores.h); each round runs
 * both back to back and the row prints ranges. GPipe's bubble
 * (S-1)/(M+S-1) predicts the speedup of equal stages: S*M/(M+S-1). */
#include <math.h>
#include <stdio.h>

#include "bench_cores.h"
#include "bench_csv.h"
#include "bench_pipeline.h"
#include "bench_table.h"

#define LAB07 ON_POCL_TWO "build/labs/07-model-parallel/model_parallel --split layers --log_every 1 " \
              "--batch_size 128 --seed 1"

void bench_pipeline(void)
{
    enum { STAGES = 2, MICRO_BATCHES = 4 };
    int rounds = bench_rounds(), steps = bench_steps();
    double whole_r[BENCH_MAX_ROUNDS], piped_r[BENCH_MAX_ROUNDS];
    char whole[512], piped[512];
    snprintf(whole, sizeof whole, LAB07 " --train_steps %d --micro_batches 1", steps + 2);
    snprintf(piped, sizeof piped, LAB07 " --train_steps %d --micro_batches %d", steps + 2, MICRO_BATCHES);
    for (int r = 0; r < rounds; r++) {
        whole_r[r] = run_images_per_second(whole);
        piped_r[r] = run_images_per_second(piped);
    }
    printf("  ch7 rows: %d rounds of %d steps after 2 of warm-up; cores: CPUs %s, one process with a PoCL pool of 2 "
           "threads for both sides\n", rounds, steps, bench_cores());
    row_rounds("scaling", "ch7: pipeline M=4 vs the unpipelined split", "ch7 pipeline M=4", "img/s", piped_r, whole_r,
               rounds, "M=1");
    double bubble_1 = (STAGES - 1.0) / (1 + STAGES - 1.0);
    double bubble_m = (STAGES - 1.0) / (MICRO_BATCHES + STAGES - 1.0);
    double predicted = (1.0 - bubble_m) / (1.0 - bubble_1); /* busy fraction, M=4 over M=1 */
    target_line("ch7 target: pipeline M=4 at least 1.4x the unpipelined split", piped_r, whole_r, rounds, 1.4);
    printf("  ch7: the bubble formula predicts %.2fx (idle %.0f%% -> %.0f%%, for equal stages)\n", predicted,
           100 * bubble_1, 100 * bubble_m);
    bench_csv_row(bench_results, "scaling", "ch7 pipeline M=4 over M=1 predicted by the bubble",
                  "ch7 bubble prediction", "x", predicted, NULL, NAN);
}
