/* bench_allreduce.h: chapter 6's part of `make bench`: the lab's two
 * processes beside chapters 2 and 3 (bench.c runs it in their rounds), and
 * the cost model's numbers measured here: alpha and bandwidth of a 2-rank
 * MPI_Allreduce, its time against a memcpy of the same bytes, one worker's
 * compute per step, and the model's N = 2 prediction against the lab at a
 * batch where compute dominates and one where the allreduce weighs. */
#ifndef FLOWLAB_BENCH_ALLREDUCE_H
#define FLOWLAB_BENCH_ALLREDUCE_H

#include <stdbool.h>

/* mpirun as the bench starts it: --oversubscribe in case the machine counts
 * fewer slots than ranks, the backend passed on to the ranks (each rank
 * makes itself one single-core PoCL device, as the lab does by default). */
#define BENCH_MPIRUN "FLOWLAB_BACKEND=opencl mpirun --oversubscribe -x FLOWLAB_BACKEND "
#define BENCH_LAB06 "build/labs/06-allreduce/allreduce"
#define BENCH_ALLREDUCE_PROBE "build/bench/allreduce_probe"

/* Chapter 6's lab on 2 processes, with chapter 2's towers' global batch
 * (256: 128 per process) and seed; the caller appends --train_steps. */
#define ALLREDUCE_TWO_PROCESSES \
    BENCH_MPIRUN "-np 2 " BENCH_LAB06 " --log_every 1 --batch_size 256 --seed 1"

/* True when mpirun, the lab and the probe are there (MPI is optional);
 * lets Open MPI start as root, as CI runs. */
bool allreduce_bench_ready(void);

/* Prints the rows of the cost model's inputs and its check: alpha,
 * bandwidth, allreduce against memcpy, compute per step, and the model's
 * prediction for 2 processes against the lab's measured images/sec. */
void bench_allreduce_model(void);

#endif
