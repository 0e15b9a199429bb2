/* exercises.h: the three functions chapter 4's exercises ask you to write.
 * Each lives in its own file in this folder (accumulator.c, steps_lost.c,
 * checkpoint_interval.c); edit that file, then run `make exercises` from the top of
 * the repository. None needs a server: the checks run offline. Reference
 * answers are in solutions/, but try first. */
#ifndef LAB04_EXERCISES_H
#define LAB04_EXERCISES_H

#include <stdbool.h>
#include <stdint.h>

/* Exercise accumulator: what a ps's accumulator (TensorFlow's
 * ConditionalAccumulator) does with one gradient for one variable under
 * synchronous training. The accumulator starts all zero. A gradient
 * arrives, computed by a worker that read the global step `local_step`:
 *   - a gradient for a step older than the accumulator's global step is
 *     stale: GRADIENT_STALE, and nothing changes;
 *   - otherwise it is held: count goes up by one. When count reaches
 *     replicas_to_aggregate, the chief's take gets their mean and applies
 *     it: GRADIENT_APPLIED, count back to 0 and the global step one more.
 *     Before that: GRADIENT_HELD.
 * Return what became of the gradient and leave *a as the rules say. */
typedef enum { GRADIENT_HELD, GRADIENT_APPLIED, GRADIENT_STALE } gradient_fate;
typedef struct {
    uint64_t global_step; /* gradients for an older step are stale */
    int count;            /* gradients held since the last take */
} accumulator;
gradient_fate my_gradient_arrives(accumulator *a, uint64_t local_step, int replicas_to_aggregate);

/* Exercise steps-lost: a ps dies and comes back empty; the chief restores
 * the latest checkpoint. Training started at global step started_at (0: from
 * initial values; more: restored from a checkpoint of that step, which
 * exists). The chief saves a checkpoint each time the global step reaches
 * started_at + k * save_every (k = 1, 2, ...; save_every 0: never), and the
 * checkpoint holds that step. The ps dies when the global step is died_at,
 * after any checkpoint of that very step was saved. Write to *restored_to
 * the global step training goes on from (the latest checkpoint at or before
 * died_at, or 0 when there is none: the chief initialises again) and return
 * the steps lost, died_at - *restored_to. Return -1, writing nothing, when
 * started_at < 0, save_every < 0 or died_at < started_at. */
long my_steps_lost(long started_at, long save_every, long died_at, long *restored_to);

/* Exercise checkpoint-interval: choose how often the chief saves. A step
 * takes step_s seconds; saving a checkpoint stops training for save_s
 * seconds; the ps fails on average once every mtbf_s seconds. With a
 * checkpoint every N steps, the saves take save_s / (N x step_s) of the
 * training time, and a failure, landing anywhere in an interval, loses half
 * an interval of work on average: N x step_s / 2 seconds, a share
 * N x step_s / (2 x mtbf_s) of the time between failures. So
 *     my_expected_waste(N) = save_s / (N x step_s) + N x step_s / (2 x mtbf_s),
 * the share of time lost to saving and to redoing steps (the restart itself
 * costs the same for every N and is left out). my_best_save_every returns the
 * N from 1 to max_steps with the least waste (the smallest such N on a
 * tie). Both return -1 when step_s, save_s or mtbf_s is not above 0, or
 * when N (save_every) or max_steps is below 1. Then answer the questions in
 * checkpoint_interval.c. */
double my_expected_waste(double step_s, double save_s, double mtbf_s, long save_every);
long my_best_save_every(double step_s, double save_s, double mtbf_s, long max_steps);

#endif
