/* bench_training.h: chapter 1's training step in `make bench`: flowlab on
 * /gpu:0 beside /cpu:0 and beside every PyTorch installed (Debian's
 * python3-torch and a newer wheel where there is one), speed and peak
 * memory measured in the same runs, and the issue 29 targets, met or missed. */
#ifndef FLOWLAB_BENCH_TRAINING_H
#define FLOWLAB_BENCH_TRAINING_H

/* gpu_label: what /gpu:0 is ("PoCL" or "CUDA"); openblas_gflops: the
 * machine's sgemm rate, for the step's share of it. */
void bench_training(const char *gpu_label, double openblas_gflops);

#endif
