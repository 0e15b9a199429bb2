/* shared_allreduce.h: chapter 6's allreduce for ranks on one machine
 * (--allreduce shared). Every rank's fusion buffer lies in one MPI-3
 * shared-memory window, so no bytes travel as messages: each rank adds up
 * its 1/N of a bucket straight from all N buffers and writes the sum back
 * into each. Horovod and NCCL reduce inside a machine through shared memory
 * for the same reason: a message costs copies the loads and stores avoid. */
#ifndef LABS_06_SHARED_ALLREDUCE_H
#define LABS_06_SHARED_ALLREDUCE_H

#include <stddef.h>

#include <mpi.h>

typedef struct shared_buffers shared_buffers;

/* Collective over comm: each rank allocates `count` floats in one shared
 * window and gets its own in *mine. NULL, with why, when the ranks are not
 * all on one machine or MPI cannot share the memory. */
shared_buffers *shared_buffers_allocate(size_t count, MPI_Comm comm, float **mine, char *why, size_t why_size);

/* Collective: elements [start, start + count) of every rank's buffer become
 * their sum over the ranks, bitwise the same in each (one rank adds up each
 * element, in rank order). Every rank must have written its part first.
 * 0, or -1 with why. */
int shared_allreduce_sum(shared_buffers *b, size_t start, size_t count, char *why, size_t why_size);

/* Collective: frees the window. */
void shared_buffers_free(shared_buffers *b);

#endif
