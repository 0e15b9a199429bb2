/* nccl_allreduce.c: --allreduce nccl (see nccl_allreduce.h). Built with
 * NCCL when the Makefile finds it beside the CUDA toolkit (FL_HAVE_NCCL);
 * without it, asking for NCCL is a clear error, the same on every rank. */
#include <stdio.h>

#include "nccl_allreduce.h"

#ifdef FL_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

/* One per process: the lab sums over one set of ranks. */
static struct {
    ncclComm_t comm;
    cudaStream_t stream;
    float *buffer;   /* on the device */
    size_t capacity; /* floats */
    int device;
    int open;
} nccl;

/* This rank's index among the ranks on its own machine. */
static int local_rank(MPI_Comm comm)
{
    MPI_Comm local;
    int rank = 0;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &rank);
    MPI_Comm_free(&local);
    return rank;
}

/* Picks and selects this rank's GPU; 0, or -1 with why. */
static int choose_device(MPI_Comm comm, char *why, size_t len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(why, len, "no CUDA GPU here (%s); --allreduce nccl needs one GPU per rank, "
                 "use --allreduce mpi or ring on CPUs", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return -1;
    }
    nccl.device = local_rank(comm) % count;
    e = cudaSetDevice(nccl.device);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaSetDevice(%d): %s", nccl.device, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

/* 1 when every rank of comm says ok, else 0: a rank that cannot go on
 * must not leave the others waiting in ncclCommInitRank. */
static int all_ranks_ok(int ok, MPI_Comm comm)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

int nccl_open(MPI_Comm comm, char *why, size_t len)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    snprintf(why, len, "another rank could not open its GPU (its own error says why)");
    int ok = choose_device(comm, why, len) == 0;
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    if (ok && rank == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess) {
        snprintf(why, len, "ncclGetUniqueId: %s", ncclGetErrorString(r));
        ok = 0;
    }
    if (!all_ranks_ok(ok, comm))
        return -1;
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
    r = ncclCommInitRank(&nccl.comm, size, id, rank);
    if (r != ncclSuccess) {
        snprintf(why, len, "ncclCommInitRank (rank %d of %d on GPU %d): %s", rank, size, nccl.device,
                 ncclGetErrorString(r));
        return -1;
    }
    cudaStreamCreate(&nccl.stream);
    nccl.open = 1;
    return 0;
}

static int grow_buffer(size_t count, char *why, size_t len)
{
    /* CUDA's current device is per thread, and nccl_sum runs on the lab's
     * communication thread (reducer.c), not the thread nccl_open ran on. */
    cudaError_t e = cudaSetDevice(nccl.device);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaSetDevice(%d): %s", nccl.device, cudaGetErrorString(e));
        return -1;
    }
    if (count <= nccl.capacity)
        return 0;
    cudaFree(nccl.buffer);
    nccl.buffer = NULL;
    nccl.capacity = 0;
    e = cudaMalloc((void **)&nccl.buffer, count * sizeof(float));
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaMalloc of %zu gradient values on GPU %d: %s", count, nccl.device,
                 cudaGetErrorString(e));
        return -1;
    }
    nccl.capacity = count;
    return 0;
}

// [book:nccl_sum]
int nccl_sum(float *host, size_t count, char *why, size_t len)
{
    if (!nccl.open) {
        snprintf(why, len, "nccl_sum before nccl_open");
        return -1;
    }
    if (count == 0 || grow_buffer(count, why, len) != 0)
        return count == 0 ? 0 : -1;
    size_t bytes = count * sizeof(float);
    cudaMemcpyAsync(nccl.buffer, host, bytes, cudaMemcpyHostToDevice, nccl.stream);
    ncclResult_t r = ncclAllReduce(nccl.buffer, nccl.buffer, count, ncclFloat, ncclSum, nccl.comm, nccl.stream);
    cudaMemcpyAsync(host, nccl.buffer, bytes, cudaMemcpyDeviceToHost, nccl.stream);
    cudaError_t e = cudaStreamSynchronize(nccl.stream);
    if (r != ncclSuccess || e != cudaSuccess) {
        snprintf(why, len, "ncclAllReduce of %zu values on GPU %d: %s", count, nccl.device,
                 r != ncclSuccess ? ncclGetErrorString(r) : cudaGetErrorString(e));
        return -1;
    }
    return 0;
}
// [end:nccl_sum]

void nccl_close(void)
{
    if (!nccl.open)
        return;
    ncclCommDestroy(nccl.comm);
    cudaFree(nccl.buffer);
    cudaStreamDestroy(nccl.stream);
    nccl.open = 0;
    nccl.buffer = NULL;
    nccl.capacity = 0;
}

#else /* built without NCCL */

#define NO_NCCL "this build has no NCCL: it needs the CUDA toolkit with nccl.h and libnccl " \
                "(/usr/local/cuda) when flowlab is built; use --allreduce mpi or ring"

int nccl_open(MPI_Comm comm, char *why, size_t len)
{
    (void)comm;
    snprintf(why, len, NO_NCCL);
    return -1;
}

int nccl_sum(float *host, size_t count, char *why, size_t len)
{
    (void)host;
    (void)count;
    snprintf(why, len, NO_NCCL);
    return -1;
}

void nccl_close(void)
{
}
#endif
