/* session_copies.c: how a value crosses from one device to another during
 * a run. The executor (session.c) decides when; this file makes the copy
 * (through host memory when neither side is the host), waits only for the
 * mark behind the value, shares one copy per value and device among its
 * readers, and keeps host ops from overwriting memory a device has yet to
 * copy in. */
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

/* A copy's buffer on d goes: back to d's pool, or, over a value's own
 * host bytes, unwrapped (the bytes stay their owner's). */
static void drop_buffer(fl_device *d, fl_edge_copy *c)
{
    if (c->buffer && c->wrapped)
        fl_device_unwrap(d, c->buffer);
    else if (c->buffer)
        d->backend->release(d->impl, c->buffer);
    c->buffer = NULL;
    c->wrapped = NULL;
    c->capacity = 0;
}

/* Frees a slot's copies of its inputs: buffers on its device, host staging. */
void fl_session_release_copies(fl_slot *slot)
{
    for (int i = 0; i < slot->ncopies; i++) {
        fl_edge_copy *c = &slot->copies[i];
        drop_buffer(slot->device, c);
        free(c->host);
    }
    free(slot->copies);
    slot->copies = NULL;
    slot->ncopies = 0;
    drop_buffer(slot->device, &slot->caller);
}

/* One copy record per input of n, which a fused form of the node may have
 * more of than the node itself: grown at a run's first copy for n, before
 * any reader of this run keeps a pointer into it (remember_copy). */
static fl_edge_copy *copy_record(fl_slot *slot, const fl_node *n, int i)
{
    if (slot->ncopies < n->ninputs) {
        slot->copies = fl_xrealloc(slot->copies, (size_t)n->ninputs * sizeof *slot->copies);
        memset(slot->copies + slot->ncopies, 0, (size_t)(n->ninputs - slot->ncopies) * sizeof *slot->copies);
        slot->ncopies = n->ninputs;
    }
    return &slot->copies[i];
}

int64_t fl_session_next_mark_age(fl_session *s) { return ++s->reads.marks_made; }

/* Remembers that dst will read host memory at `host` some time after now,
 * so that a host op does not overwrite it first (fl_session_wait_for_pending_reads). */
static int note_pending_read(fl_session *s, fl_device *dst, const void *host)
{
    void *mark;
    if (fl_device_mark(dst, &mark) != 0)
        return -1;
    fl_pending_reads *r = &s->reads;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->list = fl_xrealloc(r->list, (size_t)r->cap * sizeof *r->list);
    }
    r->list[r->n++] = (fl_pending_read){host, dst, mark, fl_session_next_mark_age(s), false};
    return 0;
}

/* Moves a finished value from src's buffer to dst's, through host memory
 * when neither side lies there. */
static int transfer(fl_session *s, fl_edge_copy *c, fl_device *src, fl_device *dst, const void *from,
                    size_t bytes)
{
    const void *from_host = fl_device_host_memory(src, from);
    void *to_host = fl_device_host_memory(dst, c->buffer);
    if (to_host && !src->is_host) /* lands in host memory: a blocking copy out */
        return fl_device_copy_out_now(src, to_host, from, bytes);
    if (from_host) { /* read from host memory, later: remember it */
        int rc = dst->backend->copy_in(dst->impl, c->buffer, from_host, bytes);
        return rc ? rc : note_pending_read(s, dst, from_host);
    }
    if (bytes > c->host_capacity) { /* a tensor's size: failing is the run's RESOURCE_EXHAUSTED */
        void *host = fl_try_malloc(bytes);
        if (!host)
            return -1;
        free(c->host);
        c->host = host;
        c->host_capacity = bytes;
    }
    int rc = fl_device_copy_out_now(src, c->host, from, bytes);
    return rc ? rc : dst->backend->copy_in(dst->impl, c->buffer, c->host, bytes);
}

/* Blocks until device d is past mark, or until it is idle when it has no
 * marks (mark NULL). */
static int wait_for_mark(fl_device *d, void *mark)
{
    return fl_device_reached(d, mark, true) == 1 ? 0 : -1;
}

/* Blocks until the value in slot `from` is finished on its device. */
static int wait_for_value(fl_slot *from)
{
    if (from->device->is_host || from->mark_reached)
        return 0;
    if (wait_for_mark(from->device, from->mark) != 0)
        return -1;
    from->mark_reached = from->mark != NULL;
    return 0;
}

/* The copy of from's value that this run already made on dst, or NULL. */
static fl_tensor *copy_made_this_run(const fl_session *s, const fl_slot *from, const fl_device *dst)
{
    for (int k = 0; k < from->nsent; k++)
        if (from->sent[k].device == dst && from->sent[k].made_in_run == fl_session_run_count(s))
            return from->sent[k].value;
    return NULL;
}

static void remember_copy(const fl_session *s, fl_slot *from, const fl_device *dst, fl_tensor *value)
{
    int k = 0;
    while (k < from->nsent && from->sent[k].device != dst)
        k++;
    if (k == from->nsent)
        from->sent = fl_xrealloc(from->sent, (size_t)++from->nsent * sizeof *from->sent);
    from->sent[k] = (fl_sent_copy){dst, value, fl_session_run_count(s)};
}

