/* accumulator.c: TensorFlow's ConditionalAccumulator for synchronous
 * training: workers add gradients tagged with their local step, stale ones
 * are dropped and counted, and a take waits for enough of them, averages,
 * resets and advances the global step. Each accumulator has its own lock
 * and condition; the set's lock guards only the list of names. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accumulator.h"

/* A take waits on its condition in slices this long, so that a passed
 * deadline is noticed on the monotonic clock even if no apply comes. */
#define WAIT_SLICE_S 0.1

struct fl_accumulator {
    char *name;
    fl_shape shape;
    size_t count;       /* elements */
    float *sum;
    int accumulated;    /* gradients in sum */
    int64_t global_step;
    int64_t stale;
    bool closed;        /* the chief ended training (a closed sync token) */
    int64_t closed_at;  /* the global step it ended at */
    pthread_mutex_t lock;
    pthread_cond_t arrived;
};

struct fl_accumulator_set {
    pthread_mutex_t lock;
    fl_accumulator **items;
    int n, cap;
    int remaining; /* workers that have not said goodbye; -1: none has yet */
};

fl_accumulator_set *fl_accumulator_set_new(void)
{
    fl_accumulator_set *set = fl_xcalloc(1, sizeof *set);
    pthread_mutex_init(&set->lock, NULL);
    set->remaining = -1;
    return set;
}

void fl_accumulator_set_note_remaining(fl_accumulator_set *set, int workers)
{
    pthread_mutex_lock(&set->lock);
    set->remaining = workers;
    pthread_mutex_unlock(&set->lock);
}

int fl_accumulator_set_remaining(fl_accumulator_set *set)
{
    pthread_mutex_lock(&set->lock);
    int workers = set->remaining;
    pthread_mutex_unlock(&set->lock);
    return workers;
}

void fl_accumulator_set_free(fl_accumulator_set *set)
{
    if (!set)
        return;
    for (int i = 0; i < set->n; i++) {
        fl_accumulator *a = set->items[i];
        pthread_mutex_destroy(&a->lock);
        pthread_cond_destroy(&a->arrived);
        free(a->name);
        free(a->sum);
        free(a);
    }
    free(set->items);
    pthread_mutex_destroy(&set->lock);
    free(set);
}

/* Its sum is a tensor a ps holds for any client: bounded as every tensor
 * is (FLOWLAB_MAX_TENSOR_BYTES), refused rather than a crash. */
static fl_accumulator *make_accumulator(fl_accumulator_set *set, const char *name, fl_shape shape)
{
    fl_tensor like = {.dtype = FL_FLOAT32, .shape = shape};
    size_t bytes = fl_tensor_bytes(&like);
    float *sum = fl_try_malloc(bytes);
    if (!sum) {
        fl_prefix_error("accumulator %s: ", name);
        return NULL;
    }
    memset(sum, 0, bytes);
    fl_accumulator *a = fl_xcalloc(1, sizeof *a);
    a->name = fl_xstrdup(name);
    a->shape = shape;
    a->count = bytes / sizeof(float);
    a->sum = sum;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->arrived, NULL);
    if (set->n == set->cap) {
        set->cap = set->cap ? 2 * set->cap : 8;
        set->items = fl_xrealloc(set->items, (size_t)set->cap * sizeof *set->items);
    }
    return set->items[set->n++] = a;
}

fl_accumulator *fl_accumulator_find(fl_accumulator_set *set, const char *name, fl_shape shape)
{
    fl_accumulator *found = NULL;
    pthread_mutex_lock(&set->lock);
    for (int i = 0; i < set->n && !found; i++)
        if (strcmp(set->items[i]->name, name) == 0)
            found = set->items[i];
    if (!found)
        found = make_accumulator(set, name, shape);
    else if (!fl_shape_equal(found->shape, shape)) {
        char had[64], asked[64];
        fl_set_error_code(FL_INVALID_ARGUMENT, "accumulator %s already lives on this task for gradients of shape "
                          "%s, not %s; give each variable's accumulator its own name (TensorFlow: one per variable)",
                          name, fl_shape_format(found->shape, had, sizeof had),
                          fl_shape_format(shape, asked, sizeof asked));
        found = NULL;
    }
    pthread_mutex_unlock(&set->lock);
    return found;
}

