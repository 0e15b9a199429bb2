/* session.c: running a graph.
 * A run prunes the graph to what the fetches and targets need, places each
 * node on a device, then hands the nodes to their devices in creation order
 * (a topological order), except that a node whose input is still being
 * computed on another device waits while the nodes after it go ahead (but
 * for those on a variable it reads or updates: session_variable_order.c).
 * Every node keeps its output buffer between runs, or with reuse_memory
 * borrows one from its device's pool (session_memory.c), so a warm step
 * allocates nothing; variables keep their values. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "placement.h"
#include "session_internal.h"

fl_session *fl_session_new(fl_graph *g, const fl_session_options *options)
{
    if (!g) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_session_new: the graph is NULL (did fl_graph_new fail?)");
        return NULL;
    }
    fl_session *s = fl_xcalloc(1, sizeof *s);
    s->graph = g;
    if (options)
        s->options = *options;
    fl_session_open_trace(s);
    if (fl_session_open_master(s) != 0) {
        fl_session_free(s);
        return NULL;
    }
    return s;
}

void fl_session_free(fl_session *s)
{
    if (!s)
        return;
    fl_session_close_master(s);
    for (int i = 0; i < s->nslots; i++) {
        fl_session_release_copies(&s->slots[i]);
        fl_session_release_buffer(&s->slots[i]);
        free(s->slots[i].sent);
    }
    free(s->slots);
    fl_session_free_memory(s);
    fl_run_state *r = &s->run;
    free(r->pending);
    free(r->readers);
    free(r->needed);
    free(r->feeds);
    fl_session_free_pending_reads(s);
    fl_session_free_fusion(s);
    fl_session_free_kept_fetches(s);
    fl_session_close_trace(s);
    free(s);
}

/* The graph may grow after the session is made (TensorFlow allows it). */
void fl_session_grow(fl_session *s)
{
    int n = fl_graph_node_count(s->graph);
    if (n <= s->nslots)
        return;
    s->slots = fl_xrealloc(s->slots, (size_t)n * sizeof *s->slots);
    memset(s->slots + s->nslots, 0, (size_t)(n - s->nslots) * sizeof *s->slots);
    fl_run_state *r = &s->run;
    r->needed = fl_xrealloc(r->needed, (size_t)n * sizeof *r->needed);
    memset(r->needed, 0, (size_t)n * sizeof *r->needed);
    r->feeds = fl_xrealloc(r->feeds, (size_t)n * sizeof *r->feeds);
    memset(r->feeds, 0, (size_t)n * sizeof *r->feeds);
    r->pending = fl_xrealloc(r->pending, (size_t)n * sizeof *r->pending);
    r->readers = fl_xrealloc(r->readers, (size_t)n * sizeof *r->readers);
    s->nslots = n;
}

/* ---- running one node ---- */

int fl_session_place(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    if (slot->device)
        return 0;
    const fl_op_signature *sig = &fl_op_def_of(n->op)->sig;
    if (sig->between_tasks || sig->in_container) { /* TensorFlow's executor gets its rendezvous the same way */
        slot->device = s->rendezvous;
        return slot->device ? 0 : fl_session_fail_code(s, FL_INVALID_ARGUMENT, "%s: a %s %s: only a task's "
                                                       "partition runs one", n->name, fl_node_op_type(n),
                                                       sig->in_container ? "uses its task's accumulators"
                                                                         : "moves a value between tasks");
    }
    fl_status st = {0}; /* placement sets a code where it knows one */
    slot->device = fl_place_node(n, &s->options, &st);
    if (!slot->device)
        return fl_session_fail_code(s, st.code, "%s", st.message);
    if (s->options.log_device_placement)
        fl_log_placement(n, slot->device->name);
    return 0;
}

void fl_session_set_rendezvous(fl_session *s, fl_device *d) { s->rendezvous = d; }
int fl_session_ops_run(const fl_session *s) { return s ? s->run.ops_run : 0; }
fl_graph *fl_session_graph(const fl_session *s) { return s->graph; }

const char *fl_session_node_device(const fl_session *s, const fl_node *n)
{
    if (s && fl_session_in_client(s))
        return fl_session_master_node_device(s, n);
    if (!s || !n || n->graph != s->graph || n->id >= s->nslots || !s->slots[n->id].device)
        return NULL;
    return s->slots[n->id].device->name;
}

