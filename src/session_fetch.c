/* session_fetch.c: how a run hands its fetched values back. Plainly, every
 * value is copied to the host once all is issued, and the run waits for
 * the devices. With fl_run_options' fetch_ready, each value is handed over
 * as soon as its device has finished it, while later ops still run: what a
 * lab needs to reduce gradients during the backward pass (chapter 6). */
#include <stdlib.h>

#include "session_internal.h"

bool fl_session_wants_early_fetch(const fl_session *s, const fl_slot *slot)
{
    return slot->fetched && s->run && s->run->options && s->run->options->fetch_ready;
}

/* A run ends when every device it used is idle: host staging buffers and
 * fed values may be reused by the next run. */
static int wait_for_devices(fl_session *s)
{
    const fl_device *waited[32];
    int nwaited = 0;
    for (int id = 0; id < s->nslots; id++) {
        fl_device *d = s->slots[id].device;
        if (!s->needed[id] || !d || d->is_host)
            continue;
        bool seen = false;
        for (int i = 0; i < nwaited && !seen; i++)
            seen = waited[i] == d;
        if (seen || nwaited == 32)
            continue;
        waited[nwaited++] = d;
        if (d->backend->wait(d->impl) != 0) /* the backend's message names the op where it knows it */
            return fl_session_fail(s, "%s (on %s)", fl_last_error(), d->name);
    }
    return 0;
}

/* Copies fetch i's finished value into a new host tensor, outputs[i], and
 * hands it to fetch_ready. Blocks only for the copy itself. */
static int hand_over(fl_session *s, int i)
{
    fl_run_fetches *r = s->run;
    const fl_node *n = r->fetches[i];
    const fl_slot *slot = &s->slots[n->id];
    r->outputs[i] = fl_tensor_new(slot->value.dtype, slot->value.shape);
    if (fl_device_copy_out_now(slot->device, r->outputs[i]->data, slot->value.data,
                                     fl_tensor_bytes(r->outputs[i])) != 0)
        return fl_session_fail(s, "%s: copying the fetched value from %s: %s", n->name,
                               slot->device->name, fl_last_error());
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
    const fl_run_fetches *r = s->run;
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
    fl_run_fetches *r = s->run;
    if (!r || !r->options || !r->options->fetch_ready)
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
    fl_run_fetches *r = s->run;
    for (int i = 0; i < r->n; i++) {
        const fl_slot *slot = &s->slots[r->fetches[i]->id];
        r->outputs[i] = fl_tensor_new(slot->value.dtype, slot->value.shape);
        slot->device->backend->copy_out(slot->device->impl, r->outputs[i]->data, slot->value.data,
                                        fl_tensor_bytes(r->outputs[i]));
    }
    return wait_for_devices(s);
}

int fl_session_fetch_the_rest(fl_session *s)
{
    fl_run_fetches *r = s->run;
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
    if (wait_for_devices(s) != 0)
        return -1;
    for (int i = 0; i < r->n; i++) /* values of devices without marks, and host values */
        if (!r->delivered[i] && hand_over(s, i) != 0)
            return -1;
    return 0;
}