static int check_tensor(const fl_accumulator *a, const fl_tensor *t, const char *op, const char *what)
{
    if (t->dtype == FL_FLOAT32 && fl_shape_equal(t->shape, a->shape))
        return 0;
    char want[64], got[64];
    fl_set_error_code(FL_INVALID_ARGUMENT, "%s: the %s is %s %s but accumulator %s holds float32 %s; feed the "
                      "gradient of the variable it was made for", op, what, fl_dtype_name(t->dtype),
                      fl_shape_format(t->shape, got, sizeof got), a->name, fl_shape_format(a->shape, want, sizeof want));
    return -1;
}

int fl_accumulator_apply(fl_accumulator *a, int64_t local_step, const fl_tensor *gradient, const char *op)
{
    if (check_tensor(a, gradient, op, "gradient") != 0)
        return -1;
    pthread_mutex_lock(&a->lock);
    bool stale = local_step < a->global_step;
    if (stale)
        a->stale++;
    else {
        const float *g = gradient->data;
        for (size_t i = 0; i < a->count; i++)
            a->sum[i] += g[i];
        a->accumulated++;
        pthread_cond_broadcast(&a->arrived);
    }
    pthread_mutex_unlock(&a->lock);
    return stale ? 1 : 0;
}

/* Waits (lock held) one slice or until an apply signals. */
static void wait_slice(fl_accumulator *a, double deadline_s)
{
    double left = deadline_s - fl_now_s();
    double slice = left < WAIT_SLICE_S ? left : WAIT_SLICE_S;
    if (slice <= 0)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long ns = until.tv_nsec + (long)(slice * 1e9);
    until.tv_sec += ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&a->arrived, &a->lock, &until);
}

static int check_take(fl_accumulator *a, int num_required, const fl_tensor *out, const char *op)
{
    if (num_required >= 1)
        return check_tensor(a, out, op, "output");
    fl_set_error_code(FL_INVALID_ARGUMENT, "%s: num_required is %d; accumulator %s averages 1 or more gradients", op,
                      num_required, a->name);
    return -1;
}

/* With the lock held and enough gradients: their average into out, then
 * the sum reset and the global step advanced. */
static void take_locked(fl_accumulator *a, float *avg)
{
    for (size_t i = 0; i < a->count; i++) {
        avg[i] = a->sum[i] / (float)a->accumulated;
        a->sum[i] = 0;
    }
    a->accumulated = 0;
    a->global_step++;
}

int fl_accumulator_try_take(fl_accumulator *a, int num_required, fl_tensor *out, const char *op)
{
    if (check_take(a, num_required, out, op) != 0)
        return -1;
    pthread_mutex_lock(&a->lock);
    bool enough = a->accumulated >= num_required;
    if (enough)
        take_locked(a, out->data);
    pthread_mutex_unlock(&a->lock);
    return enough ? 1 : 0;
}

int fl_accumulator_take(fl_accumulator *a, int num_required, double deadline_s, fl_tensor *out, const char *op)
{
    if (check_take(a, num_required, out, op) != 0)
        return -1;
    pthread_mutex_lock(&a->lock);
    while (a->accumulated < num_required && fl_now_s() < deadline_s)
        wait_slice(a, deadline_s);
    int had = a->accumulated;
    if (had >= num_required)
        take_locked(a, out->data);
    pthread_mutex_unlock(&a->lock);
    if (had >= num_required)
        return 0;
    fl_set_error_code(FL_DEADLINE_EXCEEDED, "%s: accumulator %s had %d of the %d gradients it waits for at its "
                      "deadline; are enough workers running (replicas_to_aggregate, FLOWLAB_TASK_DEADLINE)?", op,
                      a->name, had, num_required);
    return -1;
}

void fl_accumulator_set_step(fl_accumulator *a, int64_t step)
{
    pthread_mutex_lock(&a->lock);
    a->global_step = step; /* TensorFlow sets even a lower one (it only logs it) */
    a->closed = false;     /* a chief that trains again on this ps (restarted after the end) reopens it */
    pthread_mutex_unlock(&a->lock);
}

void fl_accumulator_close_at(fl_accumulator *a, int64_t step)
{
    pthread_mutex_lock(&a->lock);
    a->closed = true;
    a->closed_at = step;
    pthread_cond_broadcast(&a->arrived);
    pthread_mutex_unlock(&a->lock);
}

fl_accumulator_state fl_accumulator_read(fl_accumulator *a)
{
    pthread_mutex_lock(&a->lock);
    fl_accumulator_state now = {.global_step = a->global_step, .stale = a->stale, .accumulated = a->accumulated,
                                .closed = a->closed, .closed_at = a->closed_at};
    pthread_mutex_unlock(&a->lock);
    return now;
}
