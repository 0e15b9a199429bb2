/* session.c: running a graph.
 * A run prunes the graph to what the fetches and targets need, places each
 * node on a device, then hands the nodes to their devices in creation order
 * (a topological order), except that a node whose input is still being
 * computed on another device waits while the nodes after it go ahead. Every
 * node keeps its output buffer between runs, so a warm step allocates
 * nothing; variables keep their values. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "placement.h"
#include "session_internal.h"

fl_session *fl_session_new(fl_graph *g, const fl_session_options *options)
{
    fl_session *s = fl_xcalloc(1, sizeof *s);
    s->graph = g;
    if (options)
        s->options = *options;
    return s;
}

static void release_slot(fl_slot *slot)
{
    if (slot->buffer)
        slot->device->backend->release(slot->device->impl, slot->buffer);
    slot->buffer = NULL;
    slot->capacity = 0;
}

static void release_copies(fl_slot *slot, int ninputs)
{
    for (int i = 0; slot->copies && i < ninputs; i++) {
        fl_edge_copy *c = &slot->copies[i];
        if (c->buffer)
            slot->device->backend->release(slot->device->impl, c->buffer);
        free(c->host);
    }
    free(slot->copies);
    slot->copies = NULL;
}

void fl_session_free(fl_session *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nslots; i++) {
        release_copies(&s->slots[i], fl_graph_node(s->graph, i)->ninputs);
        release_slot(&s->slots[i]);
        free(s->slots[i].sent);
    }
    free(s->slots);
    free(s->pending);
    free(s->reads);
    free(s->needed);
    free(s->feeds);
    free(s->events);
    free(s);
}

const char *fl_session_error(const fl_session *s) { return s->error; }

static void add_event(fl_session *s, int node, const fl_device *d, double start, double end)
{
    if (s->nevents == s->events_cap) {
        s->events_cap = s->events_cap ? s->events_cap * 2 : 1024;
        s->events = fl_xrealloc(s->events, (size_t)s->events_cap * sizeof *s->events);
    }
    s->events[s->nevents++] = (fl_trace_event){node, d, start - s->trace_origin_us, end - start, -1};
}

static void record_event(fl_session *s, const fl_node *n, const fl_device *d, double start)
{
    add_event(s, n->id, d, start, fl_now_us());
}

/* Whether d times its own ops in this traced run: an asynchronous device
 * does, as run() only enqueues there. Asked once per device and run. */
static bool device_times_ops(fl_session *s, fl_device *d)
{
    for (int i = 0; i < s->ntraced; i++)
        if (s->traced[i].device == d)
            return s->traced[i].timed;
    const fl_backend *b = d->backend;
    if (!b->tracing.set_tracing || !b->tracing.take_timings || s->ntraced == FL_TRACED_DEVICES)
        return false; /* the host clock around run() times it */
    bool timed = b->tracing.set_tracing(d->impl, true) == 0;
    s->traced[s->ntraced++] = (fl_traced_device){d, timed};
    return timed;
}

/* After a traced run: the device-timed ops join the timeline with the times
 * they really ran, and the devices stop timing until the next traced run.
 * A device that fails to report has failed the run's wait already. */
static void take_device_timings(fl_session *s)
{
    enum { BATCH = 64 };
    fl_op_timing batch[BATCH];
    for (int i = 0; i < s->ntraced; i++) {
        fl_device *d = s->traced[i].device;
        int got = s->traced[i].timed ? BATCH : 0;
        while (got == BATCH) { /* a full batch: more may wait */
            got = d->backend->tracing.take_timings(d->impl, batch, BATCH);
            for (int k = 0; k < got; k++)
                add_event(s, batch[k].node, d, batch[k].start_us, batch[k].end_us);
        }
        d->backend->tracing.set_tracing(d->impl, false);
    }
    s->ntraced = 0;
}

int fl_session_fail(fl_session *s, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, args);
    va_end(args);
    fl_set_error("%s", s->error);
    return -1;
}

