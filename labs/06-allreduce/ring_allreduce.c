/* ring_allreduce.c: the ring allreduce of ring_allreduce.h. The buffer is cut
 * into N chunks; in the reduce-scatter every rank passes one chunk to its
 * right neighbour and adds the one from its left, N-1 times, so that each
 * rank ends holding one chunk summed over all ranks; the all-gather passes
 * those finished chunks round the ring, N-1 times, until every rank has all. */
#include <limits.h>
#include <stdlib.h>

#include "ring_allreduce.h"

// [book:chunks]
size_t ring_chunk_start(size_t count, int n, int i)
{
    size_t base = count / (size_t)n, longer = count % (size_t)n;
    return base * (size_t)i + ((size_t)i < longer ? (size_t)i : longer);
}
// [end:chunks]

/* The chunk a rank sends at a step, wrapped round the ring. */
static int ring_index(int i, int n)
{
    return ((i % n) + n) % n;
}

static int chunk_length(size_t count, int n, int i)
{
    return (int)(ring_chunk_start(count, n, i + 1) - ring_chunk_start(count, n, i));
}

/* Step s of N-1: send chunk rank-s to the right, receive chunk rank-s-1 from
 * the left into scratch and add it in. After the last step this rank's chunk
 * rank+1 holds the sum over all ranks. */
static int reduce_scatter(float *data, size_t count, float *scratch, int rank, int n, MPI_Comm comm)
{
    int right = ring_index(rank + 1, n), left = ring_index(rank - 1, n);
    for (int s = 0; s < n - 1; s++) {
        int send = ring_index(rank - s, n), recv = ring_index(rank - s - 1, n);
        float *into = data + ring_chunk_start(count, n, recv);
        int recv_length = chunk_length(count, n, recv);
        int rc = MPI_Sendrecv(data + ring_chunk_start(count, n, send), chunk_length(count, n, send),
                              MPI_FLOAT, right, 0, scratch, recv_length, MPI_FLOAT, left, 0, comm,
                              MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        for (int k = 0; k < recv_length; k++)
            into[k] += scratch[k];
    }
    return MPI_SUCCESS;
}

// [book:all_gather]
/* Step s of N-1: send the finished chunk rank+1-s to the right, receive the
 * finished chunk rank-s from the left straight into place. */
static int all_gather(float *data, size_t count, int rank, int n, MPI_Comm comm)
{
    int right = ring_index(rank + 1, n), left = ring_index(rank - 1, n);
    for (int s = 0; s < n - 1; s++) {
        int send = ring_index(rank + 1 - s, n), recv = ring_index(rank - s, n);
        int rc = MPI_Sendrecv(data + ring_chunk_start(count, n, send), chunk_length(count, n, send),
                              MPI_FLOAT, right, 1, data + ring_chunk_start(count, n, recv),
                              chunk_length(count, n, recv), MPI_FLOAT, left, 1, comm,
                              MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}
// [end:all_gather]

// [book:ring_allreduce_sum]
int ring_allreduce_sum(float *data, size_t count, MPI_Comm comm)
{
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    if (n == 1 || count == 0)
        return MPI_SUCCESS;
    /* MPI counts are ints: a chunk must fit in one. */
    if (count / (size_t)n + 1 > (size_t)INT_MAX)
        return MPI_ERR_COUNT;
    float *scratch = malloc((count / (size_t)n + 1) * sizeof *scratch);
    if (!scratch)
        return MPI_ERR_NO_MEM;
    int rc = reduce_scatter(data, count, scratch, rank, n, comm);
    if (rc == MPI_SUCCESS)
        rc = all_gather(data, count, rank, n, comm);
    free(scratch);
    return rc;
}
// [end:ring_allreduce_sum]
