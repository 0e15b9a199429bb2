/* backend_rendezvous.c: a task's rendezvous behind the device seam, so that
 * Send and Recv are nodes the one executor runs (rendezvous_device.h). A
 * Recv's run registers it; its mark is reached when its value has arrived,
 * which this device checks without blocking whenever the executor asks. A
 * buffer is host memory: a Send's grows to the largest value staged in it,
 * a Recv's takes over the memory of the value that arrived and gives its
 * own back to the rendezvous for the next value, so a warm step allocates
 * no memory here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rendezvous_accumulators.h"
#include "rendezvous_device.h"

/* How long one wait for any arrival lasts before the executor looks again:
 * an arrival ends it at once; the slice only bounds how late a cancelled
 * client or a passed deadline is noticed. */
#define WAIT_SLICE_S 0.25
#define LOG_EVERY_S 5.0

typedef struct {
    size_t capacity;
    unsigned char *data;
} rendezvous_buffer;

/* A Recv registered this step: its value lands in buffer, its shape in out;
 * or an AccumulatorTakeGradient (num_required > 0): its average does; or an
 * AccumulatorWaitStep (is_wait): the global step once it passed local_step. */
typedef struct {
    const fl_node *node;
    fl_tensor *out;
    bool arrived;
    int num_required;
    bool is_wait;
    int32_t local_step;
} pending_recv;

struct fl_rendezvous_device {
    fl_device device;
    fl_rendezvous *rendezvous;
    fl_variable_container *container; /* the task's accumulators: NULL outside a server */
    fl_rendezvous_step step;
    double deadline_s;
    pending_recv *recvs; /* grown when a step has more than any before */
    int nrecvs, capacity;
    uintptr_t last;          /* the mark of what was issued last: a Recv's, or DONE */
    double quiet_since, next_line; /* since the last arrival: for the deadline and the log */
};

/* A mark is a Recv's index plus 2, carried in the pointer itself so that
 * marking allocates nothing; DONE stands for work finished on issue (a
 * Send, a copy in), and NULL would be an error. */
#define DONE ((uintptr_t)1)

static int no_devices(void) { return 0; } /* made per partition, not found by index */
static void *not_opened(int index) { (void)index; return NULL; }
static void not_closed(void *impl) { (void)impl; }

static int describe(int index, fl_device_info *info)
{
    (void)index;
    memset(info, 0, sizeof *info);
    snprintf(info->description, sizeof info->description, "a task's rendezvous: values from and to other tasks");
    snprintf(info->backend, sizeof info->backend, "rendezvous");
    return 0;
}

static void *buffer_alloc(void *impl, size_t bytes)
{
    (void)impl;
    rendezvous_buffer *b = calloc(1, sizeof *b);
    if (b && !(b->data = fl_try_malloc(bytes ? bytes : 1))) {
        free(b);
        return NULL;
    }
    if (b)
        b->capacity = bytes;
    return b;
}

static void buffer_release(void *impl, void *buffer)
{
    (void)impl;
    rendezvous_buffer *b = buffer;
    free(b->data);
    free(b);
}

static void *host_memory(void *impl, void *buffer)
{
    (void)impl;
    return ((rendezvous_buffer *)buffer)->data;
}

/* A Send's input, staged here by the executor: done on return. */
static int copy_in(void *impl, void *dst, const void *host_src, size_t bytes)
{
    ((fl_rendezvous_device *)impl)->last = DONE;
    memcpy(((rendezvous_buffer *)dst)->data, host_src, bytes);
    return 0;
}

/* A received value, once its mark is reached (the executor waits first). */
static int copy_out_now(void *impl, void *host_dst, const void *src, size_t bytes)
{
    (void)impl;
    memcpy(host_dst, ((const rendezvous_buffer *)src)->data, bytes);
    return 0;
}

static int reached(void *impl, void *mark, bool block);

/* A copy queued behind the value's own op, as on an in-order device: a
 * fetched take (or Recv) is waited for first, that value alone. */
static int copy_out(void *impl, void *host_dst, const void *src, size_t bytes)
{
    fl_rendezvous_device *d = impl;
    for (int i = 0; i < d->nrecvs; i++)
        if (d->recvs[i].out->data == src && reached(d, (void *)(uintptr_t)(i + 2), true) != 1)
            return -1;
    return copy_out_now(impl, host_dst, src, bytes);
}

static bool has_kernel(fl_op_kind op)
{
    return op == FL_OP_SEND || op == FL_OP_RECV || fl_op_def_of(op)->sig.in_container;
}

/* ---- arrivals ---- */

