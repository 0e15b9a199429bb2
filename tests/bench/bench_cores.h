/* bench_cores.h: the same cores for every configuration of the bench's
 * scaling rows (chapters 2, 3, 4, 6 and 7): the bench pins itself to two
 * CPUs, which every command it starts inherits, and one BLAS thread each. */
#ifndef FLOWLAB_BENCH_CORES_H
#define FLOWLAB_BENCH_CORES_H

/* How each configuration splits its two cores among PoCL's threads (PoCL
 * 3's pthread devices share one pool of worker threads, sized by
 * POCL_MAX_PTHREAD_COUNT): chapters 2 and 7's single process, two devices
 * in one pool of two threads; a cluster's task or an MPI rank, one device
 * of one thread. Even on a machine whose /gpu:0 is CUDA. */
#define ON_POCL "FLOWLAB_BACKEND=opencl "
#define ON_POCL_TWO "POCL_DEVICES='pthread pthread' POCL_MAX_PTHREAD_COUNT=2 " ON_POCL
#define ON_POCL_ONE "POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=1 " ON_POCL

/* Chapter 2's lab at the scaling rows' global batch (256) and seed, and its
 * two towers sharing one pool: the side chapters 2, 3 and 6 are held
 * against (callers append --train_steps). */
#define LAB02 "build/labs/02-in-graph-towers/in_graph_towers"
#define SCALING_FLAGS " --log_every 1 --batch_size 256 --seed 1"
#define TWO_TOWERS ON_POCL_TWO LAB02 " --num_gpus 2" SCALING_FLAGS

/* Pins this process, and so every process it starts from now on, to the
 * first two CPUs it may run on (as `taskset -c A,B` would), and sets
 * OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1 for the children. Prints
 * one line saying so; returns the CPUs ("0,1"), or "all" after a note
 * when this machine gives fewer than two. */
const char *bench_same_cores(void);

/* The CPUs bench_same_cores chose ("all" before it ran). */
const char *bench_cores(void);

/* A command prefix that confines a whole process, its host threads as well
 * as its PoCL pool, to the first of those CPUs ("taskset -c 0"), for the
 * rows whose baseline is one core; "" when the bench runs unpinned. */
const char *bench_one_core(void);

#endif
