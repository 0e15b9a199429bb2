/* cuda_graph.h: run()'s launches recorded and flushed as one CUDA graph
 * (cuda_graph.c). Every other operation on the device's stream flushes
 * first, so the stream sees the same order as without recording. */
#ifndef FLOWLAB_CUDA_GRAPH_H
#define FLOWLAB_CUDA_GRAPH_H

#include "launch.h"

/* Made when a device opens; FLOWLAB_CUDA_GRAPH=0 makes one that never
 * records (every launch goes straight to the stream). */
fl_cuda_recorder *fl_cuda_recorder_new(void);
void fl_cuda_recorder_free(fl_cuda_device *d);
/* Records node n's launch (or, when not recording, makes it now). */
int fl_cuda_record(fl_cuda_device *d, fl_cuda_launcher launch, const fl_node *n, fl_tensor *const *in,
                   fl_tensor *out, const fl_kernel_ctx *ctx);
/* Enqueues what was recorded: a captured graph, or op by op. -1 with the
 * error set (naming the op) when a launch fails. */
int fl_cuda_flush(fl_cuda_device *d);
/* For a traced op (cuda_trace.c): what was recorded is flushed, then n's
 * launches run between the two events, as a graph of their own where they
 * can be captured (*exec, for the caller to destroy after `after`). */
int fl_cuda_run_timed(fl_cuda_device *d, fl_cuda_launcher launch, const fl_node *n, fl_tensor *const *in,
                      fl_tensor *out, const fl_kernel_ctx *ctx, cudaEvent_t before, cudaEvent_t after,
                      cudaGraphExec_t *exec);
/* graph_edges.c: what one recorded launch touches: its inputs, the first
 * `written` of them updated in place (fl_node_writes_inputs), and its output. */
typedef struct {
    fl_cuda_launcher launch;
    const fl_tensor *inputs;
    int ninputs, written;
    const fl_tensor *out;
} fl_cuda_launch_touches;
/* Whether `later` must wait for `earlier`: one writes bytes the other
 * reads or writes, or both use cuBLAS. Two readers of a value need no order. */
bool fl_cuda_must_follow(const fl_cuda_launch_touches *later, const fl_cuda_launch_touches *earlier);
/* A set of graph nodes: what a launch's kernels end with, or wait for. */
typedef struct {
    cudaGraphNode_t *nodes;
    size_t count, capacity;
} fl_cuda_node_set;
/* Adds the nodes not already in the set. */
void fl_cuda_node_set_add(fl_cuda_node_set *set, const cudaGraphNode_t *nodes, size_t count);

/* cuda_trace.c: while the session traces, each op runs at once between two
 * events (nothing is recorded), so its device time is its own. */
int fl_cuda_traced_run(fl_cuda_device *d, fl_cuda_launcher launch, const fl_node *n, fl_tensor *const *in,
                       fl_tensor *out, const fl_kernel_ctx *ctx);

#endif
