/* bench_allreduce.c: chapter 6's measurements for `make bench` (see
 * bench_allreduce.h): this machine's alpha and bandwidth from a 2-rank
 * MPI_Allreduce, the allreduce against a memcpy, and the cost model's
 * prediction for the lab's 2 processes held against a measured run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_allreduce.h"
#include "bench_csv.h"
#include "bench_table.h"
#include "../../labs/06-allreduce/cost_model.h"

#define MODEL_ROUNDS 3 /* 1 and 2 processes alternate, round by round */
#define SMALL_BYTES 4.0 /* one float: the time is all alpha */
/* How far the model's N = 2 images/sec may be from the measured run's and
 * still count as a prediction: the runs share two cores with everything
 * else on the machine, and their rounds spread by about this much. */
#define MODEL_TOLERANCE 0.15

bool allreduce_bench_ready(void)
{
    /* Open MPI refuses to start as root without these (CI runs as root). */
    if (geteuid() == 0) {
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    return system("command -v mpirun >/dev/null 2>&1") == 0 && access(BENCH_LAB06, X_OK) == 0 &&
           access(BENCH_ALLREDUCE_PROBE, X_OK) == 0;
}

/* The probe's median seconds for a tiny message and for bytes, on 2 ranks;
 * 0, or -1 when it fails or prints less. */
static int probe_allreduce(double bytes, double *small_s, double *large_s)
{
    char command[512];
    snprintf(command, sizeof command, BENCH_MPIRUN "-np 2 " BENCH_ALLREDUCE_PROBE " --bytes %.0f --bytes %.0f",
             SMALL_BYTES, bytes);
    FILE *p = popen(command, "r");
    if (!p)
        return -1;
    char line[256];
    int found = 0;
    while (fgets(line, sizeof line, p)) {
        double size, seconds;
        if (sscanf(line, "allreduce %lf bytes %lf seconds", &size, &seconds) != 2)
            continue;
        if (size == SMALL_BYTES)
            *small_s = seconds;
        else if (size == bytes)
            *large_s = seconds;
        found++;
    }
    return pclose(p) == 0 && found == 2 ? 0 : -1;
}

/* Median seconds of a memcpy of bytes, warm buffers. */
static double memcpy_seconds(double bytes)
{
    size_t n = (size_t)bytes;
    char *from = malloc(n), *to = malloc(n);
    memset(from, 1, n);
    memset(to, 2, n);
    double t[21];
    for (int r = -3; r < 21; r++) {
        double t0 = now();
        memcpy(to, from, n);
        if (r >= 0)
            t[r] = now() - t0;
    }
    volatile char keep = to[n / 2]; /* the copy must happen */
    (void)keep;
    free(from);
    free(to);
    return median(t, 21);
}

/* The lab with 1 process of batch images (its compute per step: the
 * allreduce on one rank is a copy) and with 2 of batch each, alternating. */
static void run_lab(int batch, double *one_ips, double *two_ips)
{
    char one[512], two[512];
    int steps = batch >= 128 ? 10 : 30; /* short steps: more of them for a steady median */
    snprintf(one, sizeof one, BENCH_MPIRUN "-np 1 " BENCH_LAB06 " --train_steps %d --log_every 1 --batch_size %d "
             "--seed 1", steps, batch);
    snprintf(two, sizeof two, BENCH_MPIRUN "-np 2 " BENCH_LAB06 " --train_steps %d --log_every 1 --batch_size %d "
             "--seed 1", steps, 2 * batch);
    double one_r[MODEL_ROUNDS], two_r[MODEL_ROUNDS];
    for (int r = 0; r < MODEL_ROUNDS; r++) {
        one_r[r] = run_images_per_second(one);
        two_r[r] = run_images_per_second(two);
    }
    *one_ips = median(one_r, MODEL_ROUNDS);
    *two_ips = median(two_r, MODEL_ROUNDS);
}

/* A figure of its own in the CSV: no baseline, no ratio, left out of the chart. */
static void figure(const char *what, const char *unit, double value)
{
    bench_csv_row(bench_results, "allreduce", what, what, unit, value, NULL, NAN);
}

/* The network of two ranks on this machine, and MPI_Allreduce against memcpy. */
static int measure_network(double bytes, cost_network *net)
{
    double small_s = NAN, large_s = NAN;
    if (probe_allreduce(bytes, &small_s, &large_s) != 0 ||
        fit_two_worker_allreduce(SMALL_BYTES, small_s, bytes, large_s, net) != 0) {
        note("%s", "the allreduce probe failed under mpirun: ch6's network rows are skipped");
        return -1;
    }
    double copy_s = memcpy_seconds(bytes);
    printf("  ch6 network, 2 ranks of MPI_Allreduce here: %.0f bytes in %.2f us (alpha %.2f us), %.0f bytes in "
           "%.2f ms (bandwidth %.2f GB/s); memcpy of the same bytes %.2f ms: the allreduce takes %.1fx a "
           "memcpy\n",
           SMALL_BYTES, small_s * 1e6, net->alpha_s * 1e6, bytes, large_s * 1e3, net->bandwidth_Bps / 1e9,
           copy_s * 1e3, large_s / copy_s);
    figure("ch6 alpha (2 ranks)", "us", net->alpha_s * 1e6);
    figure("ch6 bandwidth (2 ranks)", "GB/s", net->bandwidth_Bps / 1e9);
    figure("ch6 allreduce of the gradients", "ms", large_s * 1e3);
    figure("ch6 memcpy of the gradients", "ms", copy_s * 1e3);
    figure("ch6 allreduce / memcpy", "x", large_s / copy_s);
    return 0;
}

/* One worker's compute measured with 1 process, the model's prediction for
 * 2 against their measured run, for one batch per process. */
static void check_model(int batch, double bytes, cost_network net)
{
    double one_ips, two_ips;
    run_lab(batch, &one_ips, &two_ips);
    cost_workload work = {.compute_s = batch / one_ips, .gradient_bytes = bytes, .overlap = 0};
    double step_s = ring_step_seconds(2, work, net);
    double predicted_ips = job_images_per_second(2, batch, step_s);
    double off = predicted_ips / two_ips - 1;
    printf("  ch6 cost model, batch %d per process: 1 process %.1f images/sec, so %.1f ms of compute per step; "
           "allreduce %.1f ms (%.0f%% of the step); 2 processes predicted %.1f images/sec, measured %.1f "
           "(%+.1f%%): %s the %.0f%% tolerance\n",
           batch, one_ips, work.compute_s * 1e3, (step_s - work.compute_s) * 1e3,
           100 * (step_s - work.compute_s) / step_s, predicted_ips, two_ips, 100 * off,
           fabs(off) <= MODEL_TOLERANCE ? "within" : "OUTSIDE", 100 * MODEL_TOLERANCE);
    if (batch == 128)
        printf("  ch6 the model on this machine: build/labs/tools/cost_model --compute_ms %.1f --alpha_us %.2f "
               "--bandwidth_gbit %.2f\n",
               work.compute_s * 1e3, net.alpha_s * 1e6, net.bandwidth_Bps * 8 / 1e9);
    char what[64];
    snprintf(what, sizeof what, "ch6 compute per step (batch %d)", batch);
    figure(what, "ms", work.compute_s * 1e3);
    snprintf(what, sizeof what, "ch6 model N=2 predicted (batch %d)", batch);
    figure(what, "img/s", predicted_ips);
    snprintf(what, sizeof what, "ch6 N=2 measured (batch %d)", batch);
    figure(what, "img/s", two_ips);
}

/* The machine's 1-minute load average beside its cores: the model gives
 * each worker a core of its own, which other work on the machine takes away
 * from two processes that must run in step. */
static void report_load(const char *when)
{
    double load[1];
    if (getloadavg(load, 1) == 1)
        printf("  ch6 load average %s: %.1f on %ld cores%s\n", when, load[0], sysconf(_SC_NPROCESSORS_ONLN),
               load[0] > sysconf(_SC_NPROCESSORS_ONLN) ? " (other work shares the cores: 2 processes in step "
                                                          "lose more than the model says)" : "");
}

void bench_allreduce_model(void)
{
    double bytes = chapter1_gradient_bytes();
    report_load("before the model's runs");
    cost_network net;
    if (bytes <= 0 || measure_network(bytes, &net) != 0)
        return;
    /* the towers' 128 per process, where compute dominates, and 16, where
     * the allreduce and the fixed costs of a step weigh three times more */
    check_model(128, bytes, net);
    check_model(16, bytes, net);
    report_load("after them");
}
