/* bubble.c: exercise bubble. Write my_bubble and my_idle_fraction (see
 * exercises.h).
 *
 * Hints: with S stages and M micro-batches, a stage works for M slots of a
 * pipeline of M + S - 1 slots. For the idle fraction, sum the device's op
 * durations and compare with the span of all ops.
 *
 * Questions the check cannot ask: (1) From my_bubble, predict the idle
 * fraction of each of the lab's two devices at M = 4. Then measure it: run
 * the lab with --split layers --micro_batches 4 --trace trace.json (the
 * chapter's command) and build/labs/07-model-parallel/trace_report
 * trace.json --micro_batches 4; do the same with --micro_batches 1.
 * (2) Explain the difference between your prediction and your measurement:
 * from the per-layer lines (the update included), which stage does more of
 * the work at M = 1 and at M = 4, and what does that do to each device's
 * idle time? (3) The idle time fell. Did the step get faster? Compare the
 * busy times and spans of the two traces (or run
 * labs/07-model-parallel/pipeline_speed.sh), and say where the extra time
 * went: name at least two causes and the line of the report or the trace
 * that shows each.
 *
 * Check your work: make exercises */
#include "exercises.h"

double my_bubble(int stages, int micro_batches)
{
    (void)stages, (void)micro_batches;
    return -1; /* TODO: your code here */
}

double my_idle_fraction(const op_time *ops, int nops, const char *device)
{
    (void)ops, (void)nops, (void)device;
    return -1; /* TODO: your code here */
}
