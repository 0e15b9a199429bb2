/* bench_pipeline.c: chapter 7's pipeline in `make bench`. The lab split by
 * layers (convolutions on /gpu:0, dense layers on /gpu:1) runs a batch of
 * 128 whole, then as 4 micro-batches of 32, on two PoCL devices sharing a
 * pool of two workers on two cores; the rounds alternate. GPipe's
 * bubble (S-1)/(M+S-1) predicts the speedup of equal stages: S*M/(M+S-1). */
#include <math.h>
#include <stdio.h>

#include "bench_csv.h"
#include "bench_pipeline.h"
#include "bench_table.h"

#define PIPELINE_ROUNDS 3
#define LAB07 "POCL_DEVICES='pthread pthread' POCL_MAX_PTHREAD_COUNT=2 FLOWLAB_BACKEND=opencl " \
              "build/labs/07-model-parallel/model_parallel --split layers --train_steps 12 " \
              "--log_every 1 --batch_size 128 --seed 1"

void bench_pipeline(void)
{
    enum { STAGES = 2, MICRO_BATCHES = 4 };
    double whole_r[PIPELINE_ROUNDS], piped_r[PIPELINE_ROUNDS];
    for (int r = 0; r < PIPELINE_ROUNDS; r++) {
        whole_r[r] = run_images_per_second(LAB07 " --micro_batches 1");
        piped_r[r] = run_images_per_second(LAB07 " --micro_batches 4");
    }
    double whole = median(whole_r, PIPELINE_ROUNDS), piped = median(piped_r, PIPELINE_ROUNDS);
    row("scaling", "ch7: pipeline M=4 vs the unpipelined split", "ch7 pipeline M=4", "img/s", piped, whole,
        "M=1");
    double bubble_1 = (STAGES - 1.0) / (1 + STAGES - 1.0);
    double bubble_m = (STAGES - 1.0) / (MICRO_BATCHES + STAGES - 1.0);
    double predicted = (1.0 - bubble_m) / (1.0 - bubble_1); /* busy fraction, M=4 over M=1 */
    printf("  ch7 target: pipeline M=4 at least 1.4x the unpipelined split: %s (%.2fx); the bubble "
           "formula predicts %.2fx (idle %.0f%% -> %.0f%%, for equal stages)\n",
           piped >= 1.4 * whole ? "met" : "MISSED", piped / whole, predicted, 100 * bubble_1, 100 * bubble_m);
    bench_csv_row(bench_results, "scaling", "ch7 pipeline M=4 over M=1 predicted by the bubble",
                  "ch7 bubble prediction", "x", predicted, NULL, NAN);
}
