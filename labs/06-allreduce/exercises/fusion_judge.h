/* fusion_judge.h: what check_fusion_threshold.c can honestly say about a
 * table of measurements it did not see being made. It cannot tell real
 * numbers from invented ones; it checks that the table could be real (the
 * two ends measured, the runs repeated, the same training in every run) and
 * that your conclusion is the one your own numbers support. */
#ifndef LAB06_FUSION_JUDGE_H
#define LAB06_FUSION_JUDGE_H

#include <math.h>
#include <stdio.h>

#include "exercises.h"

#define FUSION_MIN_THRESHOLDS 4
#define FUSION_MIN_RUNS 3
/* The fastest runs of two thresholds may differ by at most this factor: the
 * computation is the same at every threshold, and chapter 1's model has nine
 * tensors, so fusion saves at most eight latencies a step. */
#define FUSION_MAX_SPREAD 2.0

/* The fastest of one threshold's runs: other programs on the machine only
 * ever slow a run down, so the fastest run is the least disturbed. */
static double fusion_fastest(const fusion_measurement *m)
{
    double best = 0;
    for (int r = 0; r < m->runs; r++)
        best = m->images_per_sec[r] > best ? m->images_per_sec[r] : best;
    return best;
}

/* The second fastest run (the fastest again when it was run once). */
static double fusion_second(const fusion_measurement *m)
{
    double best = fusion_fastest(m), second = 0;
    int skipped = 0;
    for (int r = 0; r < m->runs; r++) {
        if (m->images_per_sec[r] == best && !skipped) {
            skipped = 1;
            continue;
        }
        second = m->images_per_sec[r] > second ? m->images_per_sec[r] : second;
    }
    return m->runs > 1 ? second : best;
}

/* Whether each measurement's runs are usable: returns 0, or -1 with why. */
static int fusion_check_runs(const fusion_measurement *m, char *why, size_t len)
{
    if (m->threshold < 0)
        return snprintf(why, len, "threshold %ld is negative", m->threshold), -1;
    if (m->runs < FUSION_MIN_RUNS || m->runs > FUSION_MAX_RUNS)
        return snprintf(why, len, "threshold %ld has %d runs: make %d to %d of each, one speed can be luck",
                        m->threshold, m->runs, FUSION_MIN_RUNS, FUSION_MAX_RUNS), -1;
    for (int r = 0; r < m->runs; r++)
        if (!isfinite(m->images_per_sec[r]) || m->images_per_sec[r] <= 0)
            return snprintf(why, len, "threshold %ld, run %d: %g images/sec is not a speed", m->threshold, r + 1,
                            m->images_per_sec[r]), -1;
    return 0;
}

/* Whether the table as a whole could come from one experiment. */
static int fusion_check_table(const fusion_measurement *m, int count, char *why, size_t len)
{
    if (count < FUSION_MIN_THRESHOLDS)
        return snprintf(why, len, "%d thresholds measured: measure at least %d", count, FUSION_MIN_THRESHOLDS), -1;
    int has_zero = 0, has_all = 0;
    double slowest = INFINITY, fastest = 0;
    for (int i = 0; i < count; i++) {
        if (fusion_check_runs(&m[i], why, len) != 0)
            return -1;
        for (int j = 0; j < i; j++)
            if (m[j].threshold == m[i].threshold)
                return snprintf(why, len, "threshold %ld appears twice: put all its runs in one row",
                                m[i].threshold), -1;
        if (fabs(m[i].loss - m[0].loss) > 1e-6 * fabs(m[0].loss))
            return snprintf(why, len, "the loss at threshold %ld (%g) differs from threshold %ld's (%g): fusion "
                            "changes how the gradients are cut, not their sums, so with 2 processes every run prints "
                            "the same loss; run the same command each time", m[i].threshold, m[i].loss,
                            m[0].threshold, m[0].loss), -1;
        has_zero |= m[i].threshold == 0;
        has_all |= m[i].threshold >= (long)MODEL_GRADIENT_BYTES;
        slowest = fmin(slowest, fusion_fastest(&m[i]));
        fastest = fmax(fastest, fusion_fastest(&m[i]));
    }
    if (!has_zero || !has_all)
        return snprintf(why, len, "measure both ends: threshold 0 (one collective per tensor) and at least %.0f "
                        "(every gradient in one buffer)", MODEL_GRADIENT_BYTES), -1;
    if (fastest > FUSION_MAX_SPREAD * slowest)
        return snprintf(why, len, "the fastest runs differ by %.1fx between thresholds, more than fusion can do "
                        "for this model: was something else different (batch, device, another program)? measure "
                        "again", fastest / slowest), -1;
    return 0;
}

/* Returns 0 when best and clear are what the table says, else -1 with why. */
static int judge_fusion(const fusion_measurement *m, int count, long best, bool clear, char *why, size_t len)
{
    if (fusion_check_table(m, count, why, len) != 0)
        return -1;
    int top = 0, runner_up = -1;
    for (int i = 1; i < count; i++)
        if (fusion_fastest(&m[i]) > fusion_fastest(&m[top]))
            top = i;
    for (int i = 0; i < count; i++)
        if (i != top && (runner_up < 0 || fusion_fastest(&m[i]) > fusion_fastest(&m[runner_up])))
            runner_up = i;
    if (best != m[top].threshold)
        return snprintf(why, len, "your fastest runs say %ld is best (%.1f images/sec), not %ld", m[top].threshold,
                        fusion_fastest(&m[top]), best), -1;
    /* Clear: two runs of the best beat every run of the runner-up. */
    bool is_clear = fusion_second(&m[top]) > fusion_fastest(&m[runner_up]);
    if (clear != is_clear)
        return snprintf(why, len, "threshold %ld's second fastest run (%.1f images/sec) %s the runner-up %ld's "
                        "fastest (%.1f): the difference is %s, so my_best_is_clear should be %s", best,
                        fusion_second(&m[top]), is_clear ? "beats" : "does not beat", m[runner_up].threshold,
                        fusion_fastest(&m[runner_up]), is_clear ? "clear" : "within the noise",
                        is_clear ? "true" : "false"), -1;
    return 0;
}

#endif
