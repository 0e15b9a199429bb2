/* session_memory.c: the bytes a run's values hold on each device, and, with
 * fl_session_options.reuse_memory, a pool per device that takes a value's
 * buffer back once its last reader is issued, as TensorFlow's allocator
 * frees a tensor when its last reference goes. Its peak is what a schedule
 * costs (chapter 7: GPipe holds every micro-batch's activations, 1F1B a few). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "session_internal.h"

/* A buffer of the pool: free, or lent to a slot for this run. */
typedef struct {
    void *buffer;
    size_t capacity;
    bool lent;
} pool_buffer;

typedef struct fl_device_pool {
    fl_device *device;
    size_t in_use, peak, reserved; /* bytes: held now, the run's most, made by the pool */
    pool_buffer *buffers;
    int n, cap;
} fl_device_pool;

static fl_device_pool *pool_of(fl_session *s, fl_device *d)
{
    fl_memory_state *m = &s->memory;
    for (int i = 0; i < m->npools; i++)
        if (m->pools[i].device == d)
            return &m->pools[i];
    m->pools = fl_xrealloc(m->pools, (size_t)(m->npools + 1) * sizeof *m->pools);
    m->pools[m->npools] = (fl_device_pool){.device = d};
    return &m->pools[m->npools++];
}

static void count_held(fl_device_pool *p, size_t bytes)
{
    p->in_use += bytes;
    if (p->in_use > p->peak)
        p->peak = p->in_use;
}

void fl_session_memory_start_run(fl_session *s)
{
    fl_memory_state *m = &s->memory;
    if (m->size < s->nslots) {
        m->owner = fl_xrealloc(m->owner, (size_t)s->nslots * sizeof *m->owner);
        m->unread = fl_xrealloc(m->unread, (size_t)s->nslots * sizeof *m->unread);
        m->lent = fl_xrealloc(m->lent, (size_t)s->nslots * sizeof *m->lent);
        m->size = s->nslots;
    }
    for (int id = 0; id < s->nslots; id++) {
        m->owner[id] = id;
        m->unread[id] = fl_session_readers(s, id);
        m->lent[id] = -1;
    }
    for (int i = 0; i < m->npools; i++)
        m->pools[i].in_use = m->pools[i].peak = 0;
}

void fl_session_memory_count_copy(fl_session *s, fl_device *d, size_t bytes)
{
    count_held(pool_of(s, d), bytes);
}

/* The smallest free buffer that holds bytes without wasting half of itself. */
static int best_fit(const fl_device_pool *p, size_t bytes)
{
    int best = -1;
    for (int i = 0; i < p->n; i++) {
        const pool_buffer *b = &p->buffers[i];
        if (!b->lent && b->capacity >= bytes && b->capacity / 2 <= bytes &&
            (best < 0 || b->capacity < p->buffers[best].capacity))
            best = i;
    }
    return best;
}

/* A pool buffer of at least bytes lent to slot id; -1 with the error set. */
static int lend(fl_session *s, fl_device_pool *p, int id, size_t bytes)
{
    int i = best_fit(p, bytes);
    if (i < 0) {
        if (fl_check_tensor_bytes(bytes) != 0)
            return -1;
        void *buffer = fl_device_alloc(p->device, bytes);
        if (!buffer)
            return fl_set_error_code(FL_RESOURCE_EXHAUSTED, "%s has no room for %zu bytes", p->device->name, bytes),
                   -1;
        if (p->n == p->cap) {
            p->cap = p->cap ? 2 * p->cap : 16;
            p->buffers = fl_xrealloc(p->buffers, (size_t)p->cap * sizeof *p->buffers);
        }
        p->buffers[i = p->n++] = (pool_buffer){buffer, bytes, false};
        p->reserved += bytes;
    }
    p->buffers[i].lent = true;
    s->memory.lent[id] = i;
    fl_slot *slot = &s->slots[id];
    slot->buffer = p->buffers[i].buffer;
    slot->capacity = p->buffers[i].capacity;
    count_held(p, slot->capacity);
    return 0;
}

static void take_back(fl_session *s, int id)
{
    fl_slot *slot = &s->slots[id];
    fl_device_pool *p = pool_of(s, slot->device);
    p->buffers[s->memory.lent[id]].lent = false;
    p->in_use -= slot->capacity;
    s->memory.lent[id] = -1;
    slot->buffer = NULL;
    slot->capacity = 0;
}

/* Only a device that runs its queue in order may reuse a buffer once its
 * last reader is issued: that reader runs before whatever is issued next. */
static bool pooled(const fl_session *s, const fl_slot *slot)
{
    return s->options.reuse_memory && !fl_device_waits_on_any(slot->device);
}

