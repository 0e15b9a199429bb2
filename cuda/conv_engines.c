/* conv_engines.c: running a convolution plan, and timing cuDNN's graph API
 * against the legacy algorithm conv_plans.c chose. The legacy calls
 * (cudnnConvolution*) reach only the kernels their algorithm enums name; the
 * graph API's engines, which cuDNN's frontend and PyTorch's cudnn.benchmark
 * rank, include Hopper's fastest TF32 kernels. A shape keeps whichever ran
 * faster on this device. FLOWLAB_CUDNN_ENGINES=0 keeps the legacy algorithm;
 * FLOWLAB_CUDNN_ENGINES=verbose prints every time measured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_plans.h"

typedef cudnnBackendDescriptor_t descriptor;

/* Each tensor's id in a variant pack: the image (or its gradient), the
 * filter (or its gradient), the output (or its gradient). */
enum { UID_X = 'x', UID_W = 'w', UID_Y = 'y' };

/* At most this many of cuDNN's ranked configurations are timed (PyTorch's
 * cudnn.benchmark_limit is 10), each 1 + RUNS times. */
enum { MAX_TRIED = 12, RUNS = 5, MAX_PARTS = 8 + MAX_TRIED };

/* Workspace above this is not worth a convolution of chapter-sized shapes. */
static const int64_t MAX_WORKSPACE = (int64_t)1 << 30;

/* The execution plan and every descriptor it was made from, destroyed
 * together when the device closes. */
struct fl_conv_engine {
    descriptor plan;
    descriptor parts[MAX_PARTS];
    int nparts;
};

static bool fine(cudnnStatus_t s) { return s == CUDNN_STATUS_SUCCESS; }

static descriptor part(struct fl_conv_engine *e, cudnnBackendDescriptorType_t type)
{
    descriptor made = NULL;
    if (e->nparts == MAX_PARTS || !fine(cudnnBackendCreateDescriptor(type, &made)))
        return NULL;
    e->parts[e->nparts++] = made;
    return made;
}

static bool set(descriptor d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                const void *values)
{
    return fine(cudnnBackendSetAttribute(d, name, type, count, values));
}

static const float one = 1.0f, zero_f = 0.0f;

/* ---- running a plan: the graph API's, or the legacy call ---- */

static int run_graph_plan(fl_cuda_device *d, const fl_conv_plan *p, const void *x, const void *w, const void *y,
                          void *work)
{
    descriptor pack = NULL;
    int64_t uids[3] = {UID_X, UID_W, UID_Y};
    void *pointers[3] = {(void *)x, (void *)w, (void *)y};
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
    if (fine(s))
        s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    if (fine(s))
        s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
    if (fine(s))
        s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &work);
    if (fine(s))
        s = cudnnBackendFinalize(pack);
    if (fine(s))
        s = cudnnBackendExecute(d->cudnn, p->engine->plan, pack);
    if (pack)
        cudnnBackendDestroyDescriptor(pack);
    return fl_cudnn_check(s, "cudnnBackendExecute");
}

int fl_conv_plan_run(fl_cuda_device *d, const fl_conv_plan *p, const void *x, const void *w, const void *y,
                     void *work)
{
    if (p->engine)
        return run_graph_plan(d, p, x, w, y, work);
    size_t ws = p->workspace_bytes;
    switch (p->kind) {
    case FL_PLAN_CONV_FORWARD:
        return fl_cudnn_check(cudnnConvolutionForward(d->cudnn, &one, p->x, x, p->filter, w, p->conv, p->forward,
                                                      work, ws, &zero_f, p->y, (void *)y),
                              "cudnnConvolutionForward");
    case FL_PLAN_CONV_BACKWARD_DATA:
        return fl_cudnn_check(cudnnConvolutionBackwardData(d->cudnn, &one, p->filter, w, p->y, y, p->conv,
                                                           p->backward_data, work, ws, &zero_f, p->x, (void *)x),
                              "cudnnConvolutionBackwardData");
    default:
        return fl_cudnn_check(cudnnConvolutionBackwardFilter(d->cudnn, &one, p->x, x, p->y, y, p->conv,
                                                             p->backward_filter, work, ws, &zero_f, p->filter,
                                                             (void *)w),
                              "cudnnConvolutionBackwardFilter");
    }
}

