/* shared_allreduce.c: the allreduce of shared_allreduce.h. A bucket of N
 * ranks is cut into N chunks as the ring cuts it; rank r adds up chunk r
 * from every buffer and stores the sum into every buffer. Each rank reads
 * and writes N chunks: the ring's 2(N-1)/N of the bucket, as loads and
 * stores where MPI_Allreduce would copy messages through the kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared_allreduce.h"

struct shared_buffers {
    MPI_Comm node; /* the ranks that share the window: every rank of the job */
    MPI_Win window;
    int rank, ranks;
    float **all;   /* by rank: where that rank's buffer lies in this process */
};

static int say(char *why, size_t why_size, const char *what, int code)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    snprintf(why, why_size, "%s: %.*s", what, len, text);
    return -1;
}

/* The ranks of comm that share this one's memory; NULL unless that is all of them. */
static MPI_Comm one_machine(MPI_Comm comm, char *why, size_t why_size)
{
    int rank = 0, ranks = 0, here = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    MPI_Comm node = MPI_COMM_NULL;
    int code = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    if (code != MPI_SUCCESS) {
        say(why, why_size, "finding the ranks on this machine", code);
        return MPI_COMM_NULL;
    }
    MPI_Comm_size(node, &here);
    if (here == ranks)
        return node;
    snprintf(why, why_size, "the %d ranks are not all on one machine (%d share this one's memory): "
             "use --allreduce mpi or ring", ranks, here);
    MPI_Comm_free(&node);
    return MPI_COMM_NULL;
}

shared_buffers *shared_buffers_allocate(size_t count, MPI_Comm comm, float **mine, char *why, size_t why_size)
{
    MPI_Comm node = one_machine(comm, why, why_size);
    if (node == MPI_COMM_NULL)
        return NULL;
    int ranks = 0;
    MPI_Comm_size(node, &ranks);
    shared_buffers *b = calloc(1, sizeof *b);
    float **all = calloc((size_t)ranks, sizeof *all);
    if (!b || !all) {
        snprintf(why, why_size, "no memory for the shared window's %d buffer addresses", ranks);
        MPI_Comm_free(&node);
        free(b);
        free(all);
        return NULL;
    }
    b->ranks = ranks;
    MPI_Comm_rank(node, &b->rank);
    b->node = node;
    b->all = all;
    /* each rank's part on pages of its own, first touched by its owner */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    int code = MPI_Win_allocate_shared((MPI_Aint)((count ? count : 1) * sizeof(float)), sizeof(float), info, node,
                                       mine, &b->window);
    MPI_Info_free(&info);
    if (code != MPI_SUCCESS) {
        say(why, why_size, "allocating the shared window", code);
        MPI_Comm_free(&b->node);
        free(b->all);
        free(b);
        return NULL;
    }
    for (int r = 0; r < b->ranks; r++) {
        MPI_Aint size = 0;
        int unit = 0;
        MPI_Win_shared_query(b->window, r, &size, &unit, &b->all[r]);
    }
    /* one passive epoch for the window's life: MPI_Win_sync orders the loads and stores */
    MPI_Win_lock_all(MPI_MODE_NOCHECK, b->window);
    return b;
}

enum { BLOCK = 2048 }; /* elements summed at a time: 8 KiB, in L1 */

/* Chunk [from, to) of every buffer becomes its sum, added in rank order. */
static void add_up(float *const *all, int ranks, size_t from, size_t to)
{
    float sum[BLOCK];
    for (size_t k = from; k < to; k += BLOCK) {
        size_t length = to - k < BLOCK ? to - k : BLOCK;
        memcpy(sum, all[0] + k, length * sizeof *sum);
        for (int r = 1; r < ranks; r++) {
            const float *part = all[r] + k;
            for (size_t j = 0; j < length; j++)
                sum[j] += part[j];
        }
        for (int r = 0; r < ranks; r++)
            memcpy(all[r] + k, sum, length * sizeof *sum);
    }
}

/* Every rank's stores so far are seen by every other's loads after it. */
static int all_reach(shared_buffers *b, char *why, size_t why_size)
{
    MPI_Win_sync(b->window);
    int code = MPI_Barrier(b->node);
    MPI_Win_sync(b->window);
    return code == MPI_SUCCESS ? 0 : say(why, why_size, "waiting for the other ranks", code);
}

// [book:shared_sum]
int shared_allreduce_sum(shared_buffers *b, size_t start, size_t count, char *why, size_t why_size)
{
    if (all_reach(b, why, why_size) != 0) /* every rank has its bucket in place */
        return -1;
    size_t n = (size_t)b->ranks, r = (size_t)b->rank;
    add_up(b->all, b->ranks, start + count * r / n, start + count * (r + 1) / n);
    return all_reach(b, why, why_size); /* every chunk is summed: nobody reads a buffer while it changes */
}
// [end:shared_sum]

void shared_buffers_free(shared_buffers *b)
{
    if (!b)
        return;
    MPI_Win_unlock_all(b->window);
    MPI_Win_free(&b->window);
    MPI_Comm_free(&b->node);
    free(b->all);
    free(b);
}
