/* reducer.c: the communication thread of chapter 6's lab (see reducer.h).
 * The tensors sit in one buffer in the order of the schedule, so a bucket
 * of consecutive tensors is one contiguous range: fusing costs no copy
 * beyond the one that brings a tensor in. The buckets are planned once,
 * from the tensors' sizes in the schedule's order, as PyTorch DDP plans its
 * buckets: the same on every rank and in every step and run, so the
 * collectives match on every rank and every sum is cut the same way (a
 * 3-rank float sum depends on where a bucket's chunks start). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_allreduce.h"
#include "reducer.h"
#include "shared_allreduce.h"

struct reducer {
    reducer_plan plan;
    bool on_gpu;                  /* NCCL's: buffer is GPU memory, and stays there */
    shared_buffers *shared;       /* --allreduce shared's: buffer lies in a window every rank reads */
    float *buffer;                /* every tensor, in the schedule's order */
    fl_fetch_target targets[MAX_REDUCED]; /* on_gpu: by index, each tensor's place in buffer */
    size_t offset[MAX_REDUCED];   /* by index: where it starts in buffer */
    bool ready[MAX_REDUCED];      /* by position in the schedule */
    int bucket_length[MAX_REDUCED]; /* by the position a bucket starts at: its tensors */
    int next;                     /* the first position not reduced yet */
    bool failed, stopping;
    char error[512];
    int ranks;
    double bytes_moved;           /* --allreduce ring: what this rank sent and received so far */
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

/* A bucket ships once it holds this much (PyTorch DDP's first bucket is
 * 1 MiB for the same reason): chapter 1's model then sums dense_1/kernel's
 * 12.8 MB while the convolutions' backward pass still runs. */
#define BUCKET_MIN_BYTES (1u << 20)

static size_t bytes_at(const reducer *r, int position)
{
    return r->plan.elements[r->plan.order[position]] * sizeof(float);
}

/* Consecutive tensors of the schedule share a bucket until it holds
 * BUCKET_MIN_BYTES or the next one would take it past the threshold
 * (threshold 0: a bucket per tensor). Sizes and order alone decide, never
 * timing, so every rank plans the same buckets without asking the others. */
static void plan_buckets(reducer *r)
{
    for (int k = 0; k < r->plan.count;) {
        int from = k;
        size_t bytes = bytes_at(r, k++);
        while (k < r->plan.count && bytes < BUCKET_MIN_BYTES && bytes + bytes_at(r, k) <= r->plan.fusion_threshold)
            bytes += bytes_at(r, k++);
        r->bucket_length[from] = k - from;
    }
}

/* The first tensor of the bucket at position `from` that has not arrived
 * here; from + its length when all have. Called under the lock. */
static int first_missing(const reducer *r, int from)
{
    int k = from;
    while (k < from + r->bucket_length[from] && r->ready[k])
        k++;
    return k;
}

static bool bucket_ready(const reducer *r, int from)
{
    return first_missing(r, from) == from + r->bucket_length[from];
}

/* The collective of one bucket: NCCL averages it on the GPU (ncclAvg);
 * MPI, the ring and the shared window sum host memory, and reduce_bucket
 * divides. */
static int collective(reducer *r, float *bucket, size_t count)
{
    if (r->on_gpu)
        return nccl_average(bucket, count, r->error, sizeof r->error);
    if (r->shared)
        return shared_allreduce_sum(r->shared, (size_t)(bucket - r->buffer), count, r->error, sizeof r->error);
    if (sum_across_ranks(bucket, count, r->plan.algorithm, r->plan.comm) == 0)
        return 0;
    snprintf(r->error, sizeof r->error, "%s", replicas_error());
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
    if (collective(r, r->buffer + start, count) != 0)
        return -1;
    /* The ring sends 2(N-1)/N of the bucket and receives as much (the shared
     * window reads and writes as much of the other ranks' buffers); written
     * here, read after reducer_wait, which the lock orders. */
    r->bytes_moved += 2.0 * 2.0 * (r->ranks - 1) / r->ranks * (double)count * sizeof(float);
    if (r->plan.trace) {
        char name[96];
        snprintf(name, sizeof name, "%s, %d tensor%s, %.2f MB", allreduce_algorithm_name(r->plan.algorithm), n,
                 n == 1 ? "" : "s", count * 4 / 1e6);
        fl_session_trace_event(r->plan.trace, "collectives", name, began,
                               monotonic_us());
    }
    for (size_t k = start; !r->on_gpu && !r->plan.keep_sums && k < start + count; k++) /* NCCL's is averaged */
        r->buffer[k] /= (float)r->ranks;
    return 0;
}

/* The bucket at r->next, once all its tensors are ready; called with the
 * lock held, which it drops around the collectives. */
static void reduce_next(reducer *r)
{
    int from = r->next, n = r->bucket_length[from];
    pthread_mutex_unlock(&r->lock);
    int rc = reduce_bucket(r, from, n);
    pthread_mutex_lock(&r->lock);
    if (rc != 0) {
        r->failed = true;
        n = r->plan.count - from; /* the step is lost: reducer_wait returns */
    }
    r->next = from + n;
    pthread_cond_broadcast(&r->changed);
}

