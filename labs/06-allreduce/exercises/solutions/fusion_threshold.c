/* solutions/fusion_threshold.c: a reference answer to exercise
 * fusion-threshold, from real runs on the machine this book was written on
 * (2 shared cores of an Intel Xeon, one single-core PoCL device per
 * process, other programs running beside), with the command of
 * fusion_threshold.c, five rounds over the thresholds. The lab then had no
 * --fusion_threshold flag yet: a scratch build cut its one buffer the same
 * way (consecutive tensors fused up to the threshold, each buffer summed
 * after the backward pass, no overlap) from an environment variable.
 * Re-measure with the flag. The loss was 0.714113 in all 25 runs. */
#include "exercises.h"

const fusion_measurement my_measurements[] = {
    {0, 0.714113, 5, {1347.0, 1337.7, 333.8, 1170.2, 250.7}},
    {65536, 0.714113, 5, {1164.3, 443.0, 1344.3, 278.7, 207.8}},
    {1048576, 0.714113, 5, {1353.6, 1342.8, 1174.6, 297.7, 183.4}},
    {4194304, 0.714113, 5, {1341.5, 407.9, 397.5, 240.0, 206.8}},
    {67108864, 0.714113, 5, {1360.5, 1351.3, 567.1, 261.7, 248.0}},
};
const int my_measurement_count = 5;
/* The fastest runs are within 1.5% of each other: 64 MiB's 1360.5 is the
 * top, but its second run, 1351.3, is slower than 1 MiB's best, 1353.6.
 * The model says why: at most eight latencies of a few microseconds each,
 * against a step of about 95 ms. */
const long my_best_threshold = 67108864;
const bool my_best_is_clear = false;
