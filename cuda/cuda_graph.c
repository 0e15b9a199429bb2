/* cuda_graph.c: a step's kernels as one CUDA graph. run() records each
 * launch instead of making it; the next operation on the stream flushes
 * the record. Launches seen before with the same buffers are captured into
 * a graph (stream capture) the second time and replayed from then on: one
 * cudaGraphLaunch, none of the launchers' host work, no gaps between the
 * kernels. The graph keeps the step's own dependencies, not the order the
 * ops were issued in, so kernels that do not depend on each other (a
 * filter gradient beside the data gradient, the bias gradients) run side
 * by side. What cannot be captured runs op by op, and the device says why
 * once. FLOWLAB_CUDA_GRAPH=0 launches everything op by op; =serial
 * captures the launches as one chain, in issue order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_graph.h"

#define MAX_GRAPHS 16  /* a program runs a few signatures (train, eval, init) */
#define KEY_WORDS_PER_TENSOR 7

/* One recorded launch; its tensors are copies, in the recorder's array. */
typedef struct {
    fl_cuda_launcher launch;
    const fl_node *node;
    int first_input, ninputs;
    fl_tensor out;
    fl_kernel_ctx ctx;
} command;

/* A sequence of launches seen before: its key (launchers, nodes, every
 * buffer and shape), and once captured its graph and what the graph owns. */
typedef struct {
    uint64_t *key;
    size_t nkey;
    uint64_t order; /* a hash of the launchers and nodes alone */
    cudaGraphExec_t exec;
    bool failed;    /* its capture failed: op by op from now on */
    void **owned;   /* pool blocks its kernels use as scratch */
    int nowned;
    int fault_first, fault_count; /* the fault slots its checking ops use */
    char (*fault_names)[64];
    uint64_t last_used;
} graph_entry;

struct fl_cuda_recorder {
    bool enabled;
    bool serial; /* FLOWLAB_CUDA_GRAPH=serial: one chain, no side-by-side kernels */
    pthread_mutex_t lock;
    command *commands;
    int ncommands, commands_capacity;
    fl_tensor *tensors;
    int ntensors, tensors_capacity;
    uint64_t *key;
    size_t nkey, key_capacity;
    uint64_t order;
    const char *uncapturable; /* why this record cannot be captured, or NULL */
    graph_entry graphs[MAX_GRAPHS];
    int ngraphs;
    uint64_t clock, replays;
    int moved; /* misses whose launches matched a known sequence's, not its buffers */
    bool said_why;
};