/* Whether a host op may read x's value where it lies on a device whose
 * memory is the host's (a received value in the rendezvous's memory, a
 * value a PoCL CPU device finished), with no copy: x's buffer is its own
 * until x runs again next step, as forwarding never crosses devices. Not a
 * variable, nor another value's alias: a later update on its device must
 * not show through to the reader. */
static bool reads_in_place(const fl_node *x, const fl_slot *from)
{
    return x->op != FL_OP_VARIABLE && from->buffer && from->value.data == from->buffer;
}

/* Whether dst may read x's /cpu:0 value where it lies, through a buffer
 * over its bytes: the host's own value (not a feed, which is the caller's
 * memory, nor a variable other partitions update from their threads). Host
 * ops that write it in place wait for the device first (note_pending_read,
 * renewed by every reader: fl_session_note_reads_in_place). */
static bool may_wrap(const fl_session *s, const fl_node *x, const fl_slot *from, const fl_device *src,
                     const fl_device *dst)
{
    return src->is_host && !dst->is_host && !from->shared && !fl_session_fed(s, x->id);
}

/* c's buffer over the host bytes a value lies in: made once, and kept
 * while the value stays there. 0, or -1 (no error) where dst cannot. */
static int wrap_value(fl_device *dst, fl_edge_copy *c, void *host, size_t bytes)
{
    if (c->wrapped == host && c->capacity == bytes)
        return 0;
    void *buffer = fl_device_wrap_host_memory(dst, host, bytes);
    if (!buffer)
        return -1;
    drop_buffer(dst, c);
    c->buffer = buffer;
    c->wrapped = host;
    c->capacity = bytes;
    return 0;
}

/* Gives n's input i on n's device: the copy this run already made there
 * for another reader, or a new one, through host memory; on a device whose
 * memory is the host's, a /cpu:0 value read where it lies (no copy). */
int fl_session_copy_input(fl_session *s, fl_node *n, int i, fl_tensor **out)
{
    fl_slot *slot = &s->slots[n->id], *from = &s->slots[n->inputs[i]->id];
    fl_device *src = from->device, *dst = slot->device;
    if ((*out = copy_made_this_run(s, from, dst)))
        return 0;
    fl_edge_copy *c = copy_record(slot, n, i);
    /* The value is finished first: a Recv learns its shape when it arrives,
     * and a traced copy is only the copy. */
    if (wait_for_value(from) != 0)
        return fl_session_fail(s, "%s: waiting for input %s on %s: %s", n->name, n->inputs[i]->name, src->name,
                               fl_last_error());
    const void *from_host = fl_device_host_memory(src, from->value.data);
    if (dst->is_host && !src->is_host && from_host && reads_in_place(n->inputs[i], from)) {
        c->value = (fl_tensor){.dtype = from->value.dtype, .shape = from->value.shape, .data = (void *)from_host};
        *out = &c->value;
        remember_copy(s, from, dst, &c->value);
        return 0;
    }
    size_t bytes = fl_tensor_bytes(&from->value);
    if (may_wrap(s, n->inputs[i], from, src, dst) && wrap_value(dst, c, from->value.data, bytes) == 0) {
        c->value = (fl_tensor){.dtype = from->value.dtype, .shape = from->value.shape, .data = c->buffer};
        *out = &c->value;
        remember_copy(s, from, dst, &c->value);
        return 0;
    }
    if (bytes > c->capacity || c->wrapped) {
        drop_buffer(dst, c);
        c->buffer = fl_device_alloc(dst, bytes);
        c->capacity = bytes;
    }
    c->value = (fl_tensor){.dtype = from->value.dtype, .shape = from->value.shape, .data = c->buffer};
    *out = &c->value;
    double start = fl_now_us();
    int rc = transfer(s, c, src, dst, from->value.data, bytes);
    if (rc == 0 && fl_session_tracing(s))
        fl_session_trace_copy(s, n->id, n->inputs[i]->id, dst, start, fl_now_us());
    if (rc != 0)
        return fl_session_fail(s, "%s: copying input %s from %s to %s failed: %s", n->name,
                               n->inputs[i]->name, src->name, dst->name, fl_last_error());
    remember_copy(s, from, dst, &c->value);
    fl_session_memory_count_copy(s, dst, c->capacity);
    return 0;
}

/* Bytes that moved in more runs in a row than this (a dataset's prefetch
 * ring) are copied: a new buffer over them each run is an allocation a step.
 * The count stops one past the rule, so it cannot overflow. */
#define CALLER_MOVES_WRAPPED 2

int fl_session_use_caller_bytes(fl_slot *slot, void *host, fl_dtype dtype, fl_shape shape)
{
    int moves = slot->caller_moves;
    slot->caller_moves = host == slot->caller_last ? 0 : moves + (moves <= CALLER_MOVES_WRAPPED);
    slot->caller_last = host;
    if (slot->caller_moves > CALLER_MOVES_WRAPPED)
        return -1;
    fl_tensor value = {.dtype = dtype, .shape = shape, .data = host};
    if (wrap_value(slot->device, &slot->caller, host, fl_tensor_bytes(&value)) != 0)
        return -1;
    value.data = slot->caller.buffer;
    slot->value = value;
    return 0;
}

