/* reduce_scatter.c: exercise reduce-scatter. Write the first half of the
 * ring allreduce (see ring_exercise.h): after it, every rank r holds chunk
 * (r + 1) % N summed over all ranks, and the lab's all-gather finishes the
 * job. The check runs your function with the real all-gather of
 * ../ring_allreduce.c under `mpirun -np 2` and `-np 3`, and compares the
 * result with MPI_Allreduce's.
 *
 * Hints: the chunks are those of ring_chunk_start(count, N, i), i = 0..N;
 * chunk i has ring_chunk_start(count, N, i + 1) - ring_chunk_start(count,
 * N, i) elements. At step s (0 to N-2), rank r sends chunk (r - s) mod N to
 * rank r + 1 and receives chunk (r - s - 1) mod N from rank r - 1 into
 * scratch, then adds scratch into its own copy of that chunk. Every rank
 * sends and receives at once: MPI_Sendrecv does both without deadlock.
 * Mind C's %: (-1) % 3 is -1, not 2.
 *
 * The check counts what you send: at most N-1 chunks, only to your right
 * neighbour, and no collective (MPI_Reduce_scatter would do it for you).
 * To try other sizes of ring: mpirun --oversubscribe -np 5
 * build/exercises/06-allreduce/check_reduce_scatter
 *
 * Question the check cannot ask: after the reduce-scatter, each rank holds
 * a different 1/N of the sums. What else could a job do with that, instead
 * of an all-gather? (Think of the optimizer: ZeRO and "sharded" data
 * parallelism start here.)
 *
 * Check your work: make exercises */
#include "ring_exercise.h"
#include "../ring_allreduce.h"

int my_reduce_scatter(float *data, size_t count, float *scratch, MPI_Comm comm)
{
    (void)data, (void)count, (void)scratch, (void)comm;
    return -2; /* TODO: your code here */
}