/* Whether the value fits what the partition expects: its dtype, and its
 * shape where the Recv's shape attr knows a dimension (-1: a fed batch). */
static bool fits(const fl_node *n, const fl_tensor *value)
{
    fl_shape want = n->attrs.shape;
    if (value->dtype != n->dtype || value->shape.rank != want.rank)
        return false;
    for (int i = 0; i < want.rank; i++)
        if (want.dims[i] != -1 && want.dims[i] != value->shape.dims[i])
            return false;
    return true;
}

/* The value into the Recv's buffer, its shape into the Recv's output. The
 * rendezvous made the value (fl_rendezvous_poll: the caller's), so its
 * memory becomes the buffer with no copy, the buffer's old memory goes
 * back to the rendezvous, and the executor copies the value once, onto
 * the device that awaits it. */
static int land(fl_rendezvous_device *d, pending_recv *r, fl_tensor *value)
{
    rendezvous_buffer *b = r->out->data;
    char got[64], want[64];
    if (!fits(r->node, value)) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: the value for %s from %s is %s %s, not the %s %s the "
                          "partition expects", r->node->name, r->node->attrs.edge_key,
                          r->node->attrs.peer_task, fl_dtype_name(value->dtype),
                          fl_shape_format(value->shape, got, sizeof got), fl_dtype_name(r->node->dtype),
                          fl_shape_format(r->node->attrs.shape, want, sizeof want));
        fl_rendezvous_recycle(d->rendezvous, value, fl_tensor_bytes(value));
        return -1;
    }
    unsigned char *old = b->data;
    size_t old_capacity = b->capacity;
    b->data = value->data;
    b->capacity = fl_tensor_bytes(value);
    value->data = old; /* the next value's memory */
    r->out->shape = value->shape;
    r->arrived = true;
    fl_rendezvous_recycle(d->rendezvous, value, old_capacity);
    return 0;
}

/* A take's average, if enough gradients came: 1, 0 or -1. */
static int try_take(fl_rendezvous_device *d, pending_recv *r)
{
    fl_tensor avg = {.dtype = FL_FLOAT32, .shape = r->node->attrs.shape, .data = ((rendezvous_buffer *)r->out->data)->data};
    int rc = fl_accumulator_kernel_try_take(d->container, r->node, r->num_required, &avg);
    if (rc == 1) {
        r->out->shape = avg.shape;
        r->arrived = true;
    }
    return rc;
}

/* A wait's step, once the accumulator's passed the local step: 1, 0 or -1. */
static int try_wait(fl_rendezvous_device *d, pending_recv *r)
{
    int32_t *step = (int32_t *)((rendezvous_buffer *)r->out->data)->data;
    int rc = fl_accumulator_kernel_try_wait(d->container, r->node, r->local_step, step);
    if (rc == 1) {
        r->out->shape = fl_shape_make(0);
        r->arrived = true;
    }
    return rc;
}

/* Takes what has arrived for the step's waiting recvs: how many, or -1. */
static int take_arrived(fl_rendezvous_device *d)
{
    int got = 0;
    for (int i = 0; i < d->nrecvs; i++) {
        pending_recv *r = &d->recvs[i];
        fl_tensor *value = NULL;
        if (r->arrived)
            continue;
        if (r->num_required > 0 || r->is_wait) {
            int rc = r->is_wait ? try_wait(d, r) : try_take(d, r);
            if (rc < 0)
                return -1;
            got += rc;
            continue;
        }
        int rc = fl_rendezvous_poll(d->rendezvous, d->step.step_id, r->node->attrs.edge_key, r->node->attrs.peer_task,
                                    &value);
        if (rc < 0 || (rc == 1 && land(d, r, value) != 0)) {
            fl_prefix_error("%s: ", r->node->name);
            return -1;
        }
        got += rc;
    }
    if (got > 0)
        d->quiet_since = fl_now_s();
    return got;
}

static const pending_recv *first_waiting(const fl_rendezvous_device *d)
{
    for (int i = 0; i < d->nrecvs; i++)
        if (!d->recvs[i].arrived)
            return &d->recvs[i];
    return NULL;
}

/* What r waits for, for messages: a value and its task, or a take's count. */
static void describe_wait(const pending_recv *r, char *what, size_t size)
{
    if (r->is_wait)
        snprintf(what, size, "accumulator %s's global step to pass %d (the chief's update: is the chief running?)",
                 r->node->attrs.edge_key, (int)r->local_step);
    else if (r->num_required > 0)
        snprintf(what, size, "%d gradients in accumulator %s (replicas_to_aggregate: are enough workers running?)",
                 r->num_required, r->node->attrs.edge_key);
    else
        snprintf(what, size, "%s from %s", r->node->attrs.edge_key, r->node->attrs.peer_task);
}