/* A fed host value read where the caller keeps it: no copy in (chapter 6's
 * averaged gradients, 13 MB a step). The caller's bytes stay untouched, as
 * a fed value is never an op's buffer to write over (session_forward.c),
 * and the caller may change or free them once the run is over: a run ends
 * with its devices idle. */
int fl_session_read_feed_in_place(fl_slot *slot, const fl_tensor *fed)
{
    return fed->device ? -1 : fl_session_use_caller_bytes(slot, fed->data, fed->dtype, fed->shape);
}

/* Only a write in place can overwrite what a device reads. */
static bool writes_in_place(const fl_node *n) { return fl_op_def_of(n->op)->sig.writes_inputs > 0; }

/* Where each of n's inputs lies in host memory (NULL: elsewhere): what a
 * pending read of it names. The values n writes lie on n's own device. */
static void input_host_addresses(const fl_session *s, const fl_node *n, const void **out)
{
    for (int i = 0; i < n->ninputs; i++) {
        const fl_slot *from = &s->slots[n->inputs[i]->id];
        out[i] = fl_device_host_memory(from->device, from->value.data);
    }
}

static bool reads_one_of(const fl_pending_read *p, const void *const *hosts, int n)
{
    for (int i = 0; i < n; i++)
        if (hosts[i] && p->host == hosts[i])
            return true;
    return false;
}

/* An op that writes variables in place (Assign, ApplyAdam and its slots;
 * a remote AssignAdd, whose reply is the new value) in host memory waits
 * until no device is still to copy them in. The executor issues it only
 * when nothing else can go (fl_session_unfinished_reads), so this wait
 * blocks no work that was ready. */
int fl_session_wait_for_pending_reads(fl_session *s, const fl_node *n)
{
    if (!writes_in_place(n) || s->reads.n == 0)
        return 0;
    const void *hosts[n->ninputs ? n->ninputs : 1];
    input_host_addresses(s, n, hosts);
    for (int r = 0; r < s->reads.n; r++) {
        fl_pending_read *p = &s->reads.list[r];
        if (p->reached || !reads_one_of(p, hosts, n->ninputs))
            continue;
        if (wait_for_mark(p->device, p->mark) != 0)
            return fl_session_fail(s, "%s: waiting for %s to copy %s in: %s", n->name,
                                   p->device->name, n->inputs[0]->name, fl_last_error());
        p->reached = true;
    }
    return 0;
}

/* The list is in the order of its marks, so the first unfinished read
 * from its end is the newest. */
int64_t fl_session_unfinished_reads(fl_session *s, const fl_node *n, fl_device **on)
{
    if (!writes_in_place(n) || s->reads.n == 0)
        return -1;
    const void *hosts[n->ninputs ? n->ninputs : 1];
    input_host_addresses(s, n, hosts);
    for (int r = s->reads.n - 1; r >= 0; r--) {
        fl_pending_read *p = &s->reads.list[r];
        if (p->reached || !reads_one_of(p, hosts, n->ninputs))
            continue;
        int reached = fl_device_reached(p->device, p->mark, false);
        p->reached = reached == 1;
        if (reached == 0) { /* an error shows when the op waits for it */
            *on = p->device;
            return p->seq;
        }
    }
    return -1;
}

/* After n's kernel is enqueued: each input its device reads where it lies
 * in /cpu:0 memory (wrap_value) is read until the device passes this mark,
 * so host ops that write it in place wait for it. */
int fl_session_note_reads_in_place(fl_session *s, const fl_node *n, fl_tensor *const *in)
{
    fl_device *d = s->slots[n->id].device;
    for (int i = 0; i < n->ninputs; i++) {
        const fl_slot *from = &s->slots[n->inputs[i]->id];
        if (from->device == d || !from->device->is_host || d->is_host)
            continue;
        void *host = fl_device_host_memory(d, in[i]->data);
        if (host && host == from->value.data && note_pending_read(s, d, host) != 0)
            return fl_session_fail(s, "%s: marking its read of %s on %s: %s", n->name, n->inputs[i]->name, d->name,
                                   fl_last_error());
    }
    return 0;
}

/* After a run: marks and pending reads belong to it alone. */
void fl_session_forget_marks(fl_session *s)
{
    for (int id = 0; id < s->nslots; id++) {
        fl_slot *slot = &s->slots[id];
        fl_device_release_mark(slot->device, slot->mark);
        slot->mark = NULL;
        slot->mark_reached = false;
    }
    for (int r = 0; r < s->reads.n; r++)
        fl_device_release_mark(s->reads.list[r].device, s->reads.list[r].mark);
    s->reads.n = 0;
}

void fl_session_free_pending_reads(fl_session *s)
{
    free(s->reads.list);
    s->reads = (fl_pending_reads){NULL, 0, 0, 0};
}