/* The graph may grow after the session is made (TensorFlow allows it). */
void fl_session_grow(fl_session *s)
{
    int n = fl_graph_node_count(s->graph);
    if (n <= s->nslots)
        return;
    s->slots = fl_xrealloc(s->slots, (size_t)n * sizeof *s->slots);
    memset(s->slots + s->nslots, 0, (size_t)(n - s->nslots) * sizeof *s->slots);
    s->needed = fl_xrealloc(s->needed, (size_t)n * sizeof *s->needed);
    memset(s->needed, 0, (size_t)n * sizeof *s->needed);
    s->feeds = fl_xrealloc(s->feeds, (size_t)n * sizeof *s->feeds);
    memset(s->feeds, 0, (size_t)n * sizeof *s->feeds);
    s->pending = fl_xrealloc(s->pending, (size_t)n * sizeof *s->pending);
    s->nslots = n;
}

/* ---- feeds ---- */

static int check_feed(fl_session *s, const fl_feed *f)
{
    char want[64], got[64];
    if (!f->node || !f->value || f->node->graph != s->graph)
        return fl_session_fail(s, "a feed has a NULL node or value, or a node from another graph");
    const fl_node *n = f->node;
    if (f->value->dtype != n->dtype)
        return fl_session_fail(s, "%s: fed %s but it is %s", n->name, fl_dtype_name(f->value->dtype),
                               fl_dtype_name(n->dtype));
    bool fits = f->value->shape.rank == n->shape.rank;
    for (int i = 0; fits && i < n->shape.rank; i++)
        fits = n->shape.dims[i] < 0 || n->shape.dims[i] == f->value->shape.dims[i];
    if (!fits)
        return fl_session_fail(s, "%s: fed a tensor of shape %s but it takes %s", n->name,
                               fl_shape_format(f->value->shape, got, sizeof got),
                               fl_shape_format(n->shape, want, sizeof want));
    return 0;
}

static int record_feeds(fl_session *s, const fl_feed *feeds, int nfeeds)
{
    memset(s->feeds, 0, (size_t)s->nslots * sizeof *s->feeds);
    for (int i = 0; i < nfeeds; i++) {
        if (check_feed(s, &feeds[i]) != 0)
            return -1;
        s->feeds[feeds[i].node->id] = feeds[i].value;
    }
    return 0;
}

/* ---- pruning: mark what the fetches and targets need ---- */

static void mark_needed(fl_session *s, fl_node *const *roots, int nroots)
{
    fl_node **stack = fl_xmalloc((size_t)s->nslots * 2 * sizeof *stack + sizeof *stack);
    int top = 0;
    for (int i = 0; i < nroots; i++)
        stack[top++] = roots[i];
    while (top > 0) {
        fl_node *n = stack[--top];
        if (s->needed[n->id])
            continue;
        s->needed[n->id] = true;
        if (s->feeds[n->id]) /* a fed node's inputs are not needed */
            continue;
        for (int i = 0; i < n->ninputs; i++)
            if (!s->needed[n->inputs[i]->id])
                stack[top++] = n->inputs[i];
        for (int i = 0; i < n->ncontrols; i++)
            if (!s->needed[n->controls[i]->id])
                stack[top++] = n->controls[i];
        if (top + 64 >= s->nslots * 2) /* one node pushes at most its inputs */
            stack = fl_xrealloc(stack, (size_t)(top + 64 + s->nslots * 2) * sizeof *stack);
    }
    free(stack);
}

static int check_roots(fl_session *s, fl_node *const *nodes, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (!nodes[i] || nodes[i]->graph != s->graph)
            return fl_session_fail(s, "%s %d is NULL or from another graph (did building it fail? "
                                      "see fl_graph_error)", what, i);
    return 0;
}

/* ---- running one node ---- */

int fl_session_place(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    if (slot->device)
        return 0;
    char err[FL_ERROR_LEN];
    slot->device = fl_place_node(n, &s->options, err, sizeof err);
    if (!slot->device)
        return fl_session_fail(s, "%s", err);
    if (s->options.log_device_placement)
        fl_log_placement(n, slot->device);
    return 0;
}

void fl_session_ensure_buffer(fl_slot *slot, size_t bytes)
{
    if (bytes <= slot->capacity)
        return;
    release_slot(slot);
    slot->buffer = fl_device_alloc(slot->device, bytes);
    slot->capacity = bytes;
}

