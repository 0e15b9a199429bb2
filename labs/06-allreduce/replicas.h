/* replicas.h: what keeps the ranks' copies of the variables identical in
 * chapter 6's lab: rank 0's values broadcast at the start, every step's
 * gradients summed over the ranks (reducer.h averages them), and a checksum of the
 * variables that shows, at the end, that the copies never drifted apart. */
#ifndef LABS_06_REPLICAS_H
#define LABS_06_REPLICAS_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "flowlab.h"

#define MAX_REPLICA_VARIABLES 64 /* the model and Adam hold 26 */

/* How the gradients are summed (--allreduce). */
typedef enum { ALLREDUCE_MPI, ALLREDUCE_RING, ALLREDUCE_SHARED, ALLREDUCE_NCCL } allreduce_algorithm;

/* Every global variable (Adam's slots and the global step too), with a
 * placeholder and an assign per variable so that a run can write values in. */
typedef struct {
    int count;
    fl_node *variables[MAX_REPLICA_VARIABLES];
    fl_node *values[MAX_REPLICA_VARIABLES]; /* placeholders of the same dtype and shape */
    fl_node *assign_all;                    /* assigns every value to its variable */
} variable_io;

/* Adds the placeholders and assigns for every global variable of g, in the
 * current device scope; call it after the optimizer made its slots.
 * Returns 0, or -1 with the graph's error set. */
int variable_io_build(fl_graph *g, variable_io *io);

/* Every rank's variables take root's values (MPI_Bcast). Returns 0, or -1
 * with replicas_error() saying why. */
int broadcast_variables(fl_session *s, const variable_io *io, int root, MPI_Comm comm);

/* Sums buffer[0..count), host memory, over the ranks of comm, in place,
 * with MPI_Allreduce or the ring: where the lab sums gradients on the host
 * (the communication thread of reducer.c calls it per fused bucket; NCCL's
 * buckets stay on the GPU, nccl_allreduce.h, and the shared window's are
 * summed where they lie, shared_allreduce.h). Called by one thread at a
 * time. Returns 0, or -1 with replicas_error() saying why. */
int sum_across_ranks(float *buffer, size_t count, allreduce_algorithm algorithm, MPI_Comm comm);

/* What sums with algorithm, for messages and the trace: "MPI_Allreduce",
 * "the ring allreduce", "shared memory (MPI_Win_allocate_shared)" or
 * "ncclAllReduce". */
const char *allreduce_algorithm_name(allreduce_algorithm algorithm);

/* The algorithm an --allreduce value names (mpi, ring, shared or nccl);
 * false for any other value. */
bool allreduce_algorithm_parse(const char *flag_value, allreduce_algorithm *out);

/* FNV-1a over the bytes of every global variable's value, in graph order:
 * equal on two ranks exactly when their variables are bitwise equal (but
 * for a collision). Returns 0, or -1 with replicas_error() saying why. */
int variables_checksum(fl_session *s, const variable_io *io, uint64_t *out);

/* Rank 0 gathers every rank's checksum and prints them in rank order, one
 * "rank R of N: variables checksum X" line each, so the output is the same
 * from run to run (ranks printing their own lines race). Collective. */
void print_checksums_in_rank_order(uint64_t mine, MPI_Comm comm);

/* Why the last of the functions above failed. */
const char *replicas_error(void);

#endif
