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

/* Replaces host[0..count) by its sum over the ranks: copied to a device
 * buffer, summed there by ncclAllReduce, copied back. The gradients come
 * to the lab as host tensors (fl_session_run's outputs), hence the copies.
 * Returns 0, or -1 with why filled in. */
int nccl_sum(float *host, size_t count, char *why, size_t len);

/* Frees the communicator and the device buffer; safe when none is open. */
void nccl_close(void);

#endif