static int run_source(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    const fl_tensor *fed = s->feeds[n->id];
    if (fed) {
        fl_session_ensure_buffer(slot, fl_tensor_bytes(fed));
        slot->value = (fl_tensor){fed->dtype, fed->shape, slot->buffer};
        return slot->device->backend->copy_in(slot->device->impl, slot->buffer, fed->data,
                                              fl_tensor_bytes(fed));
    }
    if (n->op == FL_OP_PLACEHOLDER) {
        char shape[64];
        return fl_session_fail(s, "%s: placeholder %s %s was not fed; pass a value for it in the "
                                  "feeds of fl_session_run", n->name, fl_dtype_name(n->dtype),
                               fl_shape_format(n->shape, shape, sizeof shape));
    }
    /* Variables and constants: one buffer for the session's lifetime. */
    if (slot->buffer)
        return 0;
    fl_tensor t = {n->dtype, n->attrs.shape, NULL};
    fl_session_ensure_buffer(slot, fl_tensor_bytes(&t));
    slot->value = (fl_tensor){n->dtype, n->attrs.shape, slot->buffer};
    if (n->op == FL_OP_CONST)
        return slot->device->backend->copy_in(slot->device->impl, slot->buffer, n->value->data,
                                              fl_tensor_bytes(n->value));
    return 0;
}

/* Copies a value its device has finished into host memory. A device with
 * marks copies it at once, even with later work still in its queue. */
static int copy_finished_out(fl_device *src, void *host_dst, const void *from, size_t bytes)
{
    const fl_backend *b = src->backend;
    if (b->marks.copy_out_now)
        return b->marks.copy_out_now(src->impl, host_dst, from, bytes);
    int rc = b->copy_out(src->impl, host_dst, from, bytes);
    return rc ? rc : b->wait(src->impl);
}

/* Remembers that dst will read host memory at `host` some time after now,
 * so that a host op does not overwrite it first (wait_for_pending_reads). */
static int note_pending_read(fl_session *s, fl_device *dst, const void *host)
{
    void *mark = NULL;
    if (dst->backend->marks.mark && !(mark = dst->backend->marks.mark(dst->impl)))
        return -1;
    if (s->nreads == s->reads_cap) {
        s->reads_cap = s->reads_cap ? s->reads_cap * 2 : 64;
        s->reads = fl_xrealloc(s->reads, (size_t)s->reads_cap * sizeof *s->reads);
    }
    s->reads[s->nreads++] = (fl_pending_read){host, dst, mark};
    return 0;
}

/* Moves a finished value from src's buffer to dst's, through host memory
 * when neither side is the host. */
static int transfer(fl_session *s, fl_edge_copy *c, fl_device *src, fl_device *dst, const void *from,
                    size_t bytes)
{
    if (src->is_host) {
        int rc = dst->backend->copy_in(dst->impl, c->buffer, from, bytes);
        return rc ? rc : note_pending_read(s, dst, from);
    }
    if (dst->is_host)
        return copy_finished_out(src, c->buffer, from, bytes);
    if (bytes > c->host_capacity) {
        c->host = fl_xrealloc(c->host, bytes);
        c->host_capacity = bytes;
    }
    int rc = copy_finished_out(src, c->host, from, bytes);
    return rc ? rc : dst->backend->copy_in(dst->impl, c->buffer, c->host, bytes);
}

/* Blocks until device d is past mark, or until it is idle when it has no
 * marks (mark NULL). */
static int wait_for_mark(fl_device *d, void *mark)
{
    if (!mark)
        return d->backend->wait(d->impl);
    return d->backend->marks.reached(d->impl, mark, true) == 1 ? 0 : -1;
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
        if (from->sent[k].device == dst && from->sent[k].run == s->run_count)
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
    from->sent[k] = (fl_sent_copy){dst, value, s->run_count};
}

/* Gives n's input i on n's device: the copy this run already made there
 * for another reader, or a new one, through host memory. */
