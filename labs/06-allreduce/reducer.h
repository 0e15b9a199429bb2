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
    const char *device; /* with ALLREDUCE_NCCL: the GPU the tensors stay on, "/gpu:0" */
    bool keep_sums;     /* true: the buffer keeps the sums, for the graph to divide inside the
                         * optimizer's update; false: the reducer divides. NCCL's always average */
} reducer_plan;

typedef struct reducer reducer;

/* Starts the communication thread when plan->background; with
 * ALLREDUCE_SHARED, collective: every rank's buffer goes in one window.
 * NULL, with why, when there is no memory for the buffer, no window (the
 * ranks are not on one machine) or no thread. */
reducer *reducer_start(const reducer_plan *plan, char *why, size_t why_size);

/* Before each step's run: no tensor is ready yet. */
void reducer_begin_step(reducer *r);

/* Each tensor's place in the fusion buffer, by index: fl_run_options'
 * fetch_to, so the run copies each gradient once, straight into its
 * bucket (host memory; with ALLREDUCE_NCCL GPU memory, where it stays). */
const fl_fetch_target *reducer_fetch_to(const reducer *r);

/* Tensor index has its value for this step (any thread but the
 * communication thread, once per step), already in its place in the fusion
 * buffer (the run's output for reducer_fetch_to's target); any other
 * value fails the step, with reducer_error saying which tensor. */
void reducer_tensor_ready(reducer *r, int index, const fl_tensor *value);

/* Until every tensor of the step is averaged over the ranks. 0, or -1 with
 * reducer_error() saying why. */
int reducer_wait(reducer *r);

/* Tensor index reduced over the ranks, after reducer_wait: its sum with
 * plan.keep_sums (not with NCCL), else its mean; as a tensor of shape to
 * feed (a view of the buffer: on the GPU with NCCL), valid until the next
 * reducer_begin_step. */
fl_tensor reducer_tensor(const reducer *r, int index, fl_shape shape);

/* Element 0 of tensor index's mean over the ranks, in host memory (the
 * loss), whatever plan.keep_sums; NAN if the GPU fails. */
float reducer_mean_scalar(const reducer *r, int index);

const char *reducer_error(const reducer *r);

/* Bytes this rank has sent and received in the step's collectives so far,
 * with --allreduce ring: 2(N-1)/N of each bucket each way, as the lab's
 * ring sends them (--allreduce shared: as much read from and written to the
 * other ranks' buffers). -1 for MPI_Allreduce and NCCL, whose libraries
 * choose their own algorithms. Read between steps (after reducer_wait). A reducer
 * as void *, the counter --print_stats reads (run_stats_count_traffic). */
double reducer_bytes_moved(const void *reducer);

/* Stops the thread (between steps) and frees r. */
void reducer_stop(reducer *r);

#endif