static int check_initialized(fl_session *s, fl_node *n)
{
    for (int i = 0; i < n->ninputs; i++) {
        fl_node *in = n->inputs[i];
        bool assigning = i == 0 && n->op == FL_OP_ASSIGN;
        if (in->op == FL_OP_VARIABLE && !s->slots[in->id].initialized && !assigning &&
            !s->run.feeds[in->id])
            return fl_session_fail_code(s, FL_FAILED_PRECONDITION,
                                        "%s: reads variable %s before it is initialized; run "
                                        "fl_global_variables_initializer() first (or restore a checkpoint)",
                                        n->name, in->name);
    }
    return 0;
}

/* An op that writes its input 0 in place (Assign, the updates) must run
 * where it lives; one that only renames it (Reshape, Identity) reads a copy
 * on another device, as TensorFlow's do (chapter 7's stages meet at a
 * reshape). Its op's signature says which. */
static bool writes_input0(const fl_node *n) { return fl_op_def_of(n->op)->sig.writes_inputs > 0; }

static int run_op_kernel(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    if (check_initialized(s, n) != 0)
        return -1;
    fl_tensor *in[n->ninputs ? n->ninputs : 1];
    fl_shape in_shapes[n->ninputs ? n->ninputs : 1];
    for (int i = 0; i < n->ninputs; i++) {
        const fl_slot *from = &s->slots[n->inputs[i]->id];
        bool writes = i == 0 && writes_input0(n);
        if (from->device != slot->device && writes)
            return fl_session_fail_code(s, FL_INVALID_ARGUMENT,
                                        "%s: writes %s, which lives on %s, but runs on %s; place the "
                                        "update beside its variable", n->name, n->inputs[i]->name,
                                        from->device->name, slot->device->name);
        in[i] = &s->slots[n->inputs[i]->id].value;
        if (from->device != slot->device && fl_session_copy_input(s, n, i, &in[i]) != 0)
            return -1;
        in_shapes[i] = in[i]->shape;
    }
    fl_status st = {0};
    fl_shape shape;
    if (fl_op_def_of(n->op)->infer(n, in_shapes, &shape, &st) != 0)
        return fl_session_fail_code(s, st.code, "%s: %s", n->name, st.message);
    if (fl_op_def_of(n->op)->sig.aliases != FL_ALIAS_NONE) {
        slot->value = (fl_tensor){.dtype = n->dtype, .shape = shape, .data = in[0]->data};
        slot->shared = s->slots[n->inputs[0]->id].shared;
        fl_session_memory_share(s, n, n->inputs[0]);
    } else if (n->has_output && fl_session_can_forward(s, n, in[0], shape)) {
        fl_session_release_buffer(slot); /* a buffer from a run that could not forward */
        slot->value = (fl_tensor){.dtype = n->dtype, .shape = shape, .data = in[0]->data};
        fl_session_memory_share(s, n, n->inputs[0]);
    } else if (n->has_output && fl_session_output_to_fetch_target(s, n, slot, shape) != 0) {
        if (fl_session_memory_take(s, n, slot, n->dtype, shape) != 0)
            return -1;
        slot->value = (fl_tensor){.dtype = n->dtype, .shape = shape, .data = slot->buffer};
    }
    if (n->op == FL_OP_NO_OP)
        return 0;
    if (fl_session_wait_for_pending_reads(s, n) != 0)
        return -1;
    fl_kernel_ctx ctx = {.seed = s->options.seed ? s->options.seed : fl_graph_seed(s->graph)};
    bool host_timed = fl_session_tracing(s) && !fl_session_device_times_ops(s, slot->device);
    fl_clear_error();
    double start = host_timed ? fl_now_us() : 0;
    if (slot->device->backend->run(slot->device->impl, n, in, &slot->value, &ctx) != 0)
        return fl_session_fail(s, "%s: %s", n->name, fl_last_error());
    if (host_timed)
        fl_session_trace_op(s, n, slot->device, start, fl_now_us());
    if (fl_session_note_reads_in_place(s, n, in) != 0)
        return -1;
    fl_session_memory_issued(s, n);
    if (n->op == FL_OP_ASSIGN) /* only a full assignment gives a variable its first value */
        fl_session_note_assigned(s, n->inputs[0]);
    return 0;
}