fl_cuda_recorder *fl_cuda_recorder_new(void)
{
    fl_cuda_recorder *r = fl_xcalloc(1, sizeof *r);
    const char *env = getenv("FLOWLAB_CUDA_GRAPH");
    r->enabled = !(env && strcmp(env, "0") == 0);
    r->serial = env && strcmp(env, "serial") == 0;
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

/* ---- the record ---- */

static void add_key(fl_cuda_recorder *r, uint64_t word)
{
    if (r->nkey == r->key_capacity) {
        r->key_capacity = r->key_capacity ? r->key_capacity * 2 : 1024;
        r->key = fl_xrealloc(r->key, r->key_capacity * sizeof *r->key);
    }
    r->key[r->nkey++] = word;
}

/* What a replay depends on: the buffer, and the shape the kernel was sized for. */
static void add_tensor_key(fl_cuda_recorder *r, const fl_tensor *t)
{
    add_key(r, (uint64_t)(uintptr_t)t->data);
    add_key(r, ((uint64_t)t->dtype << 32) | (uint32_t)t->shape.rank);
    for (int i = 0; i < FL_MAX_RANK; i++)
        add_key(r, i < t->shape.rank ? (uint64_t)(int64_t)t->shape.dims[i] : 0);
}

static void keep_tensor(fl_cuda_recorder *r, const fl_tensor *t)
{
    if (r->ntensors == r->tensors_capacity) {
        r->tensors_capacity = r->tensors_capacity ? r->tensors_capacity * 2 : 256;
        r->tensors = fl_xrealloc(r->tensors, (size_t)r->tensors_capacity * sizeof *r->tensors);
    }
    r->tensors[r->ntensors++] = *t;
    add_tensor_key(r, t);
}

/* Random initializers copy numbers made on the host, from a buffer that is
 * new each run: a graph would copy the first run's numbers again. */
static const char *why_uncapturable(const fl_node *n)
{
    if (n->op == FL_OP_RANDOM_UNIFORM || n->op == FL_OP_TRUNCATED_NORMAL)
        return "a random initializer copies numbers made on the host each run";
    return NULL;
}

static void append(fl_cuda_recorder *r, fl_cuda_launcher launch, const fl_node *n, fl_tensor *const *in,
                   const fl_tensor *out, const fl_kernel_ctx *ctx)
{
    if (r->ncommands == r->commands_capacity) {
        r->commands_capacity = r->commands_capacity ? r->commands_capacity * 2 : 128;
        r->commands = fl_xrealloc(r->commands, (size_t)r->commands_capacity * sizeof *r->commands);
    }
    command *c = &r->commands[r->ncommands++];
    *c = (command){launch, n, r->ntensors, n->ninputs, *out, *ctx};
    add_key(r, (uint64_t)(uintptr_t)launch);
    add_key(r, (uint64_t)(uintptr_t)n);
    add_key(r, ctx->seed);
    r->order = r->order * 1000003u ^ (uint64_t)(uintptr_t)n;
    for (int i = 0; i < n->ninputs; i++)
        keep_tensor(r, in[i]);
    add_tensor_key(r, out);
    if (!r->uncapturable)
        r->uncapturable = why_uncapturable(n);
}

static void clear_record(fl_cuda_recorder *r)
{
    r->ncommands = 0;
    r->ntensors = 0;
    r->nkey = 0;
    r->order = 0;
    r->uncapturable = NULL;
}

/* ---- op by op ---- */

static int launch_one(fl_cuda_device *d, fl_cuda_recorder *r, command *c)
{
    fl_tensor *in[c->ninputs > 0 ? c->ninputs : 1];
    for (int i = 0; i < c->ninputs; i++)
        in[i] = &r->tensors[c->first_input + i];
    if (c->launch(d, c->node, in, &c->out, &c->ctx) == 0)
        return 0;
    fl_prefix_error("%s: ", c->node->name);
    return -1;
}

static int launch_all(fl_cuda_device *d, fl_cuda_recorder *r)
{
    for (int i = 0; i < r->ncommands; i++)
        if (launch_one(d, r, &r->commands[i]) != 0)
            return -1;
    return 0;
}

/* Said once per device, on stderr: the step still runs, only slower. */
static void say_why(fl_cuda_device *d, fl_cuda_recorder *r, const char *why)
{
    if (r->said_why)
        return;
    r->said_why = true;
    fprintf(stderr, "flowlab: /gpu:%d runs this step op by op, not as one CUDA graph: %s\n", d->index, why);
}

/* ---- the graphs ---- */

static graph_entry *find(fl_cuda_recorder *r)
{
    for (int i = 0; i < r->ngraphs; i++) {
        graph_entry *g = &r->graphs[i];
        if (g->nkey == r->nkey && memcmp(g->key, r->key, r->nkey * sizeof *r->key) == 0)
            return g;
    }
    return NULL;
}

static void forget(fl_cuda_device *d, graph_entry *g)
{
    if (g->exec) {
        cudaStreamSynchronize(d->stream); /* it may still be running */
        cudaGraphExecDestroy(g->exec);
    }
    fl_cuda_pool_put_owned(d, g->owned, g->nowned);
    free(g->owned);
    free(g->key);
    free(g->fault_names);
    memset(g, 0, sizeof *g);
}

/* A slot for a new entry: a free one, or the least recently used. */
static graph_entry *free_entry(fl_cuda_device *d, fl_cuda_recorder *r)
{
    if (r->ngraphs < MAX_GRAPHS)
        return &r->graphs[r->ngraphs++];
    graph_entry *oldest = &r->graphs[0];
    for (int i = 1; i < MAX_GRAPHS; i++)
        if (r->graphs[i].last_used < oldest->last_used)
            oldest = &r->graphs[i];
    forget(d, oldest);
    return oldest;
}

/* An entry for the current record, seen once: captured if seen again. */
static void remember(fl_cuda_device *d, fl_cuda_recorder *r)
{
    graph_entry *g = free_entry(d, r);
    g->key = fl_xmalloc(r->nkey * sizeof *r->key);
    memcpy(g->key, r->key, r->nkey * sizeof *r->key);
    g->nkey = r->nkey;
    g->order = r->order;
    g->last_used = ++r->clock;
}

static int replay(fl_cuda_device *d, fl_cuda_recorder *r, graph_entry *g)
{
    memcpy(d->fault_ops[g->fault_first], g->fault_names, (size_t)g->fault_count * sizeof *g->fault_names);
    d->nfault_ops = g->fault_first + g->fault_count;
    g->last_used = ++r->clock;
    r->replays++;
    return fl_cuda_check(cudaGraphLaunch(g->exec, d->stream), "cudaGraphLaunch");
}

/* The fault slots the launchers took while captured: a replay takes them again. */
static void keep_fault_slots(fl_cuda_device *d, graph_entry *g, int first)
{
    g->fault_first = first;
    g->fault_count = d->nfault_ops - first;
    g->fault_names = fl_xcalloc(g->fault_count > 0 ? (size_t)g->fault_count : 1, sizeof *g->fault_names);
    memcpy(g->fault_names, d->fault_ops[first], (size_t)g->fault_count * sizeof *g->fault_names);
    d->nfault_ops = first;
}

/* Runs the launchers into a stream capture; the graph, or NULL with why. */
static cudaGraph_t capture_launches(fl_cuda_device *d, fl_cuda_recorder *r, graph_entry *g, fl_status *st)
{
    cudaGraph_t graph = NULL;
    fl_cuda_pool_begin_capture(d);
    cudaError_t began = cudaStreamBeginCapture(d->stream, cudaStreamCaptureModeRelaxed);
    int launched = began == cudaSuccess ? launch_all(d, r) : -1;
    cudaError_t ended = began == cudaSuccess ? cudaStreamEndCapture(d->stream, &graph) : began;
    g->owned = fl_cuda_pool_end_capture(d, &g->nowned);
    if (launched == 0 && ended == cudaSuccess && graph)
        return graph;
    fl_status_set(st, FL_INTERNAL, "capturing it failed (%s)",
                  launched != 0 ? fl_last_error() : cudaGetErrorString(ended));
    if (graph)
        cudaGraphDestroy(graph);
    cudaGetLastError(); /* a failed capture's error is not the next launch's */
    return NULL;
}

/* ---- the step's dependencies as the graph's edges (graph_edges.c) ---- */

static fl_cuda_launch_touches touches(fl_cuda_recorder *r, const command *c)
{
    return (fl_cuda_launch_touches){c->launch, &r->tensors[c->first_input], c->ninputs,
                                    fl_node_writes_inputs(c->node), &c->out};
}

/* Captures command i into the graph after the nodes it waits for; *ends
 * gets the nodes its launches end with (the ones it waited for, if it
 * launched nothing: an alias). */
static cudaError_t capture_one(fl_cuda_device *d, fl_cuda_recorder *r, int i, cudaGraph_t graph,
                               const fl_cuda_node_set *waits, fl_cuda_node_set *ends, int *launched)
{
    cudaError_t e = cudaStreamBeginCaptureToGraph(d->stream, graph, waits->nodes, NULL, waits->count,
                                                  cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess)
        return e;
    *launched = launch_one(d, r, &r->commands[i]);
    const cudaGraphNode_t *last = NULL;
    size_t nlast = 0;
    enum cudaStreamCaptureStatus status;
    e = cudaStreamGetCaptureInfo(d->stream, &status, NULL, NULL, &last, NULL, &nlast);
    if (e == cudaSuccess)
        fl_cuda_node_set_add(ends, last, nlast);
    cudaGraph_t same = NULL;
    cudaError_t ended = cudaStreamEndCapture(d->stream, &same);
    return e != cudaSuccess ? e : ended;
}

/* The record as a graph whose edges are the step's dependencies: each
 * command captured on its own, after the last nodes of every earlier
 * command it must follow. The graph, or NULL with why. */
static cudaGraph_t capture_dependencies(fl_cuda_device *d, fl_cuda_recorder *r, graph_entry *g, fl_status *st)
{
    int n = r->ncommands, launched = 0;
    fl_cuda_node_set *ends = fl_xcalloc((size_t)n, sizeof *ends), waits = {0};
    fl_cuda_launch_touches *each = fl_xcalloc((size_t)n, sizeof *each);
    for (int i = 0; i < n; i++)
        each[i] = touches(r, &r->commands[i]);
    cudaGraph_t graph = NULL;
    fl_cuda_pool_begin_capture(d);
    cudaError_t e = cudaGraphCreate(&graph, 0);
    for (int i = 0; i < n && e == cudaSuccess && launched == 0; i++) {
        waits.count = 0;
        for (int j = 0; j < i; j++)
            if (fl_cuda_must_follow(&each[i], &each[j]))
                fl_cuda_node_set_add(&waits, ends[j].nodes, ends[j].count);
        e = capture_one(d, r, i, graph, &waits, &ends[i], &launched);
    }
    g->owned = fl_cuda_pool_end_capture(d, &g->nowned);
    for (int i = 0; i < n; i++)
        free(ends[i].nodes);
    free(ends);
    free(each);
    free(waits.nodes);
    if (launched == 0 && e == cudaSuccess)
        return graph;
    fl_status_set(st, FL_INTERNAL, "capturing it failed (%s)",
                  launched != 0 ? fl_last_error() : cudaGetErrorString(e));
    if (graph)
        cudaGraphDestroy(graph);
    cudaGetLastError();
    return NULL;
}

/* Captures the record into g's graph and replays it; -1 (g failed, why
 * said) when it cannot be captured: the caller then runs it op by op. */
static int capture(fl_cuda_device *d, fl_cuda_recorder *r, graph_entry *g)
{
    fl_status why = {0};
    int first = d->nfault_ops;
    cudaGraph_t graph = r->serial ? capture_launches(d, r, g, &why) : capture_dependencies(d, r, g, &why);
    cudaError_t made = graph ? cudaGraphInstantiate(&g->exec, graph, 0) : cudaErrorUnknown;
    if (graph) {
        cudaGraphDestroy(graph);
        if (made != cudaSuccess)
            fl_status_set(&why, FL_INTERNAL, "cudaGraphInstantiate: %s", cudaGetErrorString(made));
    }
    if (made != cudaSuccess) {
        d->nfault_ops = first;
        g->exec = NULL;
        g->failed = true;
        say_why(d, r, why.message);
        return -1;
    }
    keep_fault_slots(d, g, first);
    return replay(d, r, g);
}

/* A miss whose launches a known entry has with other buffers: a graph keeps
 * the addresses it was captured with, so such a step is never replayed. */
static void count_moved(fl_cuda_device *d, fl_cuda_recorder *r)
{
    for (int i = 0; i < r->ngraphs; i++)
        if (r->graphs[i].order == r->order && r->graphs[i].nkey == r->nkey && ++r->moved == 3)
            say_why(d, r, "its launches repeat each run but their buffers or shapes change");
}

// [book:cuda_flush]
static int flush_locked(fl_cuda_device *d, fl_cuda_recorder *r)
{
    if (r->uncapturable)
        return launch_all(d, r);
    graph_entry *g = find(r);
    if (g && g->exec && g->fault_first == d->nfault_ops)
        return replay(d, r, g);
    if (g && !g->exec && !g->failed && capture(d, r, g) == 0)
        return 0;
    if (!g) {
        count_moved(d, r);
        remember(d, r);
    }
    return launch_all(d, r);
}
// [end:cuda_flush]

int fl_cuda_flush(fl_cuda_device *d)
{
    fl_cuda_recorder *r = d->recorder;
    pthread_mutex_lock(&r->lock);
    int rc = r->ncommands > 0 ? flush_locked(d, r) : 0;
    clear_record(r);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* The record alone as a graph of its own, between the two events: its
 * launchers' host work is done before `before` is recorded, so the events
 * time the GPU's work only. The graph is left in *exec for the caller to
 * destroy once the stream has passed `after`. Uncapturable: launched
 * directly between the events. */
static int launch_between(fl_cuda_device *d, fl_cuda_recorder *r, cudaEvent_t before, cudaEvent_t after,
                          cudaGraphExec_t *exec)
{
    graph_entry alone = {0};
    fl_status why = {0}; /* not said: a graph that cannot be captured is launched directly */
    cudaGraph_t graph = r->uncapturable ? NULL : capture_launches(d, r, &alone, &why);
    if (graph && cudaGraphInstantiate(exec, graph, 0) != cudaSuccess)
        *exec = NULL;
    if (graph)
        cudaGraphDestroy(graph);
    int rc = fl_cuda_check(cudaEventRecord(before, d->stream), "cudaEventRecord");
    if (rc == 0)
        rc = *exec ? fl_cuda_check(cudaGraphLaunch(*exec, d->stream), "cudaGraphLaunch") : launch_all(d, r);
    if (rc == 0)
        rc = fl_cuda_check(cudaEventRecord(after, d->stream), "cudaEventRecord");
    fl_cuda_pool_put_owned(d, alone.owned, alone.nowned); /* later users come after it on the stream */
    free(alone.owned);
    return rc;
}

int fl_cuda_run_timed(fl_cuda_device *d, fl_cuda_launcher launch, const fl_node *n, fl_tensor *const *in,
                      fl_tensor *out, const fl_kernel_ctx *ctx, cudaEvent_t before, cudaEvent_t after,
                      cudaGraphExec_t *exec)
{
    fl_cuda_recorder *r = d->recorder;
    *exec = NULL;
    if (fl_cuda_flush(d) != 0)
        return -1;
    pthread_mutex_lock(&r->lock);
    append(r, launch, n, in, out, ctx);
    int rc = launch_between(d, r, before, after, exec);
    clear_record(r);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int fl_cuda_record(fl_cuda_device *d, fl_cuda_launcher launch, const fl_node *n, fl_tensor *const *in,
                   fl_tensor *out, const fl_kernel_ctx *ctx)
{
    fl_cuda_recorder *r = d->recorder;
    if (!r->enabled)
        return launch(d, n, in, out, ctx);
    pthread_mutex_lock(&r->lock);
    append(r, launch, n, in, out, ctx);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

void fl_cuda_recorder_free(fl_cuda_device *d)
{
    fl_cuda_recorder *r = d->recorder;
    if (!r)
        return;
    for (int i = 0; i < r->ngraphs; i++)
        forget(d, &r->graphs[i]);
    free(r->commands);
    free(r->tensors);
    free(r->key);
    pthread_mutex_destroy(&r->lock);
    free(r);
    d->recorder = NULL;
}

uint64_t fl_cuda_graph_replays(void *impl)
{
    fl_cuda_device *d = impl;
    pthread_mutex_lock(&d->recorder->lock);
    uint64_t replays = d->recorder->replays;
    pthread_mutex_unlock(&d->recorder->lock);
    return replays;
}
