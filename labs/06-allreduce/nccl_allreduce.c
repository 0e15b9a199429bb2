/* nccl_allreduce.c: --allreduce nccl (see nccl_allreduce.h): the gradients
 * stay on the GPU, in a buffer of this file's, averaged there by NCCL. Built
 * with NCCL when the Makefile finds it beside the CUDA toolkit (FL_HAVE_NCCL);
 * without it, asking for NCCL is a clear error, the same on every rank. */
#include <stdio.h>
#include <string.h>

#include "flowlab.h"
#include "nccl_allreduce.h"

#ifdef FL_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

/* One per process: the lab sums over one set of ranks. */
static struct {
    ncclComm_t comm;
    cudaStream_t stream;
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

/* CUDA's current device is per thread, and the reducer's collectives run
 * on the lab's communication thread, not the thread nccl_open ran on. */
static int use_device(char *why, size_t len)
{
    cudaError_t e = cudaSetDevice(nccl.device);
    if (e == cudaSuccess)
        return 0;
    snprintf(why, len, "cudaSetDevice(%d): %s", nccl.device, cudaGetErrorString(e));
    return -1;
}

int nccl_training_device(char *device, size_t device_len, char *why, size_t len)
{
    snprintf(device, device_len, "/gpu:%d", nccl.device);
    fl_device_info devices[16];
    int count = fl_list_devices(devices, 16);
    for (int i = 0; i < count; i++)
        if (strcmp(devices[i].name, device) == 0 && strcmp(devices[i].backend, "cuda") == 0)
            return 0;
    snprintf(why, len, "NCCL sums on CUDA GPU %d, where the gradients must stay, but flowlab's %s is not "
             "that GPU (its backends: see flowlab-devices); run with FLOWLAB_BACKEND=cuda", nccl.device, device);
    return -1;
}

float *nccl_alloc(size_t count, char *why, size_t len)
{
    float *buffer = NULL;
    if (use_device(why, len) != 0)
        return NULL;
    cudaError_t e = cudaMalloc((void **)&buffer, (count ? count : 1) * sizeof(float));
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaMalloc of %zu gradient values on GPU %d: %s", count, nccl.device,
                 cudaGetErrorString(e));
        return NULL;
    }
    return buffer;
}

void nccl_free(float *buffer)
{
    cudaFree(buffer);
}

// [book:nccl_average]
int nccl_average(float *gpu, size_t count, char *why, size_t len)
{
    if (!nccl.open) {
        snprintf(why, len, "nccl_average before nccl_open");
        return -1;
    }
    if (count == 0 || use_device(why, len) != 0)
        return count == 0 ? 0 : -1;
    ncclResult_t r = ncclAllReduce(gpu, gpu, count, ncclFloat, ncclAvg, nccl.comm, nccl.stream);
    cudaError_t e = r == ncclSuccess ? cudaStreamSynchronize(nccl.stream) : cudaSuccess;
    if (r != ncclSuccess || e != cudaSuccess) {
        snprintf(why, len, "ncclAllReduce of %zu values on GPU %d: %s", count, nccl.device,
                 r != ncclSuccess ? ncclGetErrorString(r) : cudaGetErrorString(e));
        return -1;
    }
    return 0;
}
// [end:nccl_average]

int nccl_read(float *host, const float *gpu, size_t count, char *why, size_t len)
{
    if (use_device(why, len) != 0)
        return -1;
    cudaError_t e = cudaMemcpy(host, gpu, count * sizeof(float), cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        return 0;
    snprintf(why, len, "reading %zu values from GPU %d: %s", count, nccl.device, cudaGetErrorString(e));
    return -1;
}

void nccl_close(void)
{
    if (!nccl.open)
        return;
    ncclCommDestroy(nccl.comm);
    cudaStreamDestroy(nccl.stream);
    nccl.open = 0;
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

int nccl_training_device(char *device, size_t device_len, char *why, size_t len)
{
    snprintf(device, device_len, "/gpu:0");
    snprintf(why, len, NO_NCCL);
    return -1;
}

float *nccl_alloc(size_t count, char *why, size_t len)
{
    (void)count;
    snprintf(why, len, NO_NCCL);
    return NULL;
}

void nccl_free(float *buffer)
{
    (void)buffer;
}

int nccl_average(float *gpu, size_t count, char *why, size_t len)
{
    (void)gpu;
    (void)count;
    snprintf(why, len, NO_NCCL);
    return -1;
}

int nccl_read(float *host, const float *gpu, size_t count, char *why, size_t len)
{
    (void)host;
    (void)gpu;
    (void)count;
    snprintf(why, len, NO_NCCL);
    return -1;
}

void nccl_close(void)
{
}
#endif
