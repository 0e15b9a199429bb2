/* loss_check.h: a loss that is NaN or infinite ends a lab's training, with
 * a message naming the step, instead of training on garbage and exiting 0
 * (a diverged run, or a variable poisoned by a checkpoint or an assignment). */
#ifndef LABS_COMMON_LOSS_CHECK_H
#define LABS_COMMON_LOSS_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

/* false when loss is a number; else true, after saying so on stderr as
 * "PROGRAM: WHOstep STEP: the loss is NaN ..." (who: "" or "worker 1: "). */
static inline bool loss_not_finite(const char *program, const char *who, long step, float loss)
{
    if (isfinite(loss))
        return false;
    fprintf(stderr, "%s: %sstep %ld: the loss is %s; stopping. Training diverged (try a lower --learning_rate) or "
            "a variable holds NaN or Inf (restored from a checkpoint, or assigned)\n",
            program, who, step, isnan(loss) ? "NaN" : "infinite");
    fflush(stderr);
    return true;
}

#endif
