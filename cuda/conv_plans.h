/* conv_plans.h: cuDNN's descriptors and algorithm for one convolution or
 * pooling shape, made the first time a shape is seen and kept per device
 * until it closes (conv_plans.c). launch_conv.c only looks plans up. */
#ifndef FLOWLAB_CUDA_CONV_PLANS_H
#define FLOWLAB_CUDA_CONV_PLANS_H

#include "conv_geometry.h"
#include "cuda_device.h"

typedef enum {
    FL_PLAN_CONV_FORWARD,         /* Conv2D, FusedConv2D */
    FL_PLAN_CONV_BACKWARD_DATA,   /* Conv2DBackpropInput */
    FL_PLAN_CONV_BACKWARD_FILTER, /* Conv2DBackpropFilter */
    FL_PLAN_MAX_POOL              /* MaxPool and its gradients */
} fl_conv_plan_kind;

/* What a call needs besides its tensors' device pointers, which a plan
 * never holds (a launcher stays capturable into a CUDA graph). x is the
 * image as cuDNN sees it: with the explicit padding launch_conv.c adds. */
typedef struct fl_conv_plan {
    fl_conv_plan_kind kind;
    fl_conv_geometry geometry;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t filter;    /* convolutions only */
    cudnnConvolutionDescriptor_t conv; /* convolutions only */
    cudnnPoolingDescriptor_t pool;     /* pooling only */
    /* The algorithm of the plan's kind (the other two are unused), and
     * the workspace it needs, in bytes. */
    cudnnConvolutionFwdAlgo_t forward;
    cudnnConvolutionBwdDataAlgo_t backward_data;
    cudnnConvolutionBwdFilterAlgo_t backward_filter;
    size_t workspace_bytes;
    bool deterministic; /* cuDNN says the algorithm gives the same bits every run */
    bool measured;      /* chosen by timing every algorithm (cudnnFind*), not by heuristics */
    /* A graph-API execution plan that timed faster than the legacy
     * algorithm (conv_engines.c), run instead of it; NULL otherwise. */
    struct fl_conv_engine *engine;
    struct fl_conv_plan *next;
} fl_conv_plan;

/* The image as cuDNN sees it. TensorFlow's SAME may pad one more row
 * (column) after the image than before; cuDNN pads both sides alike, so a
 * convolution gets that surplus as explicit zeros ("extra"), and pooling
 * gets all its padding explicitly (-infinity), cuDNN padding nothing. */
static inline int fl_conv_extra_h(const fl_conv_geometry *g) { return fl_conv_pad_bottom(g) - g->pad_top; }
static inline int fl_conv_extra_w(const fl_conv_geometry *g) { return fl_conv_pad_right(g) - g->pad_left; }
static inline int fl_pool_padded_h(const fl_conv_geometry *g) { return g->pad_top + g->h + fl_conv_pad_bottom(g); }
static inline int fl_pool_padded_w(const fl_conv_geometry *g) { return g->pad_left + g->w + fl_conv_pad_right(g); }

/* The device's plan for this kind and geometry, made on first use: the
 * fastest algorithm by measurement, or with d->deterministic (or while the
 * stream is being captured) cuDNN's first choice by its heuristics. NULL, with the
 * error set, when cuDNN refuses the shape. Safe from several threads. */
const fl_conv_plan *fl_conv_plan_for(fl_cuda_device *d, fl_conv_plan_kind kind, const fl_conv_geometry *g);

/* "forward", "backward-data" or "backward-filter", for messages. */
const char *fl_conv_plan_kind_name(fl_conv_plan_kind kind);

/* conv_engines.c: runs p's convolution on d's stream, through its graph
 * plan or its legacy algorithm, with workspace of p->workspace_bytes. The
 * tensors by role: x the image (or, for the data gradient, its gradient,
 * written), w the filter (the filter gradient's output), y the output (or
 * the gradient coming in). */
int fl_conv_plan_run(fl_cuda_device *d, const fl_conv_plan *p, const void *x, const void *w, const void *y,
                     void *work);
/* Times the graph API's engines against p's legacy algorithm and keeps the
 * faster (TF32 allowed and FLOWLAB_CUDNN_ENGINES not 0; the stream free). */
void fl_conv_engine_consider(fl_cuda_device *d, fl_conv_plan *p);
void fl_conv_engine_free(struct fl_conv_engine *e);

#endif
