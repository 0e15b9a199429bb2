/* rendezvous.c: values sent task to task, held until the run that needs
 * them takes them. A list under one lock and one condition: a step moves a
 * handful of values, so a search is cheaper than a hash table to read. The
 * steps that are over (finished or aborted) are remembered in a ring, so a
 * value that arrives after its step is over is dropped, not kept forever. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rendezvous.h"

#define STEPS_REMEMBERED 256

typedef struct entry {
    uint64_t step;
    char *key;
    fl_tensor *value;
    size_t bytes;
    double arrived_s;
    struct entry *next;
} entry;

typedef struct {
    uint64_t step;
    bool aborted;
} step_over;

struct fl_rendezvous {
    pthread_mutex_t lock;
    pthread_cond_t arrived;
    entry *entries;
    step_over over[STEPS_REMEMBERED];
    int nover, next_over;
    bool all_aborted;
    size_t bytes, max_bytes; /* held now, and the most (0: no bound) */
    double max_age_s;        /* a value waits at most this long (0: no bound) */
};

fl_rendezvous *fl_rendezvous_new(void)
{
    fl_rendezvous *r = fl_xcalloc(1, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->arrived, NULL);
    return r;
}

static void free_entry(entry *e)
{
    fl_tensor_free(e->value);
    free(e->key);
    free(e);
}

void fl_rendezvous_free(fl_rendezvous *r)
{
    if (!r)
        return;
    while (r->entries) {
        entry *next = r->entries->next;
        free_entry(r->entries);
        r->entries = next;
    }
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->arrived);
    free(r);
}

void fl_rendezvous_set_limits(fl_rendezvous *r, size_t max_bytes, double max_age_s)
{
    pthread_mutex_lock(&r->lock);
    r->max_bytes = max_bytes;
    r->max_age_s = max_age_s;
    pthread_mutex_unlock(&r->lock);
}

/* Drops the values that have waited past max_age_s. Lock held. */
static void drop_stale(fl_rendezvous *r)
{
    double too_old = fl_now_s() - r->max_age_s;
    for (entry **p = &r->entries; r->max_age_s > 0 && *p;) {
        entry *e = *p;
        if (e->arrived_s >= too_old) {
            p = &e->next;
            continue;
        }
        *p = e->next;
        r->bytes -= e->bytes;
        free_entry(e);
    }
}

/* The record of a step that is over, or NULL. Lock held. */
static const step_over *find_over(const fl_rendezvous *r, uint64_t step)
{
    for (int i = 0; i < r->nover; i++)
        if (r->over[i].step == step)
            return &r->over[i];
    return NULL;
}

