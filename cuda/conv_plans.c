/* conv_plans.c: the per-device cache of cuDNN plans (conv_plans.h). Making
 * a plan means creating descriptors and choosing an algorithm: by running
 * every one cuDNN has for the shape and keeping the fastest (cudnnFind*,
 * PyTorch's cudnn.benchmark), tens of milliseconds on a shape's first call.
 * A training step of chapter 1 asks for the same shapes every step, so each
 * is made once per device and found again by a linear search (a model has a
 * handful of shapes). Plans live until the device closes. */
#include <stdlib.h>
#include <string.h>

#include "conv_plans.h"
#include "cuda_stats.h"

/* One lock for every device's list: a lookup is a short walk, and a miss
 * (the heuristics) happens only on a shape's first step. */
static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;

static void destroy_plan(fl_conv_plan *p)
{
    if (p->x) cudnnDestroyTensorDescriptor(p->x);
    if (p->y) cudnnDestroyTensorDescriptor(p->y);
    if (p->filter) cudnnDestroyFilterDescriptor(p->filter);
    if (p->conv) cudnnDestroyConvolutionDescriptor(p->conv);
    if (p->pool) cudnnDestroyPoolingDescriptor(p->pool);
    fl_conv_engine_free(p->engine);
    free(p);
}

/* ---- descriptors ---- */

static int nhwc(cudnnTensorDescriptor_t *t, int n, int h, int w, int c)
{
    if (fl_cudnn_check(cudnnCreateTensorDescriptor(t), "cudnnCreateTensorDescriptor") != 0)
        return -1;
    return fl_cudnn_check(cudnnSetTensor4dDescriptor(*t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w),
                          "cudnnSetTensor4dDescriptor");
}

/* The image cuDNN sees has the explicit rows and columns added. The math
 * type is the device's TF32 policy: CUDNN_DEFAULT_MATH lets cuDNN use TF32
 * tensor cores (inputs rounded to 10 bits of mantissa, sums in float32);
 * CUDNN_FMA_MATH keeps full float32, as the host computes. The algorithm
 * chosen later may narrow it further (keep() sets its own math type). */
