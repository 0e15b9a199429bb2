/* session_fetch.c: how a run hands its fetched values back. Plainly, every
 * value is copied to the host once all is issued, and the run waits for
 * the devices. With fl_run_options' fetch_ready, each value is handed over
 * as soon as its device has finished it, while later ops still run: what a
 * lab needs to reduce gradients during the backward pass (chapter 6). With
 * fetch_to, a value goes into the caller's memory or stays on its device,
 * and a device feed is checked here against where its placeholder runs. */
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"
#include "variable_container.h"

void fl_session_start_fetches(fl_session *s, const fl_run_options *options, fl_node *const *fetches, int n,
                              fl_tensor **outputs, bool *delivered)
{
    memset(delivered, 0, (size_t)n * sizeof *delivered);
    s->fetch = (fl_run_fetches){true, fetches, n, outputs, options, delivered};
    for (int i = 0; i < n; i++)
        s->slots[fetches[i]->id].fetched = true;
}

bool fl_session_wants_early_fetch(const fl_session *s, const fl_slot *slot)
{
    return slot->fetched && s->fetch.running && s->fetch.options && s->fetch.options->fetch_ready;
}

/* A run ends when every device it used is idle: host staging buffers and
 * fed values may be reused by the next run. quiet: after a failure, whose
 * message stands. */
static int wait_for_devices(fl_session *s, bool quiet)
{
    const fl_device *waited[32];
    int nwaited = 0;
    for (int id = 0; id < s->nslots; id++) {
        fl_device *d = s->slots[id].device;
        if (!fl_session_needs(s, id) || !d || d->is_host)
            continue;
        bool seen = false;
        for (int i = 0; i < nwaited && !seen; i++)
            seen = waited[i] == d;
        if (seen || nwaited == 32)
            continue;
        waited[nwaited++] = d;
        if (d->backend->wait(d->impl) != 0 && !quiet) /* the backend's message names the op where it knows it */
            return fl_session_fail(s, "%s (on %s)", fl_last_error(), d->name);
    }
    return 0;
}

void fl_session_end_fetches(fl_session *s, bool failed)
{
    fl_run_fetches *r = &s->fetch;
    if (failed)
        wait_for_devices(s, true);
    for (int i = 0; i < r->n; i++) {
        s->slots[r->fetches[i]->id].fetched = false;
        if (failed) {
            if (!s->kept.on)
                fl_tensor_free(r->outputs[i]);
            r->outputs[i] = NULL;
        }
    }
    *r = (fl_run_fetches){.running = false};
}

/* ---- where each fetch goes (fetch_to) ---- */

/* fetch_to's entry for fetch i when it asks for more than a new host
 * tensor, else NULL. */
static const fl_fetch_target *target_of(const fl_run_fetches *r, int i)
{
    const fl_fetch_target *t = r->options && r->options->fetch_to ? &r->options->fetch_to[i] : NULL;
    return t && (t->device || t->buffer) ? t : NULL;
}

/* Whether a device name a caller gave ("/device:GPU:0") is d. */
static bool names_device(const char *wanted, const fl_device *d)
{
    fl_device_name parsed;
    char canonical[64];
    return fl_parse_device(wanted, &parsed, canonical, sizeof canonical) == 0 && strcmp(canonical, d->name) == 0;
}

/* d keeps values for the caller only where it can copy within itself. */
static int refuse_unless_kept(fl_session *s, const fl_device *d, const char *what, const char *name)
{
    if (fl_device_can_copy_within(d))
        return 0;
    return fl_session_fail_code(s, FL_UNIMPLEMENTED, "%s %s: %s (%s) cannot keep values for the caller, since it "
                                "cannot copy within itself; use host memory", what, name, d->name, d->backend->name);
}

/* A device feed lies on its placeholder's device, which can copy within itself. */
static int check_device_feeds(fl_session *s)
{
    for (int id = 0; id < s->nslots; id++) {
        const fl_tensor *fed = fl_session_fed(s, id);
        const fl_device *d = s->slots[id].device;
        const char *name = fl_graph_node(s->graph, id)->name;
        if (!fl_session_needs(s, id) || !fed || !fed->device || !d)
            continue;
        if (!names_device(fed->device, d))
            return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "feed %s: its value lies on %s, but the "
                                        "placeholder runs on %s; a device feed is copied within one device: "
                                        "give it a value on %s, or in host memory", name, fed->device, d->name,
                                        d->name);
        if (refuse_unless_kept(s, d, "feed", name) != 0)
            return -1;
    }
    return 0;
}

/* A value stays only on its own device: a copy within a device needs both ends there. */
int fl_session_check_device_io(fl_session *s)
{
    if (check_device_feeds(s) != 0)
        return -1;
    const fl_run_fetches *r = &s->fetch;
    for (int i = 0; i < r->n; i++) {
        const fl_fetch_target *t = target_of(r, i);
        const fl_device *d = s->slots[r->fetches[i]->id].device;
        if (!t || !t->device)
            continue;
        if (!names_device(t->device, d))
            return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "fetch %d (%s): fetch_to asks for it on %s, "
                                        "but it runs on %s; a value can stay only on its own device: ask "
                                        "for %s, or for host memory", i, r->fetches[i]->name, t->device,
                                        d->name, d->name);
        if (refuse_unless_kept(s, d, "fetch", r->fetches[i]->name) != 0)
            return -1;
    }
    return 0;
}