/* ---- the operation graph of one convolution ---- */

/* An NHWC float tensor, its dimensions given in cuDNN's N, C, H, W order. */
static descriptor tensor(struct fl_conv_engine *e, int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w)
{
    descriptor t = part(e, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t dims[4] = {n, c, h, w}, strides[4] = {h * w * c, 1, w * c, c}, alignment = 16;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    bool made = t && set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type) &&
                set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims) &&
                set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides) &&
                set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) &&
                set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment) &&
                fine(cudnnBackendFinalize(t));
    return made ? t : NULL;
}

/* The legacy descriptor's convolution: symmetric padding around the image
 * that already has launch_conv.c's extra row and column. */
static descriptor convolution(struct fl_conv_engine *e, const fl_conv_geometry *g)
{
    descriptor c = part(e, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    int64_t dims = 2, pads[2] = {g->pad_top, g->pad_left}, strides[2] = {g->sh, g->sw}, dilations[2] = {1, 1};
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    bool made = c && set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute) &&
                set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) &&
                set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims) &&
                set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations) &&
                set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides) &&
                set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads) &&
                set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads) &&
                fine(cudnnBackendFinalize(c));
    return made ? c : NULL;
}

/* Per kind: the operation's type, then the attribute names of its image,
 * filter, output, convolution, alpha and beta. */
typedef struct {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
} operation_names;

static const operation_names operations[3] = {
    [FL_PLAN_CONV_FORWARD] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    [FL_PLAN_CONV_BACKWARD_DATA] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    [FL_PLAN_CONV_BACKWARD_FILTER] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
};

/* The one-operation graph of p's convolution, or NULL. */
static descriptor operation_graph(fl_cuda_device *d, struct fl_conv_engine *e, const fl_conv_plan *p)
{
    const fl_conv_geometry *g = &p->geometry;
    descriptor x = tensor(e, UID_X, g->batch, g->c, g->h + fl_conv_extra_h(g), g->w + fl_conv_extra_w(g));
    descriptor w = tensor(e, UID_W, g->oc, g->c, g->kh, g->kw);
    descriptor y = tensor(e, UID_Y, g->batch, g->oc, g->oh, g->ow);
    descriptor conv = convolution(e, g);
    if (!x || !w || !y || !conv)
        return NULL;
    operation_names names = operations[p->kind];
    descriptor op = part(e, names.type), graph = part(e, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    bool made = op && graph && set(op, names.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x) &&
                set(op, names.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w) &&
                set(op, names.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y) &&
                set(op, names.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv) &&
                set(op, names.alpha, CUDNN_TYPE_FLOAT, 1, &one) && set(op, names.beta, CUDNN_TYPE_FLOAT, 1, &zero_f) &&
                fine(cudnnBackendFinalize(op)) && set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op) &&
                set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &d->cudnn) &&
                fine(cudnnBackendFinalize(graph));
    return made ? graph : NULL;
}

/* cuDNN's ranked configurations for the graph (heuristics mode A), at most
 * MAX_TRIED, into cfgs; how many. */
static int ranked_configs(struct fl_conv_engine *e, descriptor graph, descriptor *cfgs)
{
    descriptor heur = part(e, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int64_t available = 0, got = 0;
    if (!heur || !set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph) ||
        !set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) || !fine(cudnnBackendFinalize(heur)) ||
        !fine(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                       &available, NULL)))
        return 0;
    int want = available < MAX_TRIED ? (int)available : MAX_TRIED;
    for (int i = 0; i < want; i++)
        if (!(cfgs[i] = part(e, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)))
            return 0;
    if (!fine(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, want,
                                       &got, cfgs)))
        return 0;
    return (int)got;
}

/* What cuDNN notes about a configuration's engine: its number, and whether
 * it gives different bits from run to run. */