/* An op on a variable of the task's container runs under its lock: other
 * partitions on the task update the same variables from their threads. */
static int run_op(fl_session *s, fl_node *n)
{
    bool locked = fl_session_lock_shared(s, n);
    int rc = run_op_kernel(s, n);
    if (locked)
        fl_session_unlock_shared(s);
    return rc;
}

static bool is_source(const fl_node *n) { return fl_op_def_of(n->op)->sig.is_source; }

/* ---- the order of a run ---- */

/* Whether a reader of `before` waits for its mark: a value on another
 * device, or on a device that completes out of order (a rendezvous: a Recv
 * or an accumulator's take is issued long before its value comes), even
 * for a reader on that device (an accumulator's apply of a Recv). */
static bool reader_waits(const fl_session *s, const fl_node *n, const fl_node *before)
{
    fl_device *from = s->slots[before->id].device;
    return from != s->slots[n->id].device || fl_device_waits_on_any(from);
}

/* A control input that completes out of order (a Recv, whose value comes
 * when another task sends it; a take): its issue is not its end, so a node
 * waits for its mark as for an input's. */
static bool waits_on_control(const fl_session *s, const fl_node *n, const fl_node *before)
{
    const fl_op_signature *sig = &fl_op_def_of(before->op)->sig;
    return (sig->between_tasks || sig->in_container) && reader_waits(s, n, before);
}

/* Places every needed node, fuses what its device runs as one kernel
 * (session_fusion.c), then finds the values a node on another device
 * reads: their devices will mark them (see issue). */
static int place_and_find_crossings(fl_session *s)
{
    fl_run_state *r = &s->run;
    r->ops_run = 0;
    for (int id = 0; id < s->nslots; id++) {
        s->slots[id].crosses = false;
        s->slots[id].issued = false;
        r->readers[id] = 0;
        if (r->needed[id] && fl_session_place(s, fl_graph_node(s->graph, id)) != 0)
            return -1;
    }
    if (fl_session_check_device_io(s) != 0)
        return -1;
    fl_session_fuse(s, r->needed);
    for (int id = 0; id < s->nslots; id++) {
        fl_node *n = fl_session_planned(s, id);
        if (!r->needed[id] || r->feeds[id] || is_source(n))
            continue;
        for (int i = 0; i < n->ninputs; i++) {
            if (reader_waits(s, n, n->inputs[i]))
                s->slots[n->inputs[i]->id].crosses = true;
            r->readers[n->inputs[i]->id]++;
        }
        for (int i = 0; i < n->ncontrols; i++)
            if (waits_on_control(s, n, n->controls[i]))
                s->slots[n->controls[i]->id].crosses = true;
    }
    fl_session_memory_start_run(s);
    return 0;
}

static bool inputs_issued(const fl_session *s, const fl_node *n)
{
    if (s->run.feeds[n->id] || is_source(n))
        return true;
    for (int i = 0; i < n->ninputs; i++)
        if (!s->slots[n->inputs[i]->id].issued)
            return false;
    for (int i = 0; i < n->ncontrols; i++)
        if (!s->slots[n->controls[i]->id].issued)
            return false;
    return true;
}

/* Whether the value in from is not finished yet for a reader on another
 * device; *newest and *on keep the newest such mark and its device (a
 * device that must be waited on as a whole, a rendezvous, first). */
static void note_unfinished(fl_slot *from, int64_t *newest, fl_device **on)
{
    if (from->device->is_host || from->mark_reached)
        return;
    int reached = fl_device_reached(from->device, from->mark, false);
    if (reached != 0) { /* an error shows when the copy waits for it */
        from->mark_reached = reached == 1;
        return;
    }
    int64_t age = from->mark ? from->mark_seq : 0;
    *newest = age > *newest ? age : *newest;
    if (!*on || fl_device_waits_on_any(from->device))
        *on = from->device;
}

/* -1 when n can run now without the host blocking; otherwise the age of
 * the newest mark it would wait for (0 for a device without marks), and
 * in *on the device that holds it. */