/* Into host memory: enqueued, or (now) finished on return. */
static int copy_out(fl_device *d, void *host, const void *src, size_t bytes, bool now)
{
    return now ? fl_device_copy_out_now(d, host, src, bytes) : d->backend->copy_out(d->impl, host, src, bytes);
}

/* Whether fetch i's value fits the caller's buffer fetch_to gives it (true
 * without one); the run fails when not. Known once the value is computed. */
static bool fits(fl_session *s, int i)
{
    const fl_run_fetches *r = &s->fetch;
    const fl_fetch_target *t = target_of(r, i);
    const fl_slot *slot = &s->slots[r->fetches[i]->id];
    size_t bytes = fl_tensor_bytes(&slot->value);
    char shape[64];
    if (!t || !t->buffer || bytes <= t->capacity)
        return true;
    fl_session_fail_code(s, FL_INVALID_ARGUMENT, "fetch %d (%s): its value, %s %s, is %zu bytes, but "
                         "fetch_to's buffer holds %zu; give a buffer of at least %zu bytes", i,
                         r->fetches[i]->name, fl_dtype_name(slot->value.dtype),
                         fl_shape_format(slot->value.shape, shape, sizeof shape), bytes, t->capacity, bytes);
    return false;
}

int fl_session_output_to_fetch_target(fl_session *s, const fl_node *n, fl_slot *slot, fl_shape shape)
{
    const fl_run_fetches *r = &s->fetch;
    if (!slot->fetched || !r->running || slot->device->is_host || fl_session_readers(s, n->id) != 0)
        return -1;
    int i = 0;
    while (i < r->n && r->fetches[i] != n)
        i++;
    const fl_fetch_target *t = i < r->n ? target_of(r, i) : NULL;
    size_t bytes = fl_tensor_bytes(&(fl_tensor){.dtype = n->dtype, .shape = shape});
    if (!t || t->device || t->capacity < bytes)
        return -1;
    return fl_session_use_caller_bytes(slot, t->buffer, n->dtype, shape);
}

/* outputs[i] for a fetch_to entry: borrowed, on the caller's buffer or,
 * with none, on the value's own; the copy into the buffer is started. */
static int deliver_to(fl_session *s, int i, const fl_fetch_target *t, bool now)
{
    fl_run_fetches *r = &s->fetch;
    const fl_slot *slot = &s->slots[r->fetches[i]->id];
    size_t bytes = fl_tensor_bytes(&slot->value);
    if (!fits(s, i))
        return -1;
    fl_tensor *out = r->outputs[i] = fl_xcalloc(1, sizeof *out);
    *out = (fl_tensor){slot->value.dtype, slot->value.shape, t->buffer ? t->buffer : slot->value.data,
                       t->device ? slot->device->name : NULL, true};
    if (!t->buffer || fl_device_host_memory(slot->device, slot->value.data) == t->buffer)
        return 0; /* it stays where it is, or the op wrote it there itself */
    if (t->device)
        return fl_device_copy_within(slot->device, t->buffer, slot->value.data, bytes, now);
    return copy_out(slot->device, t->buffer, slot->value.data, bytes, now);
}

void fl_session_keep_fetched_values(fl_session *s) { s->kept.on = true; }

void fl_session_free_kept_fetches(fl_session *s)
{
    for (int i = 0; i < s->kept.n; i++)
        fl_tensor_free(s->kept.values[i]);
    free(s->kept.values);
    free(s->kept.capacity);
}

/* Fetch i's host tensor: a new one, or the one kept from the last run when
 * its memory holds the value. NULL with the error set. */
static fl_tensor *host_output(fl_session *s, int i, const fl_tensor *value)
{
    fl_kept_fetches *k = &s->kept;
    if (!k->on)
        return fl_tensor_new(value->dtype, value->shape);
    if (i >= k->n) {
        k->values = fl_xrealloc(k->values, (size_t)(i + 1) * sizeof *k->values);
        k->capacity = fl_xrealloc(k->capacity, (size_t)(i + 1) * sizeof *k->capacity);
        for (; k->n <= i; k->n++)
            k->values[k->n] = NULL, k->capacity[k->n] = 0;
    }
    size_t bytes = fl_tensor_bytes(value);
    if (k->values[i] && k->capacity[i] >= bytes) {
        k->values[i]->dtype = value->dtype;
        k->values[i]->shape = value->shape;
        return k->values[i];
    }
    fl_tensor_free(k->values[i]);
    k->values[i] = fl_tensor_new(value->dtype, value->shape);
    k->capacity[i] = k->values[i] ? bytes : 0;
    return k->values[i];
}

/* Gives fetch i its output, outputs[i]: a new host tensor, or where
 * fetch_to says. The copy is enqueued, or (now) finished on return. */
