/* reducer.h: averaging a step's gradients over the ranks as they become
 * ready: one background thread makes every collective, as Horovod's does;
 * small tensors are fused into buckets up to a threshold, planned once from
 * their sizes as PyTorch DDP plans its buckets, so every rank runs the same
 * collectives in the same order with the same sizes, step after step. */
#ifndef LABS_06_REDUCER_H
#define LABS_06_REDUCER_H

#include <stdbool.h>
#include <stddef.h>

#include <mpi.h>

#include "flowlab.h"
#include "replicas.h"

#define MAX_REDUCED 32 /* tensors a step reduces: the model's 8 gradients and the loss */

typedef struct {
    int count;                    /* tensors, each float32, known by an index 0..count-1 */
    size_t elements[MAX_REDUCED]; /* tensor i's number of elements */
    int order[MAX_REDUCED];       /* the schedule: order[k] is the index reduced k-th */
    size_t fusion_threshold;      /* bytes fused into one collective at most; 0: one per tensor */
    allreduce_algorithm algorithm;
    bool background;   /* a communication thread reduces as tensors arrive (--overlap on);
                        * false: reducer_wait reduces them all on the caller's thread */
    MPI_Comm comm;
    fl_session *trace; /* its collectives go on this session's timeline; NULL: none */
} reducer_plan;

typedef struct reducer reducer;

/* Starts the communication thread when plan->background. NULL when there
 * is no memory for the buffer or no thread. */
reducer *reducer_start(const reducer_plan *plan);

/* Before each step's run: no tensor is ready yet. */
void reducer_begin_step(reducer *r);

/* Tensor index has its value for this step (any thread but the
 * communication thread, once per step): copied into the fusion buffer, so
 * value may go away on return. */
void reducer_tensor_ready(reducer *r, int index, const fl_tensor *value);

/* Until every tensor of the step is averaged over the ranks. 0, or -1 with
 * reducer_error() saying why. */
int reducer_wait(reducer *r);

/* Tensor index's mean over the ranks, after reducer_wait; valid until the
 * next reducer_begin_step. */
const float *reducer_mean(const reducer *r, int index);

const char *reducer_error(const reducer *r);

/* Stops the thread (between steps) and frees r. */
void reducer_stop(reducer *r);

#endif