int fl_rendezvous_put(fl_rendezvous *r, uint64_t step, const char *key, const fl_tensor *value, size_t *held)
{
    entry *e = fl_xcalloc(1, sizeof *e);
    *e = (entry){.step = step, .key = fl_xstrdup(key), .value = fl_tensor_copy(value),
                 .bytes = fl_tensor_bytes(value), .arrived_s = fl_now_s()};
    pthread_mutex_lock(&r->lock);
    drop_stale(r);
    *held = r->bytes;
    bool refused = r->max_bytes > 0 && r->bytes + e->bytes > r->max_bytes;
    if (refused || find_over(r, step) || r->all_aborted) { /* a value after its step is over: nobody waits */
        pthread_mutex_unlock(&r->lock);
        free_entry(e);
        return refused ? -1 : 0;
    }
    e->next = r->entries;
    r->entries = e;
    r->bytes += e->bytes;
    pthread_cond_broadcast(&r->arrived);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

/* Unlinks and returns the entry for (step, key), or NULL. Lock held. */
static entry *unlink_entry(fl_rendezvous *r, uint64_t step, const char *key)
{
    for (entry **p = &r->entries; *p; p = &(*p)->next) {
        entry *e = *p;
        if (e->step == step && (!key || strcmp(e->key, key) == 0)) {
            *p = e->next;
            r->bytes -= e->bytes;
            return e;
        }
    }
    return NULL;
}

static struct timespec wall_after(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + seconds;
    return (struct timespec){(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
}

/* Waits until the entry is there or the step is over. Lock held. */
// [book:rendezvous_wait]
static entry *wait_for(fl_rendezvous *r, uint64_t step, const char *key, const fl_rendezvous_wait_options *o)
{
    double start = fl_now_s(), next_line = start + 5;
    entry *e;
    while (!(e = unlink_entry(r, step, key)) && !find_over(r, step) && !r->all_aborted) {
        double now = fl_now_s();
        if (now - start >= o->deadline_s)
            return NULL;
        if (now >= next_line && o->log) {
            fprintf(o->log, "%s: step %llu waiting for %s from %s (%.0f s so far)\n", o->prefix,
                    (unsigned long long)step, key, o->from, now - start);
            fflush(o->log);
            next_line = now + 5;
        }
        double until = next_line < start + o->deadline_s ? next_line : start + o->deadline_s;
        struct timespec ts = wall_after(until - now);
        pthread_cond_timedwait(&r->arrived, &r->lock, &ts);
    }
    return e;
}
// [end:rendezvous_wait]

int fl_rendezvous_take(fl_rendezvous *r, uint64_t step, const char *key, const fl_rendezvous_wait_options *o,
                       fl_tensor **out)
{
    *out = NULL;
    double start = fl_now_s();
    pthread_mutex_lock(&r->lock);
    entry *e = wait_for(r, step, key, o);
    const step_over *over = e ? NULL : find_over(r, step);
    bool aborted = !e && (r->all_aborted || (over && over->aborted));
    pthread_mutex_unlock(&r->lock);
    if (e) {
        *out = e->value;
        e->value = NULL;
        free_entry(e);
        return 0;
    }
    if (aborted)
        fl_set_error_code(FL_ABORTED, "step %llu was aborted while waiting for %s from %s",
                          (unsigned long long)step, key, o->from);
    else if (over)
        fl_set_error_code(FL_INVALID_ARGUMENT, "step %llu has already ended on this task (waiting for %s from %s): "
                          "each run needs a step id of its own", (unsigned long long)step, key, o->from);
    else
        fl_set_error_code(FL_DEADLINE_EXCEEDED,
                          "gave up after %.0f s waiting for %s from %s in step %llu (is that task alive? "
                          "FLOWLAB_TASK_DEADLINE sets the wait)",
                          fl_now_s() - start, key, o->from, (unsigned long long)step);
    return -1;
}

/* Marks the step over and drops what it left. */
static void end_step(fl_rendezvous *r, uint64_t step, bool aborted)
{
    pthread_mutex_lock(&r->lock);
    step_over *s = (step_over *)find_over(r, step);
    if (!s) {
        s = &r->over[r->next_over];
        r->next_over = (r->next_over + 1) % STEPS_REMEMBERED;
        if (r->nover < STEPS_REMEMBERED)
            r->nover++;
        *s = (step_over){step, false};
    }
    s->aborted = s->aborted || aborted;
    entry *e;
    while ((e = unlink_entry(r, step, NULL)))
        free_entry(e);
    pthread_cond_broadcast(&r->arrived);
    pthread_mutex_unlock(&r->lock);
}

void fl_rendezvous_abort(fl_rendezvous *r, uint64_t step) { end_step(r, step, true); }

void fl_rendezvous_finish(fl_rendezvous *r, uint64_t step) { end_step(r, step, false); }

void fl_rendezvous_abort_all(fl_rendezvous *r)
{
    pthread_mutex_lock(&r->lock);
    r->all_aborted = true;
    pthread_cond_broadcast(&r->arrived);
    pthread_mutex_unlock(&r->lock);
}

int fl_rendezvous_count(fl_rendezvous *r)
{
    pthread_mutex_lock(&r->lock);
    int n = 0;
    for (const entry *e = r->entries; e; e = e->next)
        n++;
    pthread_mutex_unlock(&r->lock);
    return n;
}
