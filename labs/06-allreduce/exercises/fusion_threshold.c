/* fusion_threshold.c: exercise fusion-threshold. Find the --fusion_threshold
 * that gives the lab the most images/sec on this machine, by measuring.
 *
 * Run the lab with 2 processes at threshold 0 (one collective per tensor),
 * at 67108864 (64 MiB, the default: every gradient in one buffer) and at two
 * or more values between, for example 65536 and 1048576:
 *
 *   mpirun -np 2 build/labs/06-allreduce/allreduce --max_examples 2048 \
 *       --batch_size 128 --train_steps 30 --log_every 10 --fusion_threshold 0
 *
 * (as root, with OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in
 * the environment). Read the "Step 20" line: its images/sec and its loss.
 * Make at least 3 runs of every threshold, taking the thresholds in turn
 * (0, 65536, ..., then 0 again) so that a busy minute of the machine does not
 * fall on one threshold alone. Fill in the table below, then say which
 * threshold is fastest and whether that is clear.
 *
 * How the check reads your table: a threshold's speed is its fastest run,
 * since other programs only ever slow a run down. The best threshold is
 * clearly best when two of its runs are faster than every run of the
 * runner-up; otherwise the difference is within the noise. The check also
 * refuses a table that cannot come from one experiment: the loss must be
 * the same in every run, since fusion changes how the sums are cut, not
 * what they add up to.
 *
 * Questions the check cannot ask: how much does fusion save a step here,
 * by the model (nine tensors, so at most eight latencies)? On a cluster
 * with 50 us of latency, which model would gain from fusion: chapter 1's
 * with nine tensors, or a network with three hundred?
 *
 * Check your work: make exercises */
#include "exercises.h"

const fusion_measurement my_measurements[] = {
    /* {threshold, loss, runs, {images/sec of run 1, run 2, ...}}, */
    {0, 0, 0, {0}}, /* TODO: your measurements here */
};
const int my_measurement_count = 0; /* TODO: how many rows you filled in */
const long my_best_threshold = -1;  /* TODO */
const bool my_best_is_clear = false; /* TODO */
