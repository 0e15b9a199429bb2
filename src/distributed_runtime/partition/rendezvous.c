/* rendezvous.c: values sent task to task, held until the run that needs
 * them takes them. A list under one lock and one condition: a step moves a
 * handful of values, so a search is cheaper than a hash table to read. The
 * steps that are over (finished or aborted) are remembered in a ring, so a
 * value that arrives after its step is over is dropped, not kept forever.
 * What waits is charged to its sender, so one connection cannot take the
 * room of the others, and goes when its sender does. Entries, their keys
 * and the values' memory are kept for the next step (a spare list), so a
 * warm step allocates nothing here. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rendezvous.h"

#define STEPS_REMEMBERED 256
#define SPARES_KEPT 256 /* entries kept for reuse: more than a step of most graphs sends one task */
#define SPARE_BYTES_KEPT ((size_t)256 << 20) /* their memory, unless the bound on all values is set */

typedef struct entry {
    uint64_t step;
    char *key;
    size_t key_capacity;
    fl_tensor *value;   /* NULL in a spare entry that has none */
    size_t capacity;    /* of value's data */
    size_t bytes;       /* charged: data and FL_RENDEZVOUS_VALUE_OVERHEAD */
    double arrived_s;
    fl_rendezvous_sender *sender; /* NULL: charged to nobody (its sender has gone) */
    struct entry *next;
} entry;

struct fl_rendezvous_sender {
    size_t bytes; /* its values waiting now (under the table's lock) */
};

typedef struct {
    uint64_t step;
    bool aborted;
} step_over;

struct fl_rendezvous {
    pthread_mutex_t lock;
    pthread_cond_t arrived;
    entry *entries;
    entry *spares;           /* for the next values: their keys and memory reused */
    int nspares;
    size_t spare_bytes;      /* the spares' values' memory */
    step_over over[STEPS_REMEMBERED];
    int nover, next_over;
    bool all_aborted;
    size_t bytes;            /* held now */
    size_t per_sender, in_all; /* the most one sender's values, and all, may hold (0: no bound) */
    uint64_t arrivals;       /* values kept and steps ended so far: what a waiting executor watches */
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

static void free_list(entry *e)
{
    while (e) {
        entry *next = e->next;
        free_entry(e);
        e = next;
    }
}

/* Whether capacity more bytes may wait in the spares. Lock held. */
static bool spare_room(const fl_rendezvous *r, size_t capacity)
{
    return r->spare_bytes + capacity <= (r->in_all ? r->in_all : SPARE_BYTES_KEPT);
}

/* A value's entry is done with: kept as a spare (up to SPARES_KEPT), with
 * its key's and, while they fit, its value's memory. Lock held. */
static void retire(fl_rendezvous *r, entry *e)
{
    if (r->nspares >= SPARES_KEPT)
        return free_entry(e);
    if (e->value && !spare_room(r, e->capacity)) {
        fl_tensor_free(e->value);
        e->value = NULL;
        e->capacity = 0;
    }
    r->spare_bytes += e->value ? e->capacity : 0;
    e->next = r->spares;
    r->spares = e;
    r->nspares++;
}

void fl_rendezvous_free(fl_rendezvous *r)
{
    if (!r)
        return;
    free_list(r->entries);
    free_list(r->spares);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->arrived);
    free(r);
}

void fl_rendezvous_set_limits(fl_rendezvous *r, size_t per_sender, size_t in_all, double max_age_s)
{
    pthread_mutex_lock(&r->lock);
    r->per_sender = per_sender;
    r->in_all = in_all;
    r->max_age_s = max_age_s;
    pthread_mutex_unlock(&r->lock);
}