/* A take waits for gradients from other workers; a Recv waits for a peer
 * that may itself be waiting on a take. The Recv waits 5% longer, so the
 * task that gives up first, and whose error reaches the client as the
 * cause, is the one that names what was really missing. */
static double wait_limit_s(const fl_rendezvous_device *d, const pending_recv *r)
{
    return r->num_required > 0 || r->is_wait ? d->deadline_s : d->deadline_s * 1.05;
}

/* Nothing arrived: a cancelled client or a passed deadline ends the wait,
 * naming the value waited for longest and its task; every few seconds a
 * line says whom the step waits for. */
static int check_still_waiting(fl_rendezvous_device *d, const pending_recv *r)
{
    char what[FL_EDGE_KEY_LEN + FL_DEVICE_LEN + 96];
    describe_wait(r, what, sizeof what);
    unsigned long long step = (unsigned long long)d->step.step_id;
    double now = fl_now_s();
    if (d->step.cancelled && atomic_load(d->step.cancelled)) {
        fl_set_error_code(FL_ABORTED, "step %llu was cancelled while waiting for %s: its client has gone", step,
                          what);
        return -1;
    }
    /* A Recv learns of an abort when it polls; a take or a wait asks the
     * accumulator, which knows nothing of steps, so it is asked here. */
    if (fl_rendezvous_step_aborted(d->rendezvous, d->step.step_id)) {
        fl_set_error_code(FL_ABORTED, "step %llu was aborted while waiting for %s", step, what);
        return -1;
    }
    if (now - d->quiet_since >= wait_limit_s(d, r)) {
        fl_set_error_code(FL_DEADLINE_EXCEEDED, "gave up after %.0f s waiting for %s in step %llu (is that task "
                          "alive? FLOWLAB_TASK_DEADLINE sets the wait)", now - d->quiet_since,
                          what, step);
        return -1;
    }
    if (now >= d->next_line && d->step.log) {
        fprintf(d->step.log, "%s: step %llu waiting for %s (%.0f s so far)\n", d->step.log_prefix, step, what,
                now - d->quiet_since);
        fflush(d->step.log);
        d->next_line = now + LOG_EVERY_S;
    }
    return 0;
}

// [book:recv_wait_any]
/* The executor has nothing to start: wait until any value arrives (or a
 * short slice passes), never for one value alone, so that the value that
 * lets this task send what a peer needs is taken as soon as it comes. */
static int wait_any(void *impl)
{
    fl_rendezvous_device *d = impl;
    uint64_t seen = fl_rendezvous_arrivals(d->rendezvous);
    int got = take_arrived(d);
    if (got != 0)
        return got < 0 ? -1 : 0;
    const pending_recv *waiting = first_waiting(d);
    if (!waiting)
        return 0;
    if (check_still_waiting(d, waiting) != 0)
        return -1;
    fl_rendezvous_wait_arrival(d->rendezvous, seen, WAIT_SLICE_S);
    return 0;
}
// [end:recv_wait_any]

/* ---- marks and kernels ---- */

static void *mark(void *impl) { return (void *)((fl_rendezvous_device *)impl)->last; }

static int reached(void *impl, void *mark, bool block)
{
    fl_rendezvous_device *d = impl;
    uintptr_t m = (uintptr_t)mark;
    if (m == DONE)
        return 1;
    pending_recv *r = &d->recvs[m - 2];
    if (!r->arrived && take_arrived(d) < 0)
        return -1;
    while (block && !r->arrived) /* bounded: wait_any fails past the deadline */
        if (wait_any(d) != 0)
            return -1;
    return r->arrived ? 1 : 0;
}

static void release_mark(void *impl, void *mark) { (void)impl, (void)mark; } /* nothing was allocated */

static int wait_all(void *impl)
{
    fl_rendezvous_device *d = impl;
    for (int i = 0; i < d->nrecvs; i++)
        if (reached(d, (void *)(uintptr_t)(i + 2), true) != 1)
            return -1;
    return 0;
}

static pending_recv *register_recv(fl_rendezvous_device *d, const fl_node *n, fl_tensor *out, int num_required)
{
    if (d->nrecvs == d->capacity) {
        d->capacity = d->capacity ? 2 * d->capacity : 16;
        d->recvs = fl_xrealloc(d->recvs, (size_t)d->capacity * sizeof *d->recvs);
    }
    d->recvs[d->nrecvs] = (pending_recv){.node = n, .out = out, .num_required = num_required};
    d->last = (uintptr_t)d->nrecvs + 2;
    return &d->recvs[d->nrecvs++];
}

