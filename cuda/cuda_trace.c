/* cuda_trace.c: when the session traces a run, each op's launches sit
 * between two CUDA events, so the timeline shows when the GPU really ran
 * the op, not when the host enqueued it (the fl_backend_tracing group).
 * Each op runs as a little graph of its own (fl_cuda_run_timed), so the
 * host's work for it (descriptors, choices) is not inside its events. */
#include <stdlib.h>
#include <string.h>

#include "cuda_graph.h"

/* The first count ops' events go; the rest move to the front. */
static void drop_events(fl_cuda_device *d, int count)
{
    for (int i = 0; i < count; i++) {
        cudaEventDestroy(d->op_events[i].before);
        cudaEventDestroy(d->op_events[i].after);
        if (d->op_events[i].exec)
            cudaGraphExecDestroy(d->op_events[i].exec);
    }
    d->nop_events -= count;
    memmove(d->op_events, d->op_events + count, (size_t)d->nop_events * sizeof *d->op_events);
}

int fl_cuda_set_tracing(void *impl, bool on)
{
    fl_cuda_device *d = impl;
    if (!on)
        drop_events(d, d->nop_events);
    d->tracing = on;
    return 0;
}

static int add_events(fl_cuda_device *d, int node, fl_cuda_op_events **out)
{
    if (d->nop_events == d->op_events_capacity) {
        d->op_events_capacity = d->op_events_capacity ? d->op_events_capacity * 2 : 256;
        d->op_events = fl_xrealloc(d->op_events, (size_t)d->op_events_capacity * sizeof *d->op_events);
    }
    fl_cuda_op_events *e = &d->op_events[d->nop_events];
    if (fl_cuda_check(cudaEventCreate(&e->before), "cudaEventCreate") != 0)
        return -1;
    if (fl_cuda_check(cudaEventCreate(&e->after), "cudaEventCreate") != 0) {
        cudaEventDestroy(e->before);
        return -1;
    }
    e->node = node;
    e->exec = NULL;
    d->nop_events++;
    *out = e;
    return 0;
}

/* A traced op runs at once, between its events. */
int fl_cuda_traced_run(fl_cuda_device *d, fl_cuda_launcher launch, const fl_node *n, fl_tensor *const *in,
                       fl_tensor *out, const fl_kernel_ctx *ctx)
{
    fl_cuda_op_events *e;
    if (add_events(d, n->id, &e) != 0)
        return -1;
    return fl_cuda_run_timed(d, launch, n, in, out, ctx, e->before, e->after, &e->exec);
}

/* The events' times as fl_now_us(): one event recorded now and waited for
 * is heard a little after it passed, so each time errs late by that delay
 * (microseconds), never early. */
int fl_cuda_take_timings(void *impl, fl_op_timing *out, int max)
{
    fl_cuda_device *d = impl;
    cudaEvent_t now;
    if (fl_cuda_check(cudaEventCreate(&now), "cudaEventCreate") != 0)
        return -1;
    int rc = fl_cuda_check(cudaEventRecord(now, d->stream), "cudaEventRecord");
    if (rc == 0)
        rc = fl_cuda_check(cudaEventSynchronize(now), "cudaEventSynchronize");
    double heard_us = fl_now_us();
    int count = d->nop_events < max ? d->nop_events : max;
    for (int i = 0; i < count && rc == 0; i++) {
        float before_ms = 0, after_ms = 0;
        rc = fl_cuda_check(cudaEventElapsedTime(&before_ms, d->op_events[i].before, now), "cudaEventElapsedTime");
        if (rc == 0)
            rc = fl_cuda_check(cudaEventElapsedTime(&after_ms, d->op_events[i].after, now), "cudaEventElapsedTime");
        out[i] = (fl_op_timing){d->op_events[i].node, heard_us - 1e3 * before_ms, heard_us - 1e3 * after_ms};
    }
    cudaEventDestroy(now);
    drop_events(d, rc == 0 ? count : d->nop_events);
    return rc == 0 ? count : -1;
}

void fl_cuda_trace_free(fl_cuda_device *d)
{
    drop_events(d, d->nop_events);
    free(d->op_events);
    d->op_events = NULL;
}