static int conv_descriptors(const fl_cuda_device *d, fl_conv_plan *p)
{
    const fl_conv_geometry *g = &p->geometry;
    if (nhwc(&p->x, g->batch, g->h + fl_conv_extra_h(g), g->w + fl_conv_extra_w(g), g->c) ||
        nhwc(&p->y, g->batch, g->oh, g->ow, g->oc))
        return -1;
    if (fl_cudnn_check(cudnnCreateFilterDescriptor(&p->filter), "cudnnCreateFilterDescriptor") ||
        fl_cudnn_check(cudnnSetFilter4dDescriptor(p->filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC,
                                                  g->oc, g->c, g->kh, g->kw), "cudnnSetFilter4dDescriptor"))
        return -1;
    if (fl_cudnn_check(cudnnCreateConvolutionDescriptor(&p->conv), "cudnnCreateConvolutionDescriptor") ||
        fl_cudnn_check(cudnnSetConvolution2dDescriptor(p->conv, g->pad_top, g->pad_left, g->sh, g->sw, 1, 1,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                       "cudnnSetConvolution2dDescriptor") ||
        fl_cudnn_check(cudnnSetConvolutionMathType(p->conv, d->allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
                       "cudnnSetConvolutionMathType"))
        return -1;
    /* The padding arithmetic above must give TensorFlow's output size. */
    int n, c, h, w;
    if (fl_cudnn_check(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->filter, &n, &c, &h, &w),
                       "cudnnGetConvolution2dForwardOutputDim"))
        return -1;
    if (h != g->oh || w != g->ow) {
        fl_set_error("cuDNN would compute a %dx%d output, not %dx%d", h, w, g->oh, g->ow);
        return -1;
    }
    return 0;
}

/* Pooling pads explicitly (with -inf), so cuDNN sees a padded image and no
 * padding. MAX_DETERMINISTIC always: the gradient's ties go the same way
 * every run, FLOWLAB_DETERMINISTIC or not. */
static int pool_descriptors(fl_conv_plan *p)
{
    const fl_conv_geometry *g = &p->geometry;
    if (nhwc(&p->x, g->batch, fl_pool_padded_h(g), fl_pool_padded_w(g), g->c) ||
        nhwc(&p->y, g->batch, g->oh, g->ow, g->c))
        return -1;
    if (fl_cudnn_check(cudnnCreatePoolingDescriptor(&p->pool), "cudnnCreatePoolingDescriptor") != 0)
        return -1;
    return fl_cudnn_check(cudnnSetPooling2dDescriptor(p->pool, CUDNN_POOLING_MAX_DETERMINISTIC,
                                                      CUDNN_NOT_PROPAGATE_NAN, g->kh, g->kw, 0, 0,
                                                      g->sh, g->sw), "cudnnSetPooling2dDescriptor");
}

/* ---- algorithms: measured, or cuDNN's heuristics ---- */

/* The fields the three kinds' perf structs share; algo is the kind's enum. */
typedef struct {
    int algo;
    cudnnStatus_t status;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
} candidate;

/* More than any kind's ALGO_COUNT (8, 6 and 7 in cuDNN 9). */
enum { MAX_ALGOS = 16 };

/* How a plan's algorithm is chosen. MEASURE runs each algorithm on the
 * device's stream and ranks them by time (cudnnFind*); it cannot while the
 * stream is being captured into a CUDA graph, nor should it under
 * FLOWLAB_DETERMINISTIC, where timing noise would let two runs pick two
 * algorithms that round differently. HEURISTICS asks cuDNN's ranking, which
 * runs nothing (cudnnGet*_v7). */
typedef enum { MEASURE, HEURISTICS } ranking;

/* Every algorithm of each kind of convolution, fastest first. */
static int rank_forward(fl_cuda_device *d, const fl_conv_plan *p, ranking how, candidate *c, int *found)
{
    cudnnConvolutionFwdAlgoPerf_t perf[MAX_ALGOS];
    const int want = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    cudnnStatus_t st = how == MEASURE
        ? cudnnFindConvolutionForwardAlgorithm(d->cudnn, p->x, p->filter, p->conv, p->y, want, found, perf)
        : cudnnGetConvolutionForwardAlgorithm_v7(d->cudnn, p->x, p->filter, p->conv, p->y, want, found, perf);
    if (fl_cudnn_check(st, how == MEASURE ? "cudnnFindConvolutionForwardAlgorithm"
                                          : "cudnnGetConvolutionForwardAlgorithm_v7"))
        return -1;
    for (int i = 0; i < *found; i++)
        c[i] = (candidate){(int)perf[i].algo, perf[i].status, perf[i].determinism, perf[i].mathType};
    return 0;
}

static int rank_backward_data(fl_cuda_device *d, const fl_conv_plan *p, ranking how, candidate *c, int *found)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_ALGOS];
    const int want = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    cudnnStatus_t st = how == MEASURE
        ? cudnnFindConvolutionBackwardDataAlgorithm(d->cudnn, p->filter, p->y, p->conv, p->x, want, found, perf)
        : cudnnGetConvolutionBackwardDataAlgorithm_v7(d->cudnn, p->filter, p->y, p->conv, p->x, want, found, perf);
    if (fl_cudnn_check(st, how == MEASURE ? "cudnnFindConvolutionBackwardDataAlgorithm"
                                          : "cudnnGetConvolutionBackwardDataAlgorithm_v7"))
        return -1;
    for (int i = 0; i < *found; i++)
        c[i] = (candidate){(int)perf[i].algo, perf[i].status, perf[i].determinism, perf[i].mathType};
    return 0;
}

static int rank_backward_filter(fl_cuda_device *d, const fl_conv_plan *p, ranking how, candidate *c, int *found)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[MAX_ALGOS];
    const int want = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    cudnnStatus_t st = how == MEASURE
        ? cudnnFindConvolutionBackwardFilterAlgorithm(d->cudnn, p->x, p->y, p->conv, p->filter, want, found, perf)
        : cudnnGetConvolutionBackwardFilterAlgorithm_v7(d->cudnn, p->x, p->y, p->conv, p->filter, want, found,
                                                        perf);
    if (fl_cudnn_check(st, how == MEASURE ? "cudnnFindConvolutionBackwardFilterAlgorithm"
                                          : "cudnnGetConvolutionBackwardFilterAlgorithm_v7"))
        return -1;
    for (int i = 0; i < *found; i++)
        c[i] = (candidate){(int)perf[i].algo, perf[i].status, perf[i].determinism, perf[i].mathType};
    return 0;
}