typedef struct {
    int64_t index;
    bool nondeterministic;
} engine_notes;

static engine_notes notes_of(descriptor cfg)
{
    engine_notes n = {-1, true};
    descriptor engine = NULL;
    int64_t count = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    if (!fine(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine)))
        return n;
    if (fine(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                      &engine)) &&
        fine(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                      CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes))) {
        n.nondeterministic = false;
        for (int64_t i = 0; i < count; i++)
            n.nondeterministic |= notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
        cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, &n.index);
    }
    cudnnBackendDestroyDescriptor(engine);
    return n;
}

/* An execution plan for one configuration and its workspace, or NULL when
 * the engine cannot run this graph. */
static descriptor execution_plan(fl_cuda_device *d, descriptor cfg, int64_t *workspace)
{
    descriptor plan = NULL;
    if (!fine(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan)))
        return NULL;
    if (set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &d->cudnn) &&
        set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg) &&
        fine(cudnnBackendFinalize(plan)) &&
        fine(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                      &(int64_t){0}, workspace)) &&
        *workspace >= 0 && *workspace <= MAX_WORKSPACE)
        return plan;
    cudnnBackendDestroyDescriptor(plan);
    return NULL;
}

/* ---- timing ---- */

/* Buffers for the three tensors of a plan's shape, filled with a small
 * nonzero pattern (0x3c3c3c3c is about 0.0115): zeros can run faster. */
typedef struct {
    void *x, *w, *y;
} trial_buffers;

static size_t floats_bytes(int64_t a, int64_t b, int64_t c, int64_t e) { return (size_t)(a * b * c * e) * 4; }

static bool make_buffers(fl_cuda_device *d, const fl_conv_geometry *g, trial_buffers *b)
{
    size_t bytes[3] = {floats_bytes(g->batch, g->h + fl_conv_extra_h(g), g->w + fl_conv_extra_w(g), g->c),
                       floats_bytes(g->oc, g->kh, g->kw, g->c), floats_bytes(g->batch, g->oh, g->ow, g->oc)};
    void **each[3] = {&b->x, &b->w, &b->y};
    for (int i = 0; i < 3; i++)
        if (cudaMalloc(each[i], bytes[i]) != cudaSuccess ||
            cudaMemsetAsync(*each[i], 0x3c, bytes[i], d->stream) != cudaSuccess)
            return false;
    return true;
}

static void free_buffers(trial_buffers *b)
{
    cudaFree(b->x);
    cudaFree(b->w);
    cudaFree(b->y);
}

/* Microseconds per run of the plan (the legacy algorithm when p->engine is
 * NULL), the mean of RUNS after one to warm up; negative when it fails. */
