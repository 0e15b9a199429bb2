/* step_time_model.h: the alpha-beta formulas check_step_time.c holds your
 * answers against, written out here until the lab's own cost model
 * (labs/06-allreduce/cost_model.h) is what the check calls. Reading this
 * file gives the answers away: solve step_time.c first. */
#ifndef LAB06_STEP_TIME_MODEL_H
#define LAB06_STEP_TIME_MODEL_H

#include "exercises.h"

/* Ring: 2(N-1) steps, each one message of bytes/N: 2(N-1) alpha + 2(N-1)/N bytes/B. */
static inline double model_ring_allreduce_seconds(int n, double bytes, double alpha_s, double bandwidth)
{
    if (n <= 1)
        return 0;
    return 2.0 * (n - 1) * alpha_s + 2.0 * (n - 1) / n * bytes / bandwidth;
}

/* M ps shards: a worker's link carries bytes each way, a shard's N bytes / M;
 * the busier link decides, plus the latency of the push and of the pull. */
static inline double model_ps_seconds(int n, int shards, double bytes, double alpha_s, double bandwidth)
{
    double worker_link = bytes / bandwidth, shard_link = n * bytes / (shards * bandwidth);
    return (worker_link > shard_link ? worker_link : shard_link) + 2.0 * alpha_s;
}

/* A step: the backward pass, then the sums (or both at once, with overlap). */
static inline double model_step_seconds(const step_model *m, int n)
{
    double sums = model_ring_allreduce_seconds(n, m->bytes, m->alpha_s, m->bandwidth);
    if (m->overlap)
        return m->compute_s > sums ? m->compute_s : sums;
    return m->compute_s + sums;
}

#endif