static int64_t would_wait_for(fl_session *s, const fl_node *n, fl_device **on)
{
    int64_t newest = -1;
    *on = NULL;
    if (s->run.feeds[n->id] || is_source(n))
        return newest;
    for (int i = 0; i < n->ninputs; i++)
        if (reader_waits(s, n, n->inputs[i]))
            note_unfinished(&s->slots[n->inputs[i]->id], &newest, on);
    for (int i = 0; i < n->ncontrols; i++)
        if (waits_on_control(s, n, n->controls[i]))
            note_unfinished(&s->slots[n->controls[i]->id], &newest, on);
    /* An op that writes in place what another device still reads waits too. */
    fl_device *reader = NULL;
    int64_t read = fl_session_unfinished_reads(s, n, &reader);
    if (read > newest) {
        newest = read;
        *on = *on && fl_device_waits_on_any(*on) ? *on : reader;
    }
    return newest;
}

/* Runs n (a source or an op) on its device; a value another device reads,
 * or one fetched early (session_fetch.c), gets a mark right behind it. */
static int issue(fl_session *s, fl_node *n)
{
    const fl_run_options *o = s->run.options;
    if (o && o->should_stop && o->should_stop(o->user))
        return fl_session_fail_code(s, FL_ABORTED, "%s: the run was stopped before this op: its caller gave it up",
                                    n->name);
    fl_slot *slot = &s->slots[n->id];
    bool source = is_source(n) || s->run.feeds[n->id];
    if ((source ? fl_session_run_source(s, n) : run_op(s, n)) != 0)
        return -1;
    s->run.ops_run += !source;
    slot->issued = true;
    slot->mark_reached = false;
    bool early = fl_session_wants_early_fetch(s, slot);
    if (!(slot->crosses || early) || slot->device->is_host)
        return early ? fl_session_fetch_finished(s) : 0;
    if (fl_device_mark(slot->device, &slot->mark) != 0)
        return fl_session_fail(s, "%s: marking its value on %s: %s", n->name, slot->device->name,
                               fl_last_error());
    if (!slot->mark) /* a device without marks: the value is known finished when it is idle */
        return early ? fl_session_fetch_finished(s) : 0;
    slot->mark_seq = fl_session_next_mark_age(s);
    return 0;
}

/* One pass over the pending nodes, in creation order: issues every node
 * that can start without the host blocking and keeps the others, in order.
 * *oldest is the kept node that waits for the oldest mark, or -1 when no
 * kept node has all its inputs issued; *on is the device of that mark.
 * Returns how many it kept, or -1. */
static int sweep(fl_session *s, int npending, int *oldest, fl_device **on)
{
    int kept = 0;
    int64_t oldest_age = INT64_MAX;
    bool oldest_on_rendezvous = false;
    *oldest = -1;
    for (int k = 0; k < npending; k++) {
        fl_node *n = fl_session_planned(s, s->run.pending[k]);
        fl_device *device = NULL;
        int64_t age = inputs_issued(s, n) ? would_wait_for(s, n, &device) : INT64_MAX;
        if (age == -1 && fl_session_passes_variable_use(s, n, s->run.pending, kept))
            age = INT64_MAX; /* not ready until the node before it on its variable is issued */
        if (age == -1) {
            if (issue(s, n) != 0)
                return -1;
            continue;
        }
        /* A node that waits on a device's own work comes before one that waits
         * for another task's value: that work ends by itself, and a Recv
         * issued at the step's start would otherwise be the oldest all step. */
        bool on_rendezvous = device && fl_device_waits_on_any(device);
        if (age != INT64_MAX && (*oldest < 0 || (oldest_on_rendezvous && !on_rendezvous) ||
                                 (oldest_on_rendezvous == on_rendezvous && age < oldest_age))) {
            oldest_age = age;
            oldest_on_rendezvous = on_rendezvous;
            *oldest = kept;
            *on = device;
        }
        s->run.pending[kept++] = n->id;
    }
    /* Fetches finished meanwhile go to fetch_ready now, not at the end. */
    return fl_session_fetch_finished(s) == 0 ? kept : -1;
}

/* Nothing could start and the oldest waits on a rendezvous: waiting for
 * that one value could deadlock two tasks (each waiting for a value the
 * other sends only after a value it has yet to take), so the host waits
 * for any arrival, then sweeps again. The device ends the wait at the task
 * deadline, naming the value and its task; a caller that gave up ends it. */
