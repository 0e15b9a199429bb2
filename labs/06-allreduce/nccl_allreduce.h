/* nccl_allreduce.h: chapter 6's sum on NVIDIA GPUs (--allreduce nccl). One
 * NCCL communicator over the MPI ranks, set up as Horovod and PyTorch do:
 * rank 0 makes an ncclUniqueId and MPI_Bcast hands it to every rank. */
#ifndef LABS_06_NCCL_ALLREDUCE_H
#define LABS_06_NCCL_ALLREDUCE_H

#include <stddef.h>

#include <mpi.h>

/* Opens this process's communicator, on CUDA device (local rank % the GPUs
 * this process sees): with one GPU per rank, as CUDA_VISIBLE_DEVICES set
 * per rank gives, that is the GPU the lab's /gpu:0 trains on. Collective:
 * every rank of comm calls it, and all fail alike when one rank has no GPU
 * (or the build no NCCL). Returns 0, or -1 with why filled in. */
int nccl_open(MPI_Comm comm, char *why, size_t len);

/* The flowlab device this rank trains on, "/gpu:N" into device: the GPU
 * nccl_open chose, which must be a CUDA device of flowlab's, since the
 * gradients stay there (fetch_to) and NCCL reads them where they lie.
 * Returns 0, or -1 with why filled in. */
int nccl_training_device(char *device, size_t device_len, char *why, size_t len);

/* GPU memory for count floats on the rank's GPU (the reducer's buffer);
 * NULL with why filled in. nccl_free(NULL) does nothing. */
float *nccl_alloc(size_t count, char *why, size_t len);
void nccl_free(float *buffer);

/* Replaces gpu[0..count), GPU memory, by its mean over the ranks, in place:
 * ncclAllReduce with ncclAvg, no copy to or from the host. Blocks until it
 * is done. Returns 0, or -1 with why filled in. */
int nccl_average(float *gpu, size_t count, char *why, size_t len);

/* Copies count floats from the GPU to host (the loss: 4 bytes). */
int nccl_read(float *host, const float *gpu, size_t count, char *why, size_t len);

/* Frees the communicator; safe when none is open. */
void nccl_close(void);

#endif