static double time_plan(fl_cuda_device *d, const fl_conv_plan *p, const trial_buffers *b)
{
    void *work = NULL;
    cudaEvent_t start = NULL, stop = NULL;
    float ms = -1.0f;
    bool ready = (p->workspace_bytes == 0 || cudaMalloc(&work, p->workspace_bytes) == cudaSuccess) &&
                 cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess &&
                 fl_conv_plan_run(d, p, b->x, b->w, b->y, work) == 0 &&
                 cudaEventRecord(start, d->stream) == cudaSuccess;
    for (int i = 0; ready && i < RUNS; i++)
        ready = fl_conv_plan_run(d, p, b->x, b->w, b->y, work) == 0;
    if (ready && cudaEventRecord(stop, d->stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess &&
        cudaEventElapsedTime(&ms, start, stop) != cudaSuccess)
        ms = -1.0f;
    if (!ready) {
        cudaStreamSynchronize(d->stream);
        ms = -1.0f;
    }
    cudaGetLastError();
    if (start)
        cudaEventDestroy(start);
    if (stop)
        cudaEventDestroy(stop);
    cudaFree(work);
    return ms < 0.0f ? -1.0 : 1000.0 * (double)ms / RUNS;
}

/* ---- choosing ---- */

/* FLOWLAB_CUDNN_ENGINES: "0" or "false" keeps the legacy algorithms; "verbose" says every time. */
static bool engines_wanted(bool *verbose)
{
    const char *setting = getenv("FLOWLAB_CUDNN_ENGINES");
    *verbose = setting && strcmp(setting, "verbose") == 0;
    return !setting || (strcmp(setting, "0") != 0 && strcmp(setting, "false") != 0);
}

/* The fastest of the ranked configurations, timed on b; its plan kept in
 * e->plan (and its workspace and notes returned), or -1 microseconds. */
static double fastest_config(fl_cuda_device *d, fl_conv_plan *p, struct fl_conv_engine *e, const trial_buffers *b,
                             bool verbose, engine_notes *best_notes)
{
    descriptor cfgs[MAX_TRIED], graph = operation_graph(d, e, p);
    int count = graph ? ranked_configs(e, graph, cfgs) : 0;
    double best = -1.0;
    for (int i = 0; i < count; i++) {
        int64_t ws = 0;
        descriptor plan = execution_plan(d, cfgs[i], &ws);
        if (!plan)
            continue;
        struct fl_conv_engine trial = {.plan = plan};
        fl_conv_plan tried = *p;
        tried.engine = &trial;
        tried.workspace_bytes = (size_t)ws;
        double us = time_plan(d, &tried, b);
        engine_notes notes = notes_of(cfgs[i]);
        if (verbose)
            fprintf(stderr, "flowlab: cuDNN %s: graph engine %lld (config %d, %lld bytes of workspace): %.1f us\n",
                    fl_conv_plan_kind_name(p->kind), (long long)notes.index, i, (long long)ws, us);
        if (us >= 0.0 && (best < 0.0 || us < best)) {
            if (e->plan)
                cudnnBackendDestroyDescriptor(e->plan);
            e->plan = plan, best = us, *best_notes = notes;
            p->workspace_bytes = (size_t)ws; /* only read if the engine is kept */
            continue;
        }
        cudnnBackendDestroyDescriptor(plan);
    }
    return best;
}

void fl_conv_engine_free(struct fl_conv_engine *e)
{
    if (!e)
        return;
    if (e->plan)
        cudnnBackendDestroyDescriptor(e->plan);
    for (int i = e->nparts - 1; i >= 0; i--)
        cudnnBackendDestroyDescriptor(e->parts[i]);
    free(e);
}

/* Times the legacy algorithm p holds against the graph API's ranked
 * engines for the same shape, and keeps a graph plan in p->engine when it
 * runs faster. Nothing changes when any step fails: the legacy algorithm
 * is always there to fall back on. */
void fl_conv_engine_consider(fl_cuda_device *d, fl_conv_plan *p)
{
    bool verbose;
    if (p->kind == FL_PLAN_MAX_POOL || !d->allow_tf32 || !engines_wanted(&verbose))
        return;
    trial_buffers b = {0};
    struct fl_conv_engine *e = fl_xcalloc(1, sizeof *e);
    size_t legacy_workspace = p->workspace_bytes;
    engine_notes notes = {-1, true};
    double legacy = -1.0, graph = -1.0;
    if (make_buffers(d, &p->geometry, &b)) {
        legacy = time_plan(d, p, &b);
        graph = fastest_config(d, p, e, &b, verbose, &notes);
    }
    free_buffers(&b);
    cudaGetLastError();
    const fl_conv_geometry *g = &p->geometry;
    bool keep = graph >= 0.0 && (legacy < 0.0 || graph < legacy);
    if (verbose)
        fprintf(stderr, "flowlab: cuDNN %s of [%d,%d,%d,%d] by [%d,%d,%d,%d]: legacy %.1f us, graph engine %lld "
                "%.1f us: %s kept\n", fl_conv_plan_kind_name(p->kind), g->batch, g->h, g->w, g->c, g->kh, g->kw,
                g->c, g->oc, legacy, (long long)notes.index, graph, keep ? "graph" : "legacy");
    if (!keep) {
        p->workspace_bytes = legacy_workspace;
        fl_conv_engine_free(e);
        return;
    }
    p->engine = e;
    p->deterministic = !notes.nondeterministic;
}