const char *fl_conv_plan_kind_name(fl_conv_plan_kind kind)
{
    return kind == FL_PLAN_CONV_FORWARD ? "forward" : kind == FL_PLAN_CONV_BACKWARD_DATA ? "backward-data"
                                                                                          : "backward-filter";
}

/* The first usable candidate (deterministic when asked), or NULL with an
 * error naming the shape and, when it matters, the variable. */
static const candidate *pick(const candidate *c, int found, bool deterministic, const fl_conv_plan *p)
{
    for (int i = 0; i < found; i++)
        if (c[i].status == CUDNN_STATUS_SUCCESS && (!deterministic || c[i].determinism == CUDNN_DETERMINISTIC))
            return &c[i];
    const fl_conv_geometry *g = &p->geometry;
    fl_set_error_code(FL_UNIMPLEMENTED,
                      "cuDNN has no %s%s convolution algorithm for a [%d,%d,%d,%d] image and a [%d,%d,%d,%d] "
                      "filter%s", deterministic ? "deterministic " : "", fl_conv_plan_kind_name(p->kind), g->batch, g->h, g->w,
                      g->c, g->kh, g->kw, g->c, g->oc,
                      deterministic ? " (FLOWLAB_DETERMINISTIC=1 asks for one: unset it to allow any)" : "");
    return NULL;
}

/* Keeps the chosen algorithm with the math type it was ranked with (a
 * TF32 algorithm under CUDNN_DEFAULT_MATH, say) and asks how much
 * workspace it needs. */