/* Takes e's bytes off what is held. Lock held. */
static void uncharge(fl_rendezvous *r, entry *e)
{
    r->bytes -= e->bytes;
    if (e->sender)
        e->sender->bytes -= e->bytes;
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
        uncharge(r, e);
        retire(r, e);
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

/* Which bound a value of e->bytes would pass, if any. Lock held. */
static fl_rendezvous_put_result room_for(const fl_rendezvous *r, const entry *e, fl_rendezvous_held *held)
{
    *held = (fl_rendezvous_held){e->sender ? e->sender->bytes : 0, r->bytes, e->bytes};
    if (r->per_sender > 0 && e->sender && e->sender->bytes + e->bytes > r->per_sender)
        return FL_RENDEZVOUS_SENDER_FULL;
    if (r->in_all > 0 && r->bytes + e->bytes > r->in_all)
        return FL_RENDEZVOUS_ALL_FULL;
    return FL_RENDEZVOUS_KEPT;
}

/* A spare whose memory holds bytes (else the first, or a new entry). */
static entry *take_spare(fl_rendezvous *r, size_t bytes)
{
    pthread_mutex_lock(&r->lock);
    entry **best = NULL;
    for (entry **p = &r->spares; *p && !best; p = &(*p)->next)
        if ((*p)->value && (*p)->capacity >= bytes)
            best = p;
    if (!best && r->spares)
        best = &r->spares;
    entry *e = best ? *best : NULL;
    if (e) {
        *best = e->next;
        r->nspares--;
        r->spare_bytes -= e->value ? e->capacity : 0;
    }
    pthread_mutex_unlock(&r->lock);
    return e ? e : fl_xcalloc(1, sizeof *e);
}

/* e holds a copy of key and of value's data (read from wire, when given,
 * in host order), growing its memory only when it is too small; -1 when
 * the value's memory cannot be had. */
static int fill(entry *e, const char *key, const fl_tensor *value, const fl_wire_tensor *wire)
{
    size_t bytes = fl_tensor_bytes(value), key_bytes = strlen(key) + 1;
    if (key_bytes > e->key_capacity) {
        e->key = fl_xrealloc(e->key, key_bytes);
        e->key_capacity = key_bytes;
    }
    memcpy(e->key, key, key_bytes);
    if (!e->value)
        e->value = fl_xcalloc(1, sizeof *e->value);
    if (bytes > e->capacity || !e->value->data) {
        free(e->value->data);
        e->capacity = 0;
        if (!(e->value->data = fl_try_malloc(bytes ? bytes : 1)))
            return -1;
        e->capacity = bytes;
    }
    *e->value = (fl_tensor){.dtype = value->dtype, .shape = value->shape, .data = e->value->data};
    if (wire)
        fl_wire_tensor_read(wire, e->value->data);
    else
        memcpy(e->value->data, value->data, bytes);
    return 0;
}

static fl_rendezvous_put_result put(fl_rendezvous *r, fl_rendezvous_sender *sender, uint64_t step, const char *key,
                                    const fl_tensor *value, const fl_wire_tensor *wire, fl_rendezvous_held *held)
{
    entry *e = take_spare(r, fl_tensor_bytes(value));
    bool filled = fill(e, key, value, wire) == 0;
    e->step = step;
    e->bytes = fl_tensor_bytes(value) + FL_RENDEZVOUS_VALUE_OVERHEAD;
    e->arrived_s = fl_now_s();
    e->sender = sender;
    pthread_mutex_lock(&r->lock);
    drop_stale(r);
    fl_rendezvous_put_result result = filled ? room_for(r, e, held) : FL_RENDEZVOUS_ALL_FULL;
    if (result != FL_RENDEZVOUS_KEPT || find_over(r, step) || r->all_aborted) { /* after its step: nobody waits */
        retire(r, e);
        pthread_mutex_unlock(&r->lock);
        return result;
    }
    e->next = r->entries;
    r->entries = e;
    r->bytes += e->bytes;
    if (sender)
        sender->bytes += e->bytes;
    r->arrivals++;
    pthread_cond_broadcast(&r->arrived);
    pthread_mutex_unlock(&r->lock);
    return FL_RENDEZVOUS_KEPT;
}

fl_rendezvous_put_result fl_rendezvous_put(fl_rendezvous *r, fl_rendezvous_sender *sender, uint64_t step,
                                           const char *key, const fl_tensor *value, fl_rendezvous_held *held)
{
    return put(r, sender, step, key, value, NULL, held);
}

fl_rendezvous_put_result fl_rendezvous_put_wire(fl_rendezvous *r, fl_rendezvous_sender *sender, uint64_t step,
                                                const char *key, const fl_wire_tensor *value, fl_rendezvous_held *held)
{
    fl_tensor shape_of = {.dtype = value->dtype, .shape = value->shape};
    return put(r, sender, step, key, &shape_of, value, held);
}

fl_rendezvous_sender *fl_rendezvous_sender_new(void)
{
    return fl_xcalloc(1, sizeof(fl_rendezvous_sender));
}

static bool is_running(uint64_t step, const uint64_t *running, int nrunning)
{
    for (int i = 0; i < nrunning; i++)
        if (running[i] == step)
            return true;
    return false;
}

void fl_rendezvous_sender_gone(fl_rendezvous *r, fl_rendezvous_sender *sender, const uint64_t *running,
                               int nrunning)
{
    if (!sender)
        return;
    pthread_mutex_lock(&r->lock);
    for (entry **p = &r->entries; *p;) {
        entry *e = *p;
        if (e->sender != sender) {
            p = &e->next;
            continue;
        }
        uncharge(r, e);
        if (is_running(e->step, running, nrunning)) { /* its run may take it yet: kept, charged to nobody */
            e->sender = NULL;
            r->bytes += e->bytes;
            p = &e->next;
            continue;
        }
        *p = e->next;
        retire(r, e);
    }
    pthread_mutex_unlock(&r->lock);
    free(sender);
}

/* Unlinks and returns the entry for (step, key), or NULL. Lock held. */
static entry *unlink_entry(fl_rendezvous *r, uint64_t step, const char *key)
{
    for (entry **p = &r->entries; *p; p = &(*p)->next) {
        entry *e = *p;
        if (e->step == step && (!key || strcmp(e->key, key) == 0)) {
            *p = e->next;
            uncharge(r, e);
            return e;
        }
    }
    return NULL;
}

/* Waits until the entry is there or the step is over. Lock held. */
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
        struct timespec ts = fl_wall_after(until - now);
        pthread_cond_timedwait(&r->arrived, &r->lock, &ts);
    }
    return e;
}

