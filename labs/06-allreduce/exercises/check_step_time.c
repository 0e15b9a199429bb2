/* check_step_time.c: checks exercise step-time against the model's formulas
 * (step_time_model.h): first the 8-worker cluster step_time.c asks you to
 * predict, then rings and parameter servers from 1 to 512 workers, slow and
 * fast networks, with and without overlap. */
#include <math.h>

#include "exercises.h"
#include "step_time_model.h"
#include "../../common/check.h"

/* The cluster of the question in step_time.c: 85 ms of compute a step, chapter
 * 1's gradients, 25 Gbit/s links, 25 us of latency. */
static const step_model stated = {0.085, MODEL_GRADIENT_BYTES, 25e-6, 25e9 / 8, false};

static bool near(double got, double want)
{
    return isfinite(got) && fabs(got - want) <= 1e-9 * fabs(want) + 1e-15;
}

static void check_stated_cluster(void)
{
    double step = my_step_seconds(&stated, 8), want = model_step_seconds(&stated, 8);
    if (step == -2)
        fail("not implemented yet (my_step_seconds returned -2)");
    if (!near(step, want))
        fail("8 workers, 85 ms of compute, 13.1 MB over 25 Gbit/s with 25 us latency, no overlap: a step takes "
             "%.3f ms (%.3f ms of it summing); you said %.3f ms", want * 1e3, (want - stated.compute_s) * 1e3,
             step * 1e3);
}

static void check_ring(int n, double bytes, double alpha, double bandwidth)
{
    double got = my_ring_allreduce_seconds(n, bytes, alpha, bandwidth);
    double want = model_ring_allreduce_seconds(n, bytes, alpha, bandwidth);
    if (!near(got, want))
        fail("a ring allreduce of %.0f bytes among %d workers (alpha %g s, %g bytes/s) takes %.6g s; you said %.6g s",
             bytes, n, alpha, bandwidth, want, got);
}

static void check_ps(int n, int shards, double bytes, double alpha, double bandwidth)
{
    double got = my_ps_seconds(n, shards, bytes, alpha, bandwidth);
    double want = model_ps_seconds(n, shards, bytes, alpha, bandwidth);
    if (!near(got, want))
        fail("%d workers and %d ps shard%s exchanging %.0f bytes (alpha %g s, %g bytes/s) take %.6g s; you said %.6g s",
             n, shards, shards == 1 ? "" : "s", bytes, alpha, bandwidth, want, got);
}

static void check_step(const step_model *m, int n)
{
    double got = my_step_seconds(m, n), want = model_step_seconds(m, n);
    if (!near(got, want))
        fail("a step with %d workers, %g s of compute, %.0f bytes, alpha %g s, %g bytes/s, overlap %s takes %.6g s; "
             "you said %.6g s", n, m->compute_s, m->bytes, m->alpha_s, m->bandwidth, m->overlap ? "on" : "off",
             want, got);
}

int main(void)
{
    check_start("step-time", "labs/06-allreduce/exercises/step_time.c");
    check_stated_cluster();
    static const double networks[][2] = {{50e-6, 25e9 / 8}, {2e-6, 100e9 / 8}, {1e-3, 1e9 / 8}};
    static const double sizes[] = {4, 1e6, MODEL_GRADIENT_BYTES, 1e8};
    for (int w = 1; w <= 512; w *= 2)
        for (size_t k = 0; k < sizeof networks / sizeof networks[0]; k++)
            for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
                check_ring(w, sizes[b], networks[k][0], networks[k][1]);
                check_ring(w + 1, sizes[b], networks[k][0], networks[k][1]); /* N odd too */
                check_ps(w, 1, sizes[b], networks[k][0], networks[k][1]);
                check_ps(w, w > 4 ? w / 4 : 1, sizes[b], networks[k][0], networks[k][1]);
                check_ps(w, 2 * w, sizes[b], networks[k][0], networks[k][1]);
            }
    /* Compute that hides the sums, compute that does not, both ways. */
    for (int w = 1; w <= 512; w *= 2)
        for (int overlap = 0; overlap <= 1; overlap++) {
            step_model quick = {0.001, MODEL_GRADIENT_BYTES, 50e-6, 25e9 / 8, overlap};
            step_model slow = {0.5, MODEL_GRADIENT_BYTES, 1e-3, 1e9 / 8, overlap};
            check_step(&quick, w);
            check_step(&slow, w);
        }
    pass();
}
