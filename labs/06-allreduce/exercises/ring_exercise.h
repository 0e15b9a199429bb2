/* ring_exercise.h: exercise reduce-scatter of chapter 6 (reduce_scatter.c),
 * the first half of the ring allreduce. It needs MPI: the check is built
 * with mpicc and runs your function under `mpirun -np 2` and `-np 3`. */
#ifndef LAB06_RING_EXERCISE_H
#define LAB06_RING_EXERCISE_H

#include <stddef.h>

#include <mpi.h>

/* The reduce-scatter of ring_allreduce.c, written by you. data[0..count) is
 * cut into N chunks with ring_chunk_start (ring_allreduce.h), N the size of
 * comm. Using MPI point-to-point messages between ring neighbours only
 * (rank r sends to r+1 and receives from r-1, round the ring), leave on every
 * rank r its chunk (r + 1) % N holding the element-wise sum of that chunk
 * over all ranks: the lab's all-gather then passes the finished chunks round.
 * The other chunks may hold anything. scratch has room for count / N + 1
 * floats. Each rank may send at most N-1 chunks. Returns MPI_SUCCESS, or the
 * MPI error code of a call that failed. */
int my_reduce_scatter(float *data, size_t count, float *scratch, MPI_Comm comm);

#endif
