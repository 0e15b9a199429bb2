/* check_ps_shards.c: checks exercise ps-shards against the lab's cost model
 * (labs/06-allreduce/cost_model.h, with no latency): first the cluster
 * ps_shards.c asks you to predict, then this machine's, its compute measured
 * by make figures-links (book/figures/ch6-links.csv, or the CSV named by
 * FLOWLAB_LINKS_CSV), then links from 100 Mbit/s to 100 Gbit/s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cost_model.h"
#include "exercises.h"
#include "../../common/check.h"

static double model_images(int n, int m, int batch, double compute_s, double bytes, double bandwidth)
{
    cost_workload w = {compute_s, bytes, 0};
    return job_images_per_second(n, batch, parameter_server_step_seconds(n, m, w, (cost_network){0, bandwidth}));
}

static int model_stops_scaling(double compute_s, double bytes, double bandwidth)
{
    double alone = model_images(1, 1, 1, compute_s, bytes, bandwidth);
    int n = 1;
    while (n < 100000 && model_images(n + 1, 1, 1, compute_s, bytes, bandwidth) -
                             model_images(n, 1, 1, compute_s, bytes, bandwidth) >= alone / 2)
        n++;
    return n;
}

static int model_shards_needed(int n, double compute_s, double bytes, double bandwidth)
{
    double unlimited = model_images(n, n, 1, compute_s, bytes, bandwidth);
    int m = 1;
    while (m < n && model_images(n, m, 1, compute_s, bytes, bandwidth) < 0.9 * unlimited)
        m++;
    return m;
}

/* Every answer for one link and compute, named by `where` in a failure. */
static void check_cluster(const char *where, double compute_s, double bytes, double bandwidth)
{
    for (int n = 1; n <= 64; n *= 2)
        for (int m = 1; m <= 8; m *= 2) {
            double got = my_ps_images_per_sec(n, m, 128, compute_s, bytes, bandwidth);
            double want = model_images(n, m, 128, compute_s, bytes, bandwidth);
            if (!(fabs(got - want) <= 1e-9 * want))
                fail("%s: %d workers, %d shard%s, batch 128: %.1f images/sec; you said %.1f", where, n, m,
                     m == 1 ? "" : "s", want, got);
        }
    int got = my_ps_stops_scaling(compute_s, bytes, bandwidth), want = model_stops_scaling(compute_s, bytes, bandwidth);
    if (got != want)
        fail("%s: one ps stops scaling at N = %d (the next worker adds less than half of one alone); you said %d",
             where, want, got);
    for (int n = 1; n <= 32; n *= 2) {
        got = my_shards_needed(n, compute_s, bytes, bandwidth);
        want = model_shards_needed(n, compute_s, bytes, bandwidth);
        if (got != want)
            fail("%s: %d workers need %d shard%s for 90%% of their images with a shard each; you said %d", where, n,
                 want, want == 1 ? "" : "s", got);
    }
}

/* One worker's compute on this machine: the 1 Gbit/s ring run at N = 1
 * (its step_s column), which talks to no one; 0 when there is no table. */
static double measured_compute(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[512];
    double step = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "1gbit,ring,1,", 13) == 0)
            sscanf(line, "%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%lf", &step);
    if (f)
        fclose(f);
    return step;
}

int main(void)
{
    check_start("ps-shards", "labs/06-allreduce/exercises/ps_shards.c");
    if (my_ps_stops_scaling(0.085, MODEL_GRADIENT_BYTES, 1.25e8) == -2)
        fail("not implemented yet (my_ps_stops_scaling returned -2)");
    check_cluster("85 ms of compute, 13.1 MB over 1 Gbit/s", 0.085, MODEL_GRADIENT_BYTES, 1.25e8);
    const char *table = getenv("FLOWLAB_LINKS_CSV") ? getenv("FLOWLAB_LINKS_CSV") : "book/figures/ch6-links.csv";
    double compute = measured_compute(table);
    char where[160];
    snprintf(where, sizeof where, "this machine's %.1f ms of compute (%s), 13.1 MB over 1 Gbit/s", compute * 1e3,
             table);
    if (compute > 0)
        check_cluster(where, compute, MODEL_GRADIENT_BYTES, 1.25e8);
    static const double rates[] = {1.25e7, 1.25e9, 1.25e10};
    for (int k = 0; k < 3; k++)
        for (double c = 0.01; c < 1; c *= 4) {
            snprintf(where, sizeof where, "%.0f ms of compute, 13.1 MB over %g Gbit/s", c * 1e3, rates[k] * 8 / 1e9);
            check_cluster(where, c, MODEL_GRADIENT_BYTES, rates[k]);
        }
    pass();
}
