/* solutions/reduce_scatter.c: a reference answer to exercise reduce-scatter.
 * It sends with MPI_Isend and receives with MPI_Recv, where the lab's ring
 * (../ring_allreduce.c) uses MPI_Sendrecv: the send is under way before the
 * receive waits, so no rank blocks the ring. */
#include "ring_exercise.h"
#include "../ring_allreduce.h"

/* Chunk i's first element and length. */
static float *chunk(float *data, size_t count, int n, int i, int *length)
{
    size_t start = ring_chunk_start(count, n, i);
    *length = (int)(ring_chunk_start(count, n, i + 1) - start);
    return data + start;
}

int my_reduce_scatter(float *data, size_t count, float *scratch, MPI_Comm comm)
{
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    for (int s = 0; s < n - 1; s++) {
        /* s < n and rank >= 0, so adding n once keeps both indices >= 0. */
        int outgoing, incoming;
        float *out = chunk(data, count, n, (rank - s + n) % n, &outgoing);
        float *in = chunk(data, count, n, (rank - s - 1 + n) % n, &incoming);
        MPI_Request sent;
        int rc = MPI_Isend(out, outgoing, MPI_FLOAT, (rank + 1) % n, 0, comm, &sent);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(scratch, incoming, MPI_FLOAT, (rank - 1 + n) % n, 0, comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&sent, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        for (int k = 0; k < incoming; k++)
            in[k] += scratch[k];
    }
    return MPI_SUCCESS;
}
