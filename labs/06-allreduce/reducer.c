/* reducer.c: the communication thread of chapter 6's lab (see reducer.h).
 * The tensors sit in one buffer in the order of the schedule, so a bucket
 * of consecutive tensors is one contiguous range: fusing costs no copy
 * beyond the one that brings a tensor in. The ranks agree on each bucket's
 * size before summing it, so the collectives match on every rank. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reducer.h"

struct reducer {
    reducer_plan plan;
    float *buffer;                /* every tensor, in the schedule's order */
    size_t offset[MAX_REDUCED];   /* by index: where it starts in buffer */
    bool ready[MAX_REDUCED];      /* by position in the schedule */
    int next;                     /* the first position not reduced yet */
    bool failed, stopping;
    char error[512];
    int ranks;
    pthread_t thread;
    pthread_mutex_t lock;         /* guards ready, next, failed, stopping, error */
    pthread_cond_t changed;       /* a tensor arrived, a bucket was reduced, or stop */
};

static double monotonic_us(void) /* the clock fl_session_trace_event takes */
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* How many tensors from position `from` on are ready here and fit, together,
 * under the threshold (the first always does). Called under the lock. */
static int ready_to_fuse(const reducer *r, int from)
{
    size_t bytes = 0;
    int k = from;
    while (k < r->plan.count && r->ready[k]) {
        size_t more = r->plan.elements[r->plan.order[k]] * sizeof(float);
        if (k > from && bytes + more > r->plan.fusion_threshold)
            break;
        bytes += more;
        k++;
    }
    return k - from;
}

/* Horovod's negotiation, reduced to one number: the ranks take the
 * smallest of their ready counts, so every rank's next collective covers
 * the same tensors even when they finished them at different times. */
static int agree(reducer *r, int mine, int *agreed)
{
    *agreed = mine;
    if (!r->plan.background || r->plan.fusion_threshold == 0)
        return 0; /* everything is ready, or one tensor a bucket: the same everywhere */
    int code = MPI_Allreduce(&mine, agreed, 1, MPI_INT, MPI_MIN, r->plan.comm);
    if (code == MPI_SUCCESS)
        return 0;
    snprintf(r->error, sizeof r->error, "agreeing on the next bucket: MPI error %d", code);
    return -1;
}

/* Sums positions [from, from + n) over the ranks and divides by their
 * number, recording the collective on the timeline. */
static int reduce_bucket(reducer *r, int from, int n)
{
    size_t start = r->offset[r->plan.order[from]], count = 0;
    for (int k = from; k < from + n; k++)
        count += r->plan.elements[r->plan.order[k]];
    double began = monotonic_us();
    if (sum_across_ranks(r->buffer + start, count, r->plan.algorithm, r->plan.comm) != 0) {
        snprintf(r->error, sizeof r->error, "%s", replicas_error());
        return -1;
    }
    if (r->plan.trace) {
        char name[64];
        snprintf(name, sizeof name, "%s, %d tensor%s, %.2f MB", allreduce_algorithm_name(r->plan.algorithm), n,
                 n == 1 ? "" : "s", count * 4 / 1e6);
        fl_session_trace_event(r->plan.trace, "collectives", name, began,
                               monotonic_us());
    }
    for (size_t k = start; k < start + count; k++)
        r->buffer[k] /= (float)r->ranks;
    return 0;
}

/* One bucket, when position r->next is ready; called with the lock held,
 * which it drops around the collectives. */
static void reduce_next(reducer *r)
{
    int from = r->next, agreed = 0, mine = ready_to_fuse(r, from);
    pthread_mutex_unlock(&r->lock);
    int rc = agree(r, mine, &agreed);
    if (rc == 0)
        rc = reduce_bucket(r, from, agreed);
    pthread_mutex_lock(&r->lock);
    if (rc != 0) {
        r->failed = true;
        agreed = r->plan.count - from; /* the step is lost: reducer_wait returns */
    }
    r->next = from + agreed;
    pthread_cond_broadcast(&r->changed);
}

static void *communicate(void *arg)
{
    reducer *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        if (r->next < r->plan.count && r->ready[r->next])
            reduce_next(r);
        else
            pthread_cond_wait(&r->changed, &r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

reducer *reducer_start(const reducer_plan *plan)
{
    reducer *r = calloc(1, sizeof *r);
    size_t total = 0;
    if (r) {
        r->plan = *plan;
        for (int k = 0; k < plan->count; k++) {
            r->offset[plan->order[k]] = total;
            total += plan->elements[plan->order[k]];
        }
        r->buffer = malloc((total ? total : 1) * sizeof *r->buffer);
    }
    if (!r || !r->buffer) {
        free(r);
        return NULL;
    }
    MPI_Comm_size(plan->comm, &r->ranks);
    r->next = plan->count; /* nothing to do before the first step */
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    if (plan->background && pthread_create(&r->thread, NULL, communicate, r) != 0) {
        r->plan.background = false; /* reducer_stop must not join it */
        reducer_stop(r);
        return NULL;
    }
    return r;
}

void reducer_begin_step(reducer *r)
{
    pthread_mutex_lock(&r->lock);
    memset(r->ready, 0, sizeof r->ready);
    r->next = 0;
    r->failed = false;
    pthread_mutex_unlock(&r->lock);
}

void reducer_tensor_ready(reducer *r, int index, const fl_tensor *value)
{
    size_t count = (size_t)fl_shape_size(value->shape);
    bool fits = index >= 0 && index < r->plan.count && value->dtype == FL_FLOAT32 &&
                count == r->plan.elements[index];
    if (fits)
        memcpy(r->buffer + r->offset[index], value->data, count * sizeof(float));
    pthread_mutex_lock(&r->lock);
    for (int k = 0; fits && k < r->plan.count; k++)
        r->ready[k] = r->ready[k] || r->plan.order[k] == index;
    if (!fits && !r->failed) {
        r->failed = true;
        snprintf(r->error, sizeof r->error, "tensor %d is not the float32 of %zu values planned",
                 index, index >= 0 && index < r->plan.count ? r->plan.elements[index] : 0);
    }
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

int reducer_wait(reducer *r)
{
    pthread_mutex_lock(&r->lock);
    while (r->next < r->plan.count && !r->failed) {
        if (!r->plan.background && r->ready[r->next])
            reduce_next(r); /* --overlap off: the caller's thread makes the collectives */
        else if (!r->plan.background)
            break; /* a tensor never arrived: said below */
        else
            pthread_cond_wait(&r->changed, &r->lock);
    }
    int rc = r->failed || r->next < r->plan.count ? -1 : 0;
    if (r->next < r->plan.count && !r->failed)
        snprintf(r->error, sizeof r->error, "tensor %d of the schedule never arrived",
                 r->plan.order[r->next]);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

const float *reducer_mean(const reducer *r, int index)
{
    return r->buffer + r->offset[index];
}

const char *reducer_error(const reducer *r)
{
    return r->error;
}

void reducer_stop(reducer *r)
{
    if (!r)
        return;
    if (r->plan.background) {
        pthread_mutex_lock(&r->lock);
        r->stopping = true;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
    }
    pthread_cond_destroy(&r->changed);
    pthread_mutex_destroy(&r->lock);
    free(r->buffer);
    free(r);
}
