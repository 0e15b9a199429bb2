/* ring_allreduce.h: a ring allreduce written in the open, chapter 6's
 * alternative to MPI_Allreduce (--allreduce ring): a reduce-scatter, then an
 * all-gather, each N-1 steps of MPI_Sendrecv between ring neighbours. */
#ifndef LABS_06_RING_ALLREDUCE_H
#define LABS_06_RING_ALLREDUCE_H

#include <stddef.h>

#include <mpi.h>

/* Replaces data[0..count) on every rank of comm by the element-wise sum over
 * all ranks, as MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM,
 * comm) does; every rank ends with bitwise the same values. Each rank sends
 * and receives 2(N-1)/N of the buffer. Returns MPI_SUCCESS, or an MPI error
 * code (comm's error handler permitting), or MPI_ERR_NO_MEM. */
int ring_allreduce_sum(float *data, size_t count, MPI_Comm comm);

/* Where chunk i of n starts when count elements are cut into n chunks whose
 * sizes differ by at most one (the first count % n are one longer);
 * chunk_start(count, n, n) == count. */
size_t ring_chunk_start(size_t count, int n, int i);

#endif
