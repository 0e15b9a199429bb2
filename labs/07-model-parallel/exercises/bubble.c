/* bubble.c: exercise bubble. Write my_bubble and my_idle_fraction (see
 * exercises.h).
 *
 * Hints: with S stages and M micro-batches, a stage works for M slots of a
 * pipeline of M + S - 1 slots. For the idle fraction, sum the device's op
 * durations and compare with the span of all ops.
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