int fl_session_memory_take(fl_session *s, const fl_node *n, fl_slot *slot, fl_dtype dtype, fl_shape shape)
{
    if (!pooled(s, slot)) {
        if (fl_session_ensure_node_buffer(s, n, slot, dtype, shape) != 0)
            return -1;
        count_held(pool_of(s, slot->device), slot->capacity);
        return 0;
    }
    char text[64];
    size_t bytes = fl_tensor_bytes(&(fl_tensor){.dtype = dtype, .shape = shape});
    fl_session_release_buffer(slot); /* one of its own, from a run without the pool */
    if (lend(s, pool_of(s, slot->device), n->id, bytes) == 0)
        return 0;
    return fl_session_fail(s, "%s: its output, %s %s, %s", n->name, fl_dtype_name(dtype),
                           fl_shape_format(shape, text, sizeof text), fl_last_error());
}

void fl_session_memory_share(fl_session *s, const fl_node *n, const fl_node *in0)
{
    fl_memory_state *m = &s->memory;
    int owner = m->owner[in0->id];
    m->owner[n->id] = owner;
    m->unread[owner] += fl_session_readers(s, n->id);
}

/* A value nobody reads any more goes back, unless the caller or another
 * device still wants it (a fetch, a crossing value's copy, made later). */
static void maybe_take_back(fl_session *s, int id)
{
    const fl_slot *slot = &s->slots[id];
    if (s->memory.lent[id] < 0 || s->memory.unread[id] > 0 || slot->fetched || slot->crosses)
        return;
    take_back(s, id);
}

void fl_session_memory_issued(fl_session *s, const fl_node *n)
{
    fl_memory_state *m = &s->memory;
    for (int i = 0; i < n->ninputs; i++) {
        int owner = m->owner[n->inputs[i]->id];
        m->unread[owner]--;
        maybe_take_back(s, owner);
    }
    maybe_take_back(s, n->id); /* read by nothing in this run */
}

void fl_session_memory_end_run(fl_session *s)
{
    for (int id = 0; id < s->memory.size && id < s->nslots; id++)
        if (s->memory.lent[id] >= 0)
            take_back(s, id);
}

void fl_session_free_memory(fl_session *s)
{
    fl_memory_state *m = &s->memory;
    for (int i = 0; i < m->npools; i++) {
        fl_device_pool *p = &m->pools[i];
        for (int b = 0; b < p->n; b++)
            p->device->backend->release(p->device->impl, p->buffers[b].buffer);
        free(p->buffers);
    }
    free(m->pools);
    free(m->task_peaks);
    free(m->owner);
    free(m->unread);
    free(m->lent);
    *m = (fl_memory_state){0};
}

void fl_session_note_task_memory(fl_session *s, const char *device, size_t peak_bytes)
{
    if (!s || !device)
        return;
    fl_memory_state *m = &s->memory;
    int k = 0;
    while (k < m->ntask_peaks && strcmp(m->task_peaks[k].device, device) != 0)
        k++;
    if (k == m->ntask_peaks) {
        m->task_peaks = fl_xrealloc(m->task_peaks, (size_t)(k + 1) * sizeof *m->task_peaks);
        m->ntask_peaks++;
    }
    m->task_peaks[k] = (fl_device_memory){.peak_bytes = peak_bytes};
    snprintf(m->task_peaks[k].device, sizeof m->task_peaks[k].device, "%s", device);
}

/* By device name: the same line from run to run, whichever device
 * happened to take memory first. */
static int by_device_name(const void *a, const void *b)
{
    return strcmp(((const fl_device_memory *)a)->device, ((const fl_device_memory *)b)->device);
}

int fl_session_memory(const fl_session *s, fl_device_memory *out, int max)
{
    if (!s || (max > 0 && !out))
        return -1;
    const fl_memory_state *m = &s->memory;
    int n = m->npools + m->ntask_peaks;
    fl_device_memory *all = fl_xcalloc((size_t)(n ? n : 1), sizeof *all);
    for (int i = 0; i < m->npools; i++) {
        const fl_device_pool *p = &m->pools[i];
        all[i] = (fl_device_memory){.peak_bytes = p->peak, .reserved_bytes = p->reserved};
        snprintf(all[i].device, sizeof all[i].device, "%s", p->device->name);
    }
    if (m->ntask_peaks > 0)
        memcpy(all + m->npools, m->task_peaks, (size_t)m->ntask_peaks * sizeof *all);
    qsort(all, (size_t)n, sizeof *all, by_device_name);
    if (max > 0)
        memcpy(out, all, (size_t)(n < max ? n : max) * sizeof *all);
    free(all);
    return n;
}
