/* cuda_stats.h: what tests may ask the CUDA backend, without CUDA headers.
 * Exported by the module (cuda/module.map): tests find it with dlsym; impl
 * is the fl_device's impl of a /gpu:N. */
#ifndef FLOWLAB_CUDA_STATS_H
#define FLOWLAB_CUDA_STATS_H

#include <stdint.h>

/* How many times the device's pool has called cudaMalloc. */
uint64_t fl_cuda_pool_mallocs(void *impl);
/* How many times the device has replayed a captured step as a CUDA graph. */
uint64_t fl_cuda_graph_replays(void *impl);

/* How many cuDNN plans the device keeps (conv_plans.c), and how many of
 * them run an algorithm cuDNN does not mark deterministic. */
void fl_cuda_conv_plan_counts(void *impl, int *plans, int *nondeterministic);
/* Whether the device allows TF32 (FLOWLAB_ALLOW_TF32, the GPU), and how
 * many of its cuDNN plans chose their algorithm by timing them all. */
void fl_cuda_math_policy(void *impl, int *tf32, int *measured_plans);
/* How many of its plans run a cuDNN graph-API engine that timed faster
 * than the legacy algorithm (conv_engines.c). */
int fl_cuda_conv_graph_plans(void *impl);

#endif