static void *communicate(void *arg)
{
    reducer *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        if (r->next < r->plan.count && bucket_ready(r, r->next))
            reduce_next(r);
        else
            pthread_cond_wait(&r->changed, &r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* The fusion buffer: host memory (with --allreduce shared, this rank's part
 * of a window all ranks share), or with NCCL GPU memory. The run writes
 * each tensor straight into its place there (the targets, fl_run_options'
 * fetch_to), so a gradient is copied once, from its device into the
 * bucket (on a PoCL CPU device not at all: its op writes it there), and
 * with NCCL the average stays on the GPU. */
static float *allocate_buffer(reducer *r, size_t total)
{
    float *buffer = NULL;
    if (r->on_gpu)
        buffer = nccl_alloc(total, r->error, sizeof r->error);
    else if (r->plan.algorithm == ALLREDUCE_SHARED)
        r->shared = shared_buffers_allocate(total, r->plan.comm, &buffer, r->error, sizeof r->error);
    else
        buffer = malloc((total ? total : 1) * sizeof *r->buffer);
    for (int i = 0; buffer && i < r->plan.count; i++)
        r->targets[i] = (fl_fetch_target){.device = r->on_gpu ? r->plan.device : NULL, .buffer = buffer + r->offset[i],
                                          .capacity = r->plan.elements[i] * sizeof(float)};
    return buffer;
}

reducer *reducer_start(const reducer_plan *plan, char *why, size_t why_size)
{
    reducer *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(why, why_size, "no memory for the reducer");
        return NULL;
    }
    r->plan = *plan;
    r->on_gpu = plan->algorithm == ALLREDUCE_NCCL;
    size_t total = 0;
    for (int k = 0; k < plan->count; k++) {
        r->offset[plan->order[k]] = total;
        total += plan->elements[plan->order[k]];
    }
    snprintf(r->error, sizeof r->error, "no memory for its %zu-float buffer", total);
    r->buffer = allocate_buffer(r, total);
    if (!r->buffer) {
        snprintf(why, why_size, "%s", r->error);
        free(r);
        return NULL;
    }
    MPI_Comm_size(plan->comm, &r->ranks);
    plan_buckets(r);
    r->next = plan->count; /* nothing to do before the first step */
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    if (plan->background && pthread_create(&r->thread, NULL, communicate, r) != 0) {
        snprintf(why, why_size, "no thread for the communication");
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

const fl_fetch_target *reducer_fetch_to(const reducer *r)
{
    return r->targets;
}

void reducer_tensor_ready(reducer *r, int index, const fl_tensor *value)
{
    size_t count = (size_t)fl_shape_size(value->shape);
    bool fits = index >= 0 && index < r->plan.count && value->dtype == FL_FLOAT32 &&
                count == r->plan.elements[index];
    /* the run wrote it in its place (fetch_to): nothing to copy */
    fits = fits && value->data == (void *)(r->buffer + r->offset[index]) && (value->device != NULL) == r->on_gpu;
    pthread_mutex_lock(&r->lock);
    for (int k = 0; fits && k < r->plan.count; k++)
        r->ready[k] = r->ready[k] || r->plan.order[k] == index;
    if (!fits && !r->failed) {
        r->failed = true;
        snprintf(r->error, sizeof r->error, "tensor %d is not the float32 of %zu values planned, in its place in "
                 "the %s buffer (fetch_to)", index, index >= 0 && index < r->plan.count ? r->plan.elements[index] : 0,
                 r->on_gpu ? "GPU" : "host");
    }
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

int reducer_wait(reducer *r)
{
    pthread_mutex_lock(&r->lock);
    while (r->next < r->plan.count && !r->failed) {
        if (!r->plan.background && bucket_ready(r, r->next))
            reduce_next(r); /* --overlap off: the caller's thread makes the collectives */
        else if (!r->plan.background)
            break; /* a tensor never arrived: said below */
        else
            pthread_cond_wait(&r->changed, &r->lock);
    }
    int rc = r->failed || r->next < r->plan.count ? -1 : 0;
    if (r->next < r->plan.count && !r->failed)
        snprintf(r->error, sizeof r->error, "tensor %d of the schedule never arrived",
                 r->plan.order[first_missing(r, r->next)]);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

fl_tensor reducer_tensor(const reducer *r, int index, fl_shape shape)
{
    return (fl_tensor){.dtype = FL_FLOAT32, .shape = shape, .data = r->buffer + r->offset[index],
                       .device = r->on_gpu ? r->plan.device : NULL, .borrowed = true};
}

float reducer_mean_scalar(const reducer *r, int index)
{
    float value = NAN;
    char why[256];
    if (!r->on_gpu)
        return r->buffer[r->offset[index]] / (r->plan.keep_sums ? (float)r->ranks : 1.0f);
    if (nccl_read(&value, r->buffer + r->offset[index], 1, why, sizeof why) != 0)
        fprintf(stderr, "allreduce: reading the mean loss: %s\n", why);
    return value;
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
    if (r->on_gpu)
        nccl_free(r->buffer);
    else if (r->shared)
        shared_buffers_free(r->shared);
    else
        free(r->buffer);
    free(r);
}

double reducer_bytes_moved(const void *opaque)
{
    const reducer *r = opaque;
    return r->plan.algorithm == ALLREDUCE_RING || r->plan.algorithm == ALLREDUCE_SHARED ? r->bytes_moved : -1;
}