static int deliver(fl_session *s, int i, bool now)
{
    fl_run_fetches *r = &s->fetch;
    const fl_node *n = r->fetches[i];
    const fl_slot *slot = &s->slots[n->id];
    const fl_fetch_target *t = target_of(r, i);
    int rc;
    if (t) {
        rc = deliver_to(s, i, t, now);
    } else {
        r->outputs[i] = host_output(s, i, &slot->value);
        if (!r->outputs[i])
            return fl_session_fail(s, "%s: fetching its value: %s", n->name, fl_last_error());
        /* a value of the task's container: other partitions may be updating it */
        if (slot->shared)
            fl_variable_container_lock(s->container);
        rc = copy_out(slot->device, r->outputs[i]->data, slot->value.data, fl_tensor_bytes(r->outputs[i]), now);
        if (slot->shared)
            fl_variable_container_unlock(s->container);
    }
    if (rc != 0 && !fl_session_error(s)[0]) /* deliver_to's own refusal is said already */
        return fl_session_fail(s, "%s: copying the fetched value from %s: %s", n->name, slot->device->name,
                               fl_last_error());
    return rc;
}

/* ---- when each fetch goes ---- */

/* Gives fetch i its finished value and hands it to fetch_ready. Blocks
 * only for the copy itself. */
static int hand_over(fl_session *s, int i)
{
    fl_run_fetches *r = &s->fetch;
    if (deliver(s, i, true) != 0)
        return -1;
    r->delivered[i] = true;
    r->options->fetch_ready(i, r->outputs[i], r->options->user);
    return 0;
}

/* 1 when slot's value is finished on its device, 0 when not yet, -1 on
 * error. block: wait for it. */
static int finished(fl_session *s, fl_slot *slot, const fl_node *n, bool block)
{
    if (slot->device->is_host || slot->mark_reached)
        return 1;
    if (!slot->mark)
        return 0; /* a device without marks: known finished when idle */
    fl_device *d = slot->device;
    int reached = fl_device_reached(d, slot->mark, block);
    if (reached < 0)
        return fl_session_fail(s, "%s: waiting for it on %s: %s", n->name, d->name, fl_last_error());
    slot->mark_reached = reached == 1;
    return reached;
}

/* The fetch not handed over yet whose value has the oldest mark (on an
 * in-order queue, the first to finish); -1 when none has a mark. */
static int oldest_marked(const fl_session *s)
{
    const fl_run_fetches *r = &s->fetch;
    int oldest = -1;
    for (int i = 0; i < r->n; i++) {
        const fl_slot *slot = &s->slots[r->fetches[i]->id];
        if (r->delivered[i] || !slot->mark)
            continue;
        if (oldest < 0 || slot->mark_seq < s->slots[r->fetches[oldest]->id].mark_seq)
            oldest = i;
    }
    return oldest;
}

/* Marked values in the order of their marks, while the oldest has passed
 * (on an in-order queue the younger ones cannot have); host values, which
 * are finished once issued, as they come. */
int fl_session_fetch_finished(fl_session *s)
{
    fl_run_fetches *r = &s->fetch;
    if (!r->running || !r->options || !r->options->fetch_ready)
        return 0;
    for (int i; (i = oldest_marked(s)) >= 0;) {
        int done = finished(s, &s->slots[r->fetches[i]->id], r->fetches[i], false);
        if (done < 0 || (done == 1 && hand_over(s, i) != 0))
            return -1;
        if (done == 0)
            break;
    }
    for (int i = 0; i < r->n; i++) {
        const fl_slot *slot = &s->slots[r->fetches[i]->id];
        if (!r->delivered[i] && slot->issued && slot->device->is_host && hand_over(s, i) != 0)
            return -1;
    }
    return 0;
}

/* Without fetch_ready: queue every copy, then wait once. */
static int copy_all_at_end(fl_session *s)
{
    int rc = 0;
    for (int i = 0; i < s->fetch.n && rc == 0; i++)
        rc = fits(s, i) ? 0 : -1;
    for (int i = 0; i < s->fetch.n && rc == 0; i++)
        rc = deliver(s, i, false);
    return rc ? rc : wait_for_devices(s, false);
}

int fl_session_fetch_the_rest(fl_session *s)
{
    fl_run_fetches *r = &s->fetch;
    if (!r->options || !r->options->fetch_ready)
        return copy_all_at_end(s);
    for (int i; (i = oldest_marked(s)) >= 0;) {
        fl_slot *slot = &s->slots[r->fetches[i]->id];
        int done = finished(s, slot, r->fetches[i], true);
        if (done == 0)
            return fl_session_fail_code(s, FL_INTERNAL, "%s: %s waited, but its value is not finished",
                                   r->fetches[i]->name, slot->device->name);
        if (done < 0 || hand_over(s, i) != 0)
            return -1;
    }
    if (wait_for_devices(s, false) != 0)
        return -1;
    for (int i = 0; i < r->n; i++) /* values of devices without marks, and host values */
        if (!r->delivered[i] && hand_over(s, i) != 0)
            return -1;
    return 0;
}