static int copy_across(fl_session *s, fl_node *n, int i, fl_tensor **out)
{
    fl_slot *slot = &s->slots[n->id], *from = &s->slots[n->inputs[i]->id];
    fl_device *src = from->device, *dst = slot->device;
    if ((*out = copy_made_this_run(s, from, dst)))
        return 0;
    if (!slot->copies)
        slot->copies = fl_xcalloc((size_t)n->ninputs, sizeof *slot->copies);
    fl_edge_copy *c = &slot->copies[i];
    size_t bytes = fl_tensor_bytes(&from->value);
    if (bytes > c->capacity) {
        if (c->buffer)
            dst->backend->release(dst->impl, c->buffer);
        c->buffer = fl_device_alloc(dst, bytes);
        c->capacity = bytes;
    }
    c->value = (fl_tensor){from->value.dtype, from->value.shape, c->buffer};
    *out = &c->value;
    /* The value is finished first, so a traced copy is only the copy. */
    int rc = wait_for_value(from);
    double start = fl_now_us();
    rc = rc ? rc : transfer(s, c, src, dst, from->value.data, bytes);
    if (rc == 0 && s->tracing) {
        add_event(s, n->id, dst, start, fl_now_us());
        s->events[s->nevents - 1].copy_of = n->inputs[i]->id;
    }
    if (rc != 0)
        return fl_session_fail(s, "%s: copying input %s from %s to %s failed: %s", n->name,
                               n->inputs[i]->name, src->name, dst->name, fl_last_error());
    remember_copy(s, from, dst, &c->value);
    return 0;
}

static bool reads_input(const fl_pending_read *p, const fl_node *n, fl_tensor *const *in)
{
    for (int i = 0; i < n->ninputs; i++)
        if (p->host == in[i]->data)
            return true;
    return false;
}

/* An op that writes variables in place (Assign, ApplyAdam and its slots)
 * on the host waits until no device is still to copy them in. */
static int wait_for_pending_reads(fl_session *s, const fl_node *n, fl_tensor *const *in)
{
    if (!s->slots[n->id].device->is_host || !fl_op_def_of(n->op)->aliases_input0)
        return 0;
    for (int r = 0; r < s->nreads; r++) {
        fl_pending_read *p = &s->reads[r];
        if (!reads_input(p, n, in))
            continue;
        if (wait_for_mark(p->device, p->mark) != 0)
            return fl_session_fail(s, "%s: waiting for %s to copy %s in: %s", n->name,
                                   p->device->name, n->inputs[0]->name, fl_last_error());
    }
    return 0;
}

static int check_initialized(fl_session *s, fl_node *n)
{
    for (int i = 0; i < n->ninputs; i++) {
        fl_node *in = n->inputs[i];
        bool assigning = i == 0 && n->op == FL_OP_ASSIGN;
        if (in->op == FL_OP_VARIABLE && !s->slots[in->id].initialized && !assigning &&
            !s->feeds[in->id])
            return fl_session_fail(s, "%s: reads variable %s before it is initialized; run "
                                      "fl_global_variables_initializer() first (or restore a checkpoint)",
                                   n->name, in->name);
    }
    return 0;
}

static int run_op(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    if (check_initialized(s, n) != 0)
        return -1;
    fl_tensor *in[n->ninputs ? n->ninputs : 1];
    fl_shape in_shapes[n->ninputs ? n->ninputs : 1];
    for (int i = 0; i < n->ninputs; i++) {
        const fl_slot *from = &s->slots[n->inputs[i]->id];
        bool writes = i == 0 && fl_op_def_of(n->op)->aliases_input0;
        if (from->device != slot->device && writes)
            return fl_session_fail(s, "%s: writes %s, which lives on %s, but runs on %s; place the "
                                      "update beside its variable", n->name, n->inputs[i]->name,
                                   from->device->name, slot->device->name);
        in[i] = &s->slots[n->inputs[i]->id].value;
        if (from->device != slot->device && copy_across(s, n, i, &in[i]) != 0)
            return -1;
        in_shapes[i] = in[i]->shape;
    }
    char err[FL_ERROR_LEN] = "";
    fl_shape shape;
    if (fl_op_def_of(n->op)->infer(n, in_shapes, &shape, err) != 0)
        return fl_session_fail(s, "%s: %s", n->name, err);
    if (fl_op_def_of(n->op)->aliases_input0) {
        slot->value = (fl_tensor){n->dtype, shape, in[0]->data};
    } else if (n->has_output) {
        fl_tensor t = {n->dtype, shape, NULL};
        fl_session_ensure_buffer(slot, fl_tensor_bytes(&t));
        slot->value = (fl_tensor){n->dtype, shape, slot->buffer};
    }
    if (n->op == FL_OP_NO_OP)
        return 0;
    if (wait_for_pending_reads(s, n, in) != 0)
        return -1;
    fl_kernel_ctx ctx = {.seed = s->options.seed ? s->options.seed : fl_graph_seed(s->graph)};
    bool host_timed = s->tracing && !device_times_ops(s, slot->device);
    fl_clear_error();
    double start = host_timed ? fl_now_us() : 0;
    if (slot->device->backend->run(slot->device->impl, n, in, &slot->value, &ctx) != 0)
        return fl_session_fail(s, "%s: %s", n->name, fl_last_error());
    if (host_timed)
        record_event(s, n, slot->device, start);
    if (n->op == FL_OP_ASSIGN) /* only a full assignment gives a variable its first value */
        s->slots[n->inputs[0]->id].initialized = true;
    return 0;
}