/* Why a wait for (step, key) ends without its value, when its step is
 * over: the error is set and true returned. */
static bool say_step_over(uint64_t step, const char *key, const char *from, bool aborted, bool over)
{
    if (aborted)
        fl_set_error_code(FL_ABORTED, "step %llu was aborted while waiting for %s from %s",
                          (unsigned long long)step, key, from);
    else if (over)
        fl_set_error_code(FL_INVALID_ARGUMENT, "step %llu has already ended on this task (waiting for %s from %s): "
                          "each run needs a step id of its own", (unsigned long long)step, key, from);
    return aborted || over;
}

/* The value for (step, key), the caller's now, waited for when o is
 * given; its entry is kept as a spare. NULL without it: *ended says
 * whether the step is over (the error then set). */
static fl_tensor *take_value(fl_rendezvous *r, uint64_t step, const char *key, const char *from,
                             const fl_rendezvous_wait_options *o, bool *ended)
{
    pthread_mutex_lock(&r->lock);
    entry *e = o ? wait_for(r, step, key, o) : unlink_entry(r, step, key);
    const step_over *over = e ? NULL : find_over(r, step);
    bool aborted = !e && (r->all_aborted || (over && over->aborted));
    fl_tensor *value = e ? e->value : NULL;
    if (e) {
        e->value = NULL;
        e->capacity = 0;
        retire(r, e);
    }
    pthread_mutex_unlock(&r->lock);
    *ended = !e && say_step_over(step, key, from, aborted, over != NULL);
    return value;
}

int fl_rendezvous_take(fl_rendezvous *r, uint64_t step, const char *key, const fl_rendezvous_wait_options *o,
                       fl_tensor **out)
{
    bool ended;
    double start = fl_now_s();
    *out = take_value(r, step, key, o->from, o, &ended);
    if (*out)
        return 0;
    if (!ended)
        fl_set_error_code(FL_DEADLINE_EXCEEDED,
                          "gave up after %.0f s waiting for %s from %s in step %llu (is that task alive? "
                          "FLOWLAB_TASK_DEADLINE sets the wait)",
                          fl_now_s() - start, key, o->from, (unsigned long long)step);
    return -1;
}

int fl_rendezvous_poll(fl_rendezvous *r, uint64_t step, const char *key, const char *from, fl_tensor **out)
{
    bool ended;
    *out = take_value(r, step, key, from, NULL, &ended);
    return *out ? 1 : ended ? -1 : 0;
}

void fl_rendezvous_recycle(fl_rendezvous *r, fl_tensor *value, size_t capacity)
{
    if (!value)
        return;
    pthread_mutex_lock(&r->lock);
    entry *e = r->spares;
    while (e && e->value)
        e = e->next;
    if (e && !spare_room(r, capacity))
        e = NULL;
    if (e) {
        e->value = value;
        e->capacity = value->data ? capacity : 0;
        r->spare_bytes += e->capacity;
    }
    pthread_mutex_unlock(&r->lock);
    if (!e) /* no spare wants it: more values came back than entries are kept */
        fl_tensor_free(value);
}

uint64_t fl_rendezvous_arrivals(fl_rendezvous *r)
{
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->arrivals;
    pthread_mutex_unlock(&r->lock);
    return n;
}

void fl_rendezvous_wait_arrival(fl_rendezvous *r, uint64_t seen, double timeout_s)
{
    struct timespec until = fl_wall_after(timeout_s);
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    while (r->arrivals == seen && rc == 0)
        rc = pthread_cond_timedwait(&r->arrived, &r->lock, &until);
    pthread_mutex_unlock(&r->lock);
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
        retire(r, e);
    r->arrivals++;
    pthread_cond_broadcast(&r->arrived);
    pthread_mutex_unlock(&r->lock);
}

void fl_rendezvous_abort(fl_rendezvous *r, uint64_t step) { end_step(r, step, true); }

bool fl_rendezvous_step_aborted(fl_rendezvous *r, uint64_t step)
{
    pthread_mutex_lock(&r->lock);
    const step_over *over = find_over(r, step);
    bool aborted = r->all_aborted || (over && over->aborted);
    pthread_mutex_unlock(&r->lock);
    return aborted;
}

void fl_rendezvous_finish(fl_rendezvous *r, uint64_t step) { end_step(r, step, false); }

void fl_rendezvous_abort_all(fl_rendezvous *r)
{
    pthread_mutex_lock(&r->lock);
    r->all_aborted = true;
    r->arrivals++;
    pthread_cond_broadcast(&r->arrived);
    pthread_mutex_unlock(&r->lock);
}

void fl_rendezvous_nudge(fl_rendezvous *r)
{
    pthread_mutex_lock(&r->lock);
    r->arrivals++;
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

size_t fl_rendezvous_bytes(fl_rendezvous *r)
{
    pthread_mutex_lock(&r->lock);
    size_t bytes = r->bytes;
    pthread_mutex_unlock(&r->lock);
    return bytes;
}
