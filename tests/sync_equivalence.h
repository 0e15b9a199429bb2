/* sync_equivalence.h: synchronous workers held against in-graph towers fed
 * the same global batches (same seed, data order and global batch), for
 * chapter 4's two workers and chapter 3's hybrid: the workers' first losses
 * average to the towers' first loss, and the models end the same. */
#ifndef FLOWLAB_SYNC_EQUIVALENCE_H
#define FLOWLAB_SYNC_EQUIVALENCE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_runner.h" /* printed_number */
#include "tap.h"

/* workers: a launcher's output of 2 synchronous workers; towers: chapter 2's
 * lab's. Tolerances: the first mean loss within 1e-4, the test accuracy
 * after the run within 0.005 (in practice every printed digit agrees). */
static inline void workers_match_towers(const char *workers, const char *towers, const char *what)
{
    double w0 = printed_number(workers, "worker 0: step 1, global step 1, loss ");
    double w1 = printed_number(workers, "worker 1: step 1, global step 1, loss ");
    double first = printed_number(towers, "Step 0 with loss ");
    ok(w0 > 0 && w1 > 0 && fabs((w0 + w1) / 2 - first) < 1e-4,
       "%s: the workers' first losses average to the towers' first loss within 1e-4 (%.6f, %.6f vs %.6f)", what,
       w0, w1, first);
    double a0 = printed_number(workers, "worker 0: test accuracy ");
    double a1 = printed_number(workers, "worker 1: test accuracy ");
    double at = printed_number(towers, "Test accuracy: ");
    ok(a0 > 0.5 && fabs(a0 - at) < 0.005 && a0 == a1,
       "%s: both workers end with the towers' model, test accuracy within 0.005 (%.4f, %.4f vs %.4f)", what, a0, a1,
       at);
}

#endif