static bool is_source(const fl_node *n)
{
    return n->op == FL_OP_PLACEHOLDER || n->op == FL_OP_VARIABLE || n->op == FL_OP_CONST;
}

/* ---- the order of a run ---- */

/* Places every needed node, then finds the values a node on another device
 * reads: their devices will mark them (see issue). */
static int place_and_find_crossings(fl_session *s)
{
    for (int id = 0; id < s->nslots; id++) {
        s->slots[id].crosses = false;
        s->slots[id].issued = false;
        if (s->needed[id] && fl_session_place(s, fl_graph_node(s->graph, id)) != 0)
            return -1;
    }
    for (int id = 0; id < s->nslots; id++) {
        fl_node *n = fl_graph_node(s->graph, id);
        if (!s->needed[id] || s->feeds[id] || is_source(n))
            continue;
        for (int i = 0; i < n->ninputs; i++) {
            fl_slot *from = &s->slots[n->inputs[i]->id];
            if (from->device != s->slots[id].device)
                from->crosses = true;
        }
    }
    return 0;
}

static bool inputs_issued(const fl_session *s, const fl_node *n)
{
    if (s->feeds[n->id] || is_source(n))
        return true;
    for (int i = 0; i < n->ninputs; i++)
        if (!s->slots[n->inputs[i]->id].issued)
            return false;
    for (int i = 0; i < n->ncontrols; i++)
        if (!s->slots[n->controls[i]->id].issued)
            return false;
    return true;
}

/* -1 when n can run now without the host blocking; otherwise the age of
 * the newest mark it would wait for (0 for a device without marks). */
static int64_t would_wait_for(fl_session *s, const fl_node *n)
{
    int64_t newest = -1;
    if (s->feeds[n->id] || is_source(n))
        return newest;
    for (int i = 0; i < n->ninputs; i++) {
        fl_slot *from = &s->slots[n->inputs[i]->id];
        if (from->device == s->slots[n->id].device || from->device->is_host || from->mark_reached)
            continue;
        fl_device *d = from->device;
        int reached = from->mark ? d->backend->marks.reached(d->impl, from->mark, false) : 0;
        if (reached != 0) { /* an error shows when the copy waits for it */
            from->mark_reached = reached == 1;
            continue;
        }
        int64_t age = from->mark ? from->mark_seq : 0;
        newest = age > newest ? age : newest;
    }
    return newest;
}

/* Runs n (a source or an op) on its device; a value another device reads
 * gets a mark right behind it. */
static int issue(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    int rc = is_source(n) || s->feeds[n->id] ? run_source(s, n) : run_op(s, n);
    if (rc != 0)
        return -1;
    slot->issued = true;
    slot->mark_reached = false;
    const fl_backend *b = slot->device->backend;
    if (!slot->crosses || slot->device->is_host || !b->marks.mark)
        return 0;
    if (!(slot->mark = b->marks.mark(slot->device->impl)))
        return fl_session_fail(s, "%s: marking its value on %s: %s", n->name, slot->device->name,
                               fl_last_error());
    slot->mark_seq = ++s->marks_made;
    return 0;
}

/* One pass over the pending nodes, in creation order: issues every node
 * that can start without the host blocking and keeps the others, in order.
 * *oldest is the kept node that waits for the oldest mark, or -1 when no
 * kept node has all its inputs issued. Returns how many it kept, or -1. */
