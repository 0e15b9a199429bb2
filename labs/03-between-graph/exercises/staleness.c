/* staleness.c: exercise staleness. Write my_async_staleness (see
 * exercises.h): how stale each gradient of asynchronous training is, from
 * nothing but how long each worker takes for a step.
 *
 * Hints: keep, for each worker, the time its current step ends and the
 * global step it read. The next update is the worker whose step ends first
 * (the lowest index on a tie). Work the two-worker case by hand first: at
 * 100 ms each, the first update is 0 steps stale and every later one 1.
 *
 * Questions the check cannot ask: (1) With N workers of equal speed, what
 * does the distribution settle to, and why is its mean N-1 and not (N-1)/2?
 * (2) With three workers of 100, 100 and 300 ms a step, whose gradients are
 * the stale ones, and how stale? (3) Chapter 4 lets the ps wait for
 * replicas_to_aggregate gradients a step and drop the rest. For those three
 * workers, which replicas_to_aggregate would you choose, how long would a
 * step take, and what would it throw away? (4) Why does a gradient that is
 * k steps stale hurt training more as k grows?
 *
 * Check your work: make exercises */
#include "exercises.h"

double my_async_staleness(const int *step_ms, int workers, int updates, long *histogram, int max_staleness)
{
    (void)step_ms, (void)workers, (void)updates, (void)histogram, (void)max_staleness;
    return -2; /* TODO: your code here */
}