static int keep(fl_cuda_device *d, fl_conv_plan *p, int algo, cudnnMathType_t math)
{
    size_t *ws = &p->workspace_bytes;
    if (fl_cudnn_check(cudnnSetConvolutionMathType(p->conv, math), "cudnnSetConvolutionMathType"))
        return -1;
    switch (p->kind) {
    case FL_PLAN_CONV_FORWARD:
        p->forward = (cudnnConvolutionFwdAlgo_t)algo;
        return fl_cudnn_check(cudnnGetConvolutionForwardWorkspaceSize(d->cudnn, p->x, p->filter, p->conv, p->y,
                                                                      p->forward, ws),
                              "cudnnGetConvolutionForwardWorkspaceSize");
    case FL_PLAN_CONV_BACKWARD_DATA:
        p->backward_data = (cudnnConvolutionBwdDataAlgo_t)algo;
        return fl_cudnn_check(cudnnGetConvolutionBackwardDataWorkspaceSize(d->cudnn, p->filter, p->y, p->conv,
                                                                           p->x, p->backward_data, ws),
                              "cudnnGetConvolutionBackwardDataWorkspaceSize");
    default:
        p->backward_filter = (cudnnConvolutionBwdFilterAlgo_t)algo;
        return fl_cudnn_check(cudnnGetConvolutionBackwardFilterWorkspaceSize(d->cudnn, p->x, p->y, p->conv,
                                                                             p->filter, p->backward_filter, ws),
                              "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    }
}

/* Measured while the stream is free and no determinism is asked for;
 * cuDNN's heuristics otherwise. */
static ranking how_to_rank(const fl_cuda_device *d)
{
    enum cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(d->stream, &capturing) != cudaSuccess)
        cudaGetLastError();
    return d->deterministic || capturing != cudaStreamCaptureStatusNone ? HEURISTICS : MEASURE;
}

/* The fastest algorithm that works (and, with FLOWLAB_DETERMINISTIC, gives
 * the same bits every run). */
static int choose_algorithm(fl_cuda_device *d, fl_conv_plan *p)
{
    candidate c[MAX_ALGOS];
    int found = 0, rc;
    ranking how = how_to_rank(d);
    switch (p->kind) {
    case FL_PLAN_CONV_FORWARD: rc = rank_forward(d, p, how, c, &found); break;
    case FL_PLAN_CONV_BACKWARD_DATA: rc = rank_backward_data(d, p, how, c, &found); break;
    default: rc = rank_backward_filter(d, p, how, c, &found); break;
    }
    if (rc != 0)
        return -1;
    const candidate *chosen = pick(c, found, d->deterministic, p);
    if (!chosen)
        return -1;
    p->deterministic = chosen->determinism == CUDNN_DETERMINISTIC;
    p->measured = how == MEASURE;
    if (keep(d, p, chosen->algo, chosen->math) != 0)
        return -1;
    if (how == MEASURE)
        fl_conv_engine_consider(d, p);
    return 0;
}

/* ---- making and finding plans ---- */

static fl_conv_plan *make_plan(fl_cuda_device *d, fl_conv_plan_kind kind, const fl_conv_geometry *g)
{
    fl_conv_plan *p = fl_xcalloc(1, sizeof *p);
    p->kind = kind;
    p->geometry = *g;
    p->deterministic = kind == FL_PLAN_MAX_POOL; /* CUDNN_POOLING_MAX_DETERMINISTIC */
    int rc = kind == FL_PLAN_MAX_POOL ? pool_descriptors(p) : conv_descriptors(d, p) || choose_algorithm(d, p);
    if (rc == 0)
        return p;
    destroy_plan(p);
    return NULL;
}

/* fl_conv_geometry is thirteen ints, no padding: memcmp compares them all. */
static fl_conv_plan *find(fl_conv_plan *list, fl_conv_plan_kind kind, const fl_conv_geometry *g)
{
    for (fl_conv_plan *p = list; p; p = p->next)
        if (p->kind == kind && memcmp(&p->geometry, g, sizeof *g) == 0)
            return p;
    return NULL;
}

/* A plan, once listed, is never moved or freed before the device closes,
 * so the pointer stays good after the lock is released. */
const fl_conv_plan *fl_conv_plan_for(fl_cuda_device *d, fl_conv_plan_kind kind, const fl_conv_geometry *g)
{
    pthread_mutex_lock(&plans_lock);
    fl_conv_plan *p = find(d->conv_plans, kind, g);
    if (!p) {
        p = make_plan(d, kind, g);
        if (p) {
            p->next = d->conv_plans;
            d->conv_plans = p;
        }
    }
    pthread_mutex_unlock(&plans_lock);
    return p;
}

void fl_cuda_conv_plans_free(fl_cuda_device *d)
{
    pthread_mutex_lock(&plans_lock);
    fl_conv_plan *p = d->conv_plans;
    d->conv_plans = NULL;
    pthread_mutex_unlock(&plans_lock);
    while (p) {
        fl_conv_plan *next = p->next;
        destroy_plan(p);
        p = next;
    }
}

void fl_cuda_conv_plan_counts(void *impl, int *plans, int *nondeterministic)
{
    fl_cuda_device *d = impl;
    *plans = *nondeterministic = 0;
    pthread_mutex_lock(&plans_lock);
    for (const fl_conv_plan *p = d->conv_plans; p; p = p->next) {
        (*plans)++;
        *nondeterministic += !p->deterministic;
    }
    pthread_mutex_unlock(&plans_lock);
}

void fl_cuda_math_policy(void *impl, int *tf32, int *measured_plans)
{
    fl_cuda_device *d = impl;
    *tf32 = d->allow_tf32;
    *measured_plans = 0;
    pthread_mutex_lock(&plans_lock);
    for (const fl_conv_plan *p = d->conv_plans; p; p = p->next)
        *measured_plans += p->measured;
    pthread_mutex_unlock(&plans_lock);
}

int fl_cuda_conv_graph_plans(void *impl)
{
    fl_cuda_device *d = impl;
    int count = 0;
    pthread_mutex_lock(&plans_lock);
    for (const fl_conv_plan *p = d->conv_plans; p; p = p->next)
        count += p->engine != NULL;
    pthread_mutex_unlock(&plans_lock);
    return count;
}

bool fl_cuda_deterministic_requested(void)
{
    const char *setting = getenv("FLOWLAB_DETERMINISTIC");
    return setting && setting[0] && strcmp(setting, "0") != 0 && strcmp(setting, "false") != 0;
}

/* FLOWLAB_ALLOW_TF32=0 (or "false") turns TF32 off; unset or anything else
 * leaves it on where the hardware has it (Ampere, compute capability 8.0,
 * and later). NVIDIA_TF32_OVERRIDE=0, NVIDIA's own switch, also wins. */
bool fl_cuda_tf32_allowed(int major)
{
    const char *setting = getenv("FLOWLAB_ALLOW_TF32");
    bool refused = setting && (strcmp(setting, "0") == 0 || strcmp(setting, "false") == 0);
    return major >= 8 && !refused;
}
