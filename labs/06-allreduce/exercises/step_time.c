/* step_time.c: exercise step-time. Write the alpha-beta model of chapter 6
 * (see exercises.h): how long a ring allreduce takes, how long the same
 * exchange takes through parameter servers, and how long a training step
 * takes with N workers.
 *
 * Hints: in the ring's reduce-scatter each of the N-1 steps sends one chunk
 * of bytes/N to the right neighbour while receiving one from the left, all
 * workers at once, so a step costs alpha + (bytes/N)/bandwidth; the
 * all-gather is N-1 more such steps. With overlap, the sums hide behind the
 * backward pass until they take longer than it.
 *
 * Then predict, before you run the check: the cluster the check asks about
 * first has 8 workers, each computing for 85 ms a step, chapter 1's 13.1 MB
 * of gradients (MODEL_GRADIENT_BYTES), 25 Gbit/s links (3.125e9 bytes/s) and
 * 25 microseconds of latency. How long is a step without overlap? How much of
 * it is spent summing, and what is the scaling efficiency (compute time
 * divided by step time)?
 *
 * Questions the check cannot ask: (1) With as many ps shards as workers,
 * your my_ps_seconds is about the ring's time at every N. Why did practice
 * still not go that way? Chapter 3's greedy placement of this model is a hint: how evenly can
 * 13.1 MB be cut when one tensor, dense_1/kernel, holds 12.8 MB of it?
 * (2) At what N does the ring's latency term, 2(N-1) alpha, equal its
 * bandwidth term for this model? What does that say about rings of
 * thousands of GPUs?
 *
 * Check your work: make exercises */
#include "exercises.h"

double my_ring_allreduce_seconds(int workers, double bytes, double alpha_s, double bandwidth)
{
    (void)workers, (void)bytes, (void)alpha_s, (void)bandwidth;
    return -2; /* TODO: your code here */
}

double my_ps_seconds(int workers, int shards, double bytes, double alpha_s, double bandwidth)
{
    (void)workers, (void)shards, (void)bytes, (void)alpha_s, (void)bandwidth;
    return -2; /* TODO: your code here */
}

double my_step_seconds(const step_model *m, int workers)
{
    (void)m, (void)workers;
    return -2; /* TODO: your code here */
}