static int send(fl_rendezvous_device *d, const fl_node *n, const fl_tensor *in)
{
    fl_tensor value = {.dtype = in->dtype, .shape = in->shape, .data = ((rendezvous_buffer *)in->data)->data};
    d->last = DONE;
    if (!d->step.send) {
        fl_set_error_code(FL_FAILED_PRECONDITION, "%s: no step is running on this rendezvous", n->name);
        return -1;
    }
    return d->step.send(d->step.send_user, n->attrs.peer_task, d->step.step_id, n->attrs.edge_key, &value);
}

static fl_tensor host_view(const fl_tensor *in)
{
    return (fl_tensor){.dtype = in->dtype, .shape = in->shape, .data = ((rendezvous_buffer *)in->data)->data};
}

/* A take or a wait registers as a Recv does (a take needs at least one
 * gradient: TensorFlow's num_required); an apply or a set-step wakes the
 * task's partitions waiting on either. */
static int run_accumulator(fl_rendezvous_device *d, const fl_node *n, fl_tensor *const *in, fl_tensor *out)
{
    fl_tensor first = host_view(in[0]);
    int32_t value = *(const int32_t *)first.data;
    if (n->op == FL_OP_ACCUMULATOR_TAKE_GRADIENT) {
        register_recv(d, n, out, value > 0 ? value : 1);
        return 0;
    }
    if (n->op == FL_OP_ACCUMULATOR_WAIT_STEP) {
        pending_recv *r = register_recv(d, n, out, 0);
        r->is_wait = true, r->local_step = value;
        return 0;
    }
    d->last = DONE;
    fl_tensor second = n->ninputs > 1 ? host_view(in[1]) : first;
    int32_t *dropped = n->op == FL_OP_ACCUMULATOR_APPLY_GRADIENT ? (int32_t *)host_view(out).data : NULL;
    if (fl_accumulator_kernel_run(d->container, n, &first, &second, dropped) != 0)
        return -1;
    if (dropped && *dropped && d->step.stale_dropped)
        (*d->step.stale_dropped)++;
    fl_rendezvous_nudge(d->rendezvous);
    return 0;
}

static int run(void *impl, const fl_node *n, fl_tensor *const *in, fl_tensor *out, const fl_kernel_ctx *ctx)
{
    (void)ctx;
    if (fl_op_def_of(n->op)->sig.in_container)
        return run_accumulator(impl, n, in, out);
    if (n->op == FL_OP_RECV) {
        register_recv(impl, n, out, 0);
        return 0;
    }
    return send(impl, n, in[0]);
}

static const char *why_unavailable(void)
{
    return "a rendezvous device belongs to a task's partition (partition_exec.c), not to a backend list";
}

static const fl_backend rendezvous_backend = {
    .name = "rendezvous",
    .device_count = no_devices,
    .describe = describe,
    .open = not_opened,
    .close = not_closed,
    .alloc = buffer_alloc,
    .release = buffer_release,
    .copy_in = copy_in,
    .copy_out = copy_out,
    .has_kernel = has_kernel,
    .run = run,
    .wait = wait_all,
    .why_unavailable = why_unavailable,
    .marks = {.mark = mark, .reached = reached, .copy_out_now = copy_out_now, .release_mark = release_mark,
              .wait_any = wait_any},
    .host_memory = {.address_of = host_memory},
};

fl_rendezvous_device *fl_rendezvous_device_new(fl_rendezvous *r)
{
    fl_rendezvous_device *d = fl_xcalloc(1, sizeof *d);
    d->rendezvous = r;
    d->last = DONE;
    d->device = (fl_device){.backend = &rendezvous_backend, .impl = d};
    snprintf(d->device.name, sizeof d->device.name, "/rendezvous:0");
    return d;
}

void fl_rendezvous_device_free(fl_rendezvous_device *d)
{
    if (!d)
        return;
    free(d->recvs);
    free(d);
}

void fl_rendezvous_device_set_container(fl_rendezvous_device *d, fl_variable_container *c) { d->container = c; }

fl_device *fl_rendezvous_device_of(fl_rendezvous_device *d) { return &d->device; }

void fl_rendezvous_device_begin_step(fl_rendezvous_device *d, const fl_rendezvous_step *step)
{
    d->step = *step;
    d->nrecvs = 0;
    d->last = DONE;
    d->deadline_s = fl_task_deadline_s();
    d->quiet_since = fl_now_s();
    d->next_line = d->quiet_since + LOG_EVERY_S;
}