static int wait_for_any_arrival(fl_session *s, fl_device *on)
{
    const fl_run_options *o = s->run.options;
    if (o && o->should_stop && o->should_stop(o->user))
        return fl_session_fail_code(s, FL_ABORTED, "the run was stopped while waiting for values from other "
                                    "tasks: its caller gave it up");
    if (fl_device_wait_any(on) != 0)
        return fl_session_fail(s, "%s", fl_last_error());
    return 0;
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
    int *pending = s->run.pending, npending = 0;
    for (int id = 0; id < s->nslots; id++)
        if (s->run.needed[id])
            pending[npending++] = id;
    while (npending > 0) {
        fl_device *on = NULL;
        int oldest, kept = sweep(s, npending, &oldest, &on);
        if (kept < 0)
            return -1;
        if (kept == npending && oldest >= 0 && on && fl_device_waits_on_any(on)) {
            if (wait_for_any_arrival(s, on) != 0)
                return -1;
        } else if (kept == npending) { /* nothing could start: wait for the oldest mark */
            if (oldest < 0) /* creation order is topological: cannot happen */
                return fl_session_fail_code(s, FL_INVALID_ARGUMENT,
                                            "no node of this run can start: is the graph a cycle?");
            if (issue(s, fl_session_planned(s, pending[oldest])) != 0)
                return -1;
            kept--;
            memmove(&pending[oldest], &pending[oldest + 1], (size_t)(kept - oldest) * sizeof *pending);
        }
        npending = kept;
    }
    return 0;
}
// [end:execute]

int fl_session_run(fl_session *s, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                   int nfetches, fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    return fl_session_run_with_options(s, NULL, feeds, nfeeds, fetches, nfetches, outputs, targets,
                                       ntargets);
}

/* The counts and arrays a caller passed agree (a C caller can get them
 * wrong; the run must say so, not write through a NULL). */
static int check_run_arguments(fl_session *s, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                               int nfetches, fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    if (nfeeds < 0 || nfetches < 0 || ntargets < 0)
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "fl_session_run: a negative count (%d feeds, %d "
                                    "fetches, %d targets)", nfeeds, nfetches, ntargets);
    if ((nfeeds && !feeds) || (nfetches && !fetches) || (ntargets && !targets))
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "fl_session_run: %s is NULL but its count is not 0",
                                    nfeeds && !feeds ? "feeds" : nfetches && !fetches ? "fetches" : "targets");
    if (nfetches && !outputs)
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "fl_session_run: %d fetches but outputs is NULL; pass "
                                    "an array of %d tensor pointers, or the nodes as targets", nfetches, nfetches);
    return 0;
}

int fl_session_run_with_options(fl_session *s, const fl_run_options *options, const fl_feed *feeds,
                                int nfeeds, fl_node *const *fetches, int nfetches,
                                fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    if (!s) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_session_run: the session is NULL (did fl_session_new fail?)");
        return -1;
    }
    fl_session_clear_error(s);
    if (check_run_arguments(s, feeds, nfeeds, fetches, nfetches, outputs, targets, ntargets) != 0)
        return -1;
    for (int i = 0; i < nfetches; i++)
        outputs[i] = NULL;
    if (fl_graph_failed(s->graph))
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "the graph has an error: %s", fl_graph_error(s->graph));
    if (fl_session_in_client(s)) {
        fl_session_trace_run_starts(s); /* the tasks' events land on this origin */
        int rc = fl_session_run_master(s, options, feeds, nfeeds, fetches, nfetches, outputs, targets, ntargets);
        s->run.run_count += rc == 0;
        return rc;
    }
    fl_session_grow(s);
    if (fl_session_prune(s, feeds, nfeeds, fetches, nfetches, targets, ntargets, s->run.needed, s->run.feeds) != 0)
        return -1;
    s->run.run_count++;
    fl_session_trace_run_starts(s);
    bool delivered[nfetches ? nfetches : 1];
    fl_session_start_fetches(s, options, fetches, nfetches, outputs, delivered);
    s->run.options = options;
    int rc = execute(s) == 0 ? fl_session_fetch_the_rest(s) : -1;
    s->run.options = NULL;
    fl_session_end_fetches(s, rc != 0);
    fl_session_memory_end_run(s);
    fl_session_forget_marks(s);
    fl_session_take_device_timings(s);
    return rc;
}
