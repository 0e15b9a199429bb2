/* solutions/step_time.c: a reference answer to exercise step-time. */
#include "exercises.h"

double my_ring_allreduce_seconds(int workers, double bytes, double alpha_s, double bandwidth)
{
    if (workers <= 1)
        return 0;
    int steps = 2 * (workers - 1); /* reduce-scatter, then all-gather */
    return steps * (alpha_s + bytes / workers / bandwidth);
}

double my_ps_seconds(int workers, int shards, double bytes, double alpha_s, double bandwidth)
{
    double worker_link = 2 * bytes / bandwidth; /* its push, then its pull */
    double busiest_shard = (double)workers * bytes / shards / bandwidth;
    return (busiest_shard > worker_link ? busiest_shard : worker_link) + 2 * alpha_s;
}

double my_step_seconds(const step_model *m, int workers)
{
    double sums = my_ring_allreduce_seconds(workers, m->bytes, m->alpha_s, m->bandwidth);
    if (m->overlap)
        return sums > m->compute_s ? sums : m->compute_s;
    return m->compute_s + sums;
}
