/* bench_pipeline.c: chapter 7's pipeline in `make bench`. The lab split by
 * layers (convolutions on /gpu:0, dense layers on /gpu:1) runs a batch of
 * 128 whole, then as 4 micro-batches of 32, on two PoCL devices sharing a
 * pool of two threads on the same two CPUs (bench_cores.h); each round runs
 * both back to back and the row prints ranges; then the same two ways with
 * each stage on a flowlab_server task of its own (--stage_hosts), one core
 * each, the lab their client; then the MLP's even stages (--model mlp,
 * dense_1-5 and dense_6-10) the same way, with a batch of 1024 so that a
 * micro-batch of 256 keeps the matrix multiplies efficient. GPipe's bubble
 * (S-1)/(M+S-1) predicts the speedup of equal stages: S*M/(M+S-1). Last,
 * what the first stage holds at M = 8 under GPipe, 1F1B and recomputation,
 * from the session pool's own count (the lab's memory line). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../loopback.h" /* free ports: other benches and tests may share this machine */
#include "bench_cores.h"
#include "bench_csv.h"
#include "bench_pipeline.h"
#include "bench_table.h"

#define LAB07 ON_POCL_TWO "build/labs/07-model-parallel/model_parallel --split layers --log_every 1 " \
              "--batch_size 128 --seed 1"

/* The lab with M micro-batches and model (its flags), its stages on two
 * tasks started for it on free loopback ports (they exit once the client has
 * said goodbye; a client that failed says none, so the launcher stops them). */
static double on_stage_tasks(int steps, int micro_batches, const char *model)
{
    char command[1400];
    int port = loopback_free_ports(2);
    snprintf(command, sizeof command,
             ON_POCL_ONE "build/labs/tools/launch_cluster --ps 0 --workers 2 --base_port %d --no_secret "
             "--deadline 300 -- build/labs/tools/flowlab_server >/dev/null 2>&1 & servers=$!; "
             ON_POCL_ONE "build/labs/07-model-parallel/model_parallel --split layers --log_every 1 %s "
             "--seed 1 --train_steps %d --micro_batches %d --stage_hosts 127.0.0.1:%d,127.0.0.1:%d; rc=$?; "
             "[ $rc = 0 ] || kill $servers; wait $servers; exit $rc", port, model, steps + 2, micro_batches, port,
             port + 1);
    return port > 0 ? run_images_per_second(command) : NAN;
}

#define CNN_FLAGS "--batch_size 128"
#define MLP_FLAGS "--model mlp --batch_size 1024 --max_examples 16384"

static void bench_stage_tasks(int rounds, int steps)
{
    double whole_r[BENCH_MAX_ROUNDS], piped_r[BENCH_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        whole_r[r] = on_stage_tasks(steps, 1, CNN_FLAGS);
        piped_r[r] = on_stage_tasks(steps, 4, CNN_FLAGS);
    }
    row_rounds("scaling", "ch7: on 2 tasks, pipeline M=4 vs the unpipelined split", "ch7 2 tasks pipeline M=4",
               "img/s", piped_r, whole_r, rounds, "M=1");
    /* A step is 8 times a CNN step's images; 20 of them (10 before: one
     * round in three came out a tenth apart from the others, on the
     * unpipelined side's noise alone). */
    int mlp_steps = steps / 2 > 4 ? steps / 2 : 4;
    for (int r = 0; r < rounds; r++) {
        whole_r[r] = on_stage_tasks(mlp_steps, 1, MLP_FLAGS);
        piped_r[r] = on_stage_tasks(mlp_steps, 4, MLP_FLAGS);
    }
    printf("  ch7 MLP rows: %d rounds of %d steps of 1024 after 2 of warm-up; its two stages even within about a "
           "tenth\n", rounds, mlp_steps);
    row_rounds("scaling", "ch7: MLP's even stages on 2 tasks, pipeline M=4 vs the unpipelined split",
               "ch7 2 tasks MLP pipeline M=4", "img/s", piped_r, whole_r, rounds, "M=1");
    printf("  ch7: the bubble formula's bound for 2 equal stages at M=4: %.2fx (S*M/(M+S-1); each stage on a "
           "core of its own)\n", 2.0 * 4 / (4 + 2 - 1));
    target_line("ch7 target: even stages on 2 tasks, pipeline M=4 at least 1.4x the unpipelined split", piped_r,
                whole_r, rounds, 1.4);
}

/* The first stage's peak in MB from the lab's memory line; NaN when the
 * run fails or prints none. */
static double stage_0_peak_mb(const char *schedule)
{
    char command[600], line[512];
    snprintf(command, sizeof command, ON_POCL_TWO "build/labs/07-model-parallel/model_parallel --split layers "
             "--micro_batches 8 --batch_size 512 --max_examples 1024 --train_steps 2 --seed 1 %s", schedule);
    FILE *p = popen(command, "r");
    double mb = NAN;
    while (p && fgets(line, sizeof line, p)) {
        const char *at = strstr(line, "memory held at once in the last step:");
        at = at ? strstr(at, "/gpu:0 ") : NULL;
        if (at)
            mb = atof(at + strlen("/gpu:0 "));
    }
    return p && pclose(p) == 0 ? mb : NAN;
}

/* What a schedule holds does not depend on the machine's load: one run each. */
static void bench_schedule_memory(void)
{
    double gpipe = stage_0_peak_mb(""), one_f_one_b = stage_0_peak_mb("--schedule 1f1b"),
           recompute = stage_0_peak_mb("--recompute");
    printf("  ch7 memory rows: M=8 micro-batches of 64 on 2 stages; the first stage's values held at once, "
           "counted by the session's pool\n");
    row("memory", "ch7: stage 0's peak, 1F1B vs GPipe", "ch7 1F1B peak", "MB", one_f_one_b, gpipe, "GPipe");
    row("memory", "ch7: stage 0's peak, GPipe recomputed vs GPipe", "ch7 recompute peak", "MB", recompute, gpipe,
        "GPipe");
    target_line("ch7 target: 1F1B at most half of GPipe's peak at M=8, S=2 (GPipe's over 1F1B's at least 2x)", &gpipe,
                &one_f_one_b, 1, 2.0);
}

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
    printf("  ch7: the bubble formula predicts %.2fx (idle %.0f%% -> %.0f%%, for equal stages with their own "
           "compute; these share two cores and are uneven)\n", predicted, 100 * bubble_1, 100 * bubble_m);
    bench_csv_row(bench_results, "scaling", "ch7 pipeline M=4 over M=1 predicted by the bubble",
                  "ch7 bubble prediction", "x", predicted, NULL, NAN);
    bench_stage_tasks(rounds, steps);
    bench_schedule_memory();
}