static int sweep(fl_session *s, int npending, int *oldest)
{
    int kept = 0;
    int64_t oldest_age = INT64_MAX;
    *oldest = -1;
    for (int k = 0; k < npending; k++) {
        fl_node *n = fl_graph_node(s->graph, s->pending[k]);
        int64_t age = inputs_issued(s, n) ? would_wait_for(s, n) : INT64_MAX;
        if (age == -1) {
            if (issue(s, n) != 0)
                return -1;
            continue;
        }
        if (age < oldest_age) {
            oldest_age = age;
            *oldest = kept;
        }
        s->pending[kept++] = n->id;
    }
    return kept;
}

/* Hands every needed node to its device. A sweep issues all that can go;
 * when none can, the host waits for the node whose input is the oldest
 * mark (on an in-order queue, the first to finish) and sweeps again. So the
 * towers go on computing while the host copies and averages what they have
 * finished. */
// [book:execute]
static int execute(fl_session *s)
{
    if (place_and_find_crossings(s) != 0)
        return -1;
    int npending = 0;
    for (int id = 0; id < s->nslots; id++)
        if (s->needed[id])
            s->pending[npending++] = id;
    while (npending > 0) {
        int oldest, kept = sweep(s, npending, &oldest);
        if (kept < 0)
            return -1;
        if (kept == npending) { /* nothing could start: wait for the oldest mark */
            if (oldest < 0) /* creation order is topological: cannot happen */
                return fl_session_fail(s, "no node of this run can start: is the graph a cycle?");
            if (issue(s, fl_graph_node(s->graph, s->pending[oldest])) != 0)
                return -1;
            kept--;
            memmove(&s->pending[oldest], &s->pending[oldest + 1],
                    (size_t)(kept - oldest) * sizeof *s->pending);
        }
        npending = kept;
    }
    return 0;
}
// [end:execute]

/* After a run: marks and pending reads belong to it alone. */
static void forget_marks(fl_session *s)
{
    for (int id = 0; id < s->nslots; id++) {
        fl_slot *slot = &s->slots[id];
        if (slot->mark)
            slot->device->backend->marks.release_mark(slot->device->impl, slot->mark);
        slot->mark = NULL;
        slot->mark_reached = false;
    }
    for (int r = 0; r < s->nreads; r++)
        if (s->reads[r].mark)
            s->reads[r].device->backend->marks.release_mark(s->reads[r].device->impl, s->reads[r].mark);
    s->nreads = 0;
}

/* ---- fetching ---- */

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
        if (d->backend->wait(d->impl) != 0)
            return fl_session_fail(s, "%s: %s", d->name, fl_last_error());
    }
    return 0;
}

static int fetch_outputs(fl_session *s, fl_node *const *fetches, int nfetches, fl_tensor **outputs)
{
    for (int i = 0; i < nfetches; i++) {
        const fl_slot *slot = &s->slots[fetches[i]->id];
        outputs[i] = fl_tensor_new(slot->value.dtype, slot->value.shape);
        slot->device->backend->copy_out(slot->device->impl, outputs[i]->data, slot->value.data,
                                        fl_tensor_bytes(outputs[i]));
    }
    return wait_for_devices(s);
}

int fl_session_run(fl_session *s, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                   int nfetches, fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    s->error[0] = '\0';
    for (int i = 0; i < nfetches; i++)
        outputs[i] = NULL;
    if (fl_graph_failed(s->graph))
        return fl_session_fail(s, "the graph has an error: %s", fl_graph_error(s->graph));
    fl_session_grow(s);
    if (check_roots(s, fetches, nfetches, "fetch") || check_roots(s, targets, ntargets, "target"))
        return -1;
    for (int i = 0; i < nfetches; i++)
        if (!fetches[i]->has_output)
            return fl_session_fail(s, "%s: a %s has no value to fetch; pass it as a target instead",
                                   fetches[i]->name, fl_node_op_type(fetches[i]));
    if (record_feeds(s, feeds, nfeeds) != 0)
        return -1;
    memset(s->needed, 0, (size_t)s->nslots * sizeof *s->needed);
    mark_needed(s, fetches, nfetches);
    mark_needed(s, targets, ntargets);
    s->run_count++;
    if (s->tracing && s->trace_origin_us == 0)
        s->trace_origin_us = fl_now_us(); /* before any op: one origin for every lane */
    int rc = execute(s) == 0 ? fetch_outputs(s, fetches, nfetches, outputs) : -1;
    forget_marks(s);
    if (s->ntraced > 0)
        take_device_timings(s);
    return rc;
}
