/* graph_edges.c: which of a step's recorded launches must wait for which,
 * so that a step's CUDA graph (cuda_graph.c) has the step's own
 * dependencies as its edges, not the order the ops were issued in. */
#include <stdlib.h>

#include "cuda_graph.h"

/* Whether two tensors share a byte of device memory: a value and its alias
 * (Reshape), or a pool block that a later value of the step reuses. */
static bool share_bytes(const fl_tensor *a, const fl_tensor *b)
{
    size_t na = a->data ? fl_tensor_bytes(a) : 0, nb = b->data ? fl_tensor_bytes(b) : 0;
    const char *pa = a->data, *pb = b->data;
    return na > 0 && nb > 0 && pa < pb + nb && pb < pa + na;
}

/* Whether the launch writes its tensor i: its output (index -1), or one of
 * the first inputs an update changes in place (Assign, ApplyAdam). */
static bool writes(const fl_cuda_launch_touches *c, int i) { return i < c->written; }

static const fl_tensor *tensor_of(const fl_cuda_launch_touches *c, int i) { return i < 0 ? c->out : &c->inputs[i]; }

/* cuBLAS's calls share the handle's one workspace, so they stay in order. */
static bool uses_cublas(const fl_cuda_launch_touches *c)
{
    return c->launch == fl_cuda_matmul || c->launch == fl_cuda_fused_matmul;
}

// [book:must_follow]
bool fl_cuda_must_follow(const fl_cuda_launch_touches *later, const fl_cuda_launch_touches *earlier)
{
    if (uses_cublas(later) && uses_cublas(earlier))
        return true;
    for (int i = -1; i < later->ninputs; i++)
        for (int j = -1; j < earlier->ninputs; j++)
            if ((writes(later, i) || writes(earlier, j)) && share_bytes(tensor_of(later, i), tensor_of(earlier, j)))
                return true;
    return false;
}
// [end:must_follow]

void fl_cuda_node_set_add(fl_cuda_node_set *set, const cudaGraphNode_t *nodes, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        bool there = false;
        for (size_t j = 0; j < set->count && !there; j++)
            there = set->nodes[j] == nodes[i];
        if (there)
            continue;
        if (set->count == set->capacity) {
            set->capacity = set->capacity ? set->capacity * 2 : 16;
            set->nodes = fl_xrealloc(set->nodes, set->capacity * sizeof *set->nodes);
        }
        set->nodes[set->count++] = nodes[i];
    }
}
