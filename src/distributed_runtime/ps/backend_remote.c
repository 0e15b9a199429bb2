/* backend_remote.c: another task's device, behind the same seam as a GPU.
 * Its kernels are the state ops only: reading a variable sends a PULL,
 * Assign an INIT_VARIABLE (the variable's initializer) or an ASSIGN,
 * AssignAdd an ASSIGN_ADD and Apply* an APPLY, each returning at once; a
 * mark is a request id, and wait() waits for the replies. A buffer here is
 * a host copy of the value plus the name of the variable it stands for, so
 * the executor's copies in and out need no special case. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "remote_device.h"
#include "sync_replicas_optimizer.h"

typedef struct {
    char name[FL_WIRE_MAX_NAME + 1]; /* the variable it stands for; "" for a staged input */
    size_t bytes;
    uint32_t pending;                /* the request whose reply fills data (0: none) */
    unsigned char data[];
} remote_buffer;

static int remote_device_count(void) { return 0; } /* remote devices are found by name */

static int remote_describe(int index, fl_device_info *info)
{
    (void)index;
    memset(info, 0, sizeof *info);
    snprintf(info->description, sizeof info->description, "another task's device, over TCP");
    snprintf(info->backend, sizeof info->backend, "remote");
    return 0;
}

static void *remote_open(int index) { (void)index; return NULL; } /* fl_remote_device opens them */
static void remote_close(void *impl) { (void)impl; }

static void *remote_alloc(void *impl, size_t bytes)
{
    (void)impl;
    if (bytes > SIZE_MAX - sizeof(remote_buffer))
        return NULL;
    remote_buffer *b = calloc(1, sizeof *b + bytes); /* NULL: the session says RESOURCE_EXHAUSTED */
    if (!b)
        return NULL;
    b->bytes = bytes;
    return b;
}

static void remote_release(void *impl, void *buffer)
{
    (void)impl;
    free(buffer);
}

/* An input staged here (a gradient, an initial value) until the op that
 * sends it runs. */
static int remote_copy_in(void *impl, void *dst, const void *host_src, size_t bytes)
{
    (void)impl;
    memcpy(((remote_buffer *)dst)->data, host_src, bytes);
    return 0;
}

static int remote_copy_out(void *impl, void *host_dst, const void *src, size_t bytes)
{
    const remote_buffer *b = src;
    if (b->pending && fl_task_client_wait(fl_remote_client(impl), b->pending) != 0)
        return -1;
    memcpy(host_dst, b->data, bytes);
    return 0;
}

/* The executor copies to and from a device's buffer here directly. A value
 * read is final once its pull's reply is in: the session waits for that
 * (its mark) before it copies. */
static void *remote_host_memory(void *impl, void *buffer)
{
    (void)impl;
    return ((remote_buffer *)buffer)->data;
}

static bool remote_has_kernel(fl_op_kind op)
{
    switch (op) {
    case FL_OP_VARIABLE:
    case FL_OP_ASSIGN:
    case FL_OP_ASSIGN_ADD:
    case FL_OP_APPLY_GRADIENT_DESCENT:
    case FL_OP_APPLY_MOMENTUM:
    case FL_OP_APPLY_ADAM:
        return true;
    default:
        return false;
    }
}

/* The buffer of input i, named after the variable it holds. */
static remote_buffer *variable_buffer(const fl_node *n, fl_tensor *const *in, int i)
{
    remote_buffer *b = in[i]->data;
    if (!b->name[0])
        snprintf(b->name, sizeof b->name, "%s", n->inputs[i]->name);
    return b;
}

static fl_tensor staged(const fl_tensor *t)
{
    return (fl_tensor){.dtype = t->dtype, .shape = t->shape, .data = ((remote_buffer *)t->data)->data};
}

static fl_wire_optimizer_args optimizer_args(const fl_node *n, fl_tensor *const *in)
{
    fl_wire_optimizer_args o = {.learning_rate = n->attrs.learning_rate, .momentum = n->attrs.momentum,
                                .use_nesterov = n->attrs.use_nesterov, .beta1 = n->attrs.beta1,
                                .beta2 = n->attrs.beta2, .epsilon = n->attrs.epsilon};
    o.kind = n->op == FL_OP_APPLY_ADAM       ? FL_WIRE_ADAM
             : n->op == FL_OP_APPLY_MOMENTUM ? FL_WIRE_MOMENTUM
                                             : FL_WIRE_GRADIENT_DESCENT;
    o.nslots = n->ninputs - 2; /* the variable first, the gradient last */
    for (int i = 0; i < o.nslots; i++)
        snprintf(o.slots[i], sizeof o.slots[i], "%s", variable_buffer(n, in, 1 + i)->name);
    return o;
}

// [book:send_sync]
/* A synchronous update (chapter 4): counted toward this worker's step. The
 * global step's increment is followed by a WAIT_STEP, so the run ends only
 * when the step is over: the next run reads the updated variables. */
static uint32_t send_sync(fl_task_client *c, fl_sync_step *step, const fl_node *n, fl_tensor *const *in,
                          const char *name, const fl_tensor *last, int replicas_to_aggregate)
{
    fl_wire_sync sync = {fl_sync_step_now(step), (uint32_t)replicas_to_aggregate};
    if (n->op == FL_OP_ASSIGN)
        return fl_task_client_sync_assignment(c, FL_WIRE_SYNC_ASSIGN, &sync, name, last);
    if (n->op == FL_OP_APPLY_GRADIENT_DESCENT || n->op == FL_OP_APPLY_MOMENTUM || n->op == FL_OP_APPLY_ADAM) {
        fl_wire_optimizer_args o = optimizer_args(n, in);
        return fl_task_client_sync_apply(c, &sync, name, &o, last);
    }
    if (!fl_task_client_sync_assignment(c, FL_WIRE_SYNC_ASSIGN_ADD, &sync, name, last))
        return 0;
    uint32_t token = fl_task_client_wait_step(c, name, FL_WIRE_STEP_UNKNOWN, fl_sync_step_token_buffer(step));
    if (token)
        fl_sync_step_expect_token(step, c, token);
    return token;
}
// [end:send_sync]

// [book:send_op]
static uint32_t send_op(fl_remote_task *task, const fl_node *n, fl_tensor *const *in, fl_tensor *out)
{
    fl_task_client *c = task->client;
    if (n->op == FL_OP_VARIABLE) {
        remote_buffer *b = out->data;
        snprintf(b->name, sizeof b->name, "%s", n->name);
        return b->pending = fl_task_client_pull(c, b->name, b->data, b->bytes);
    }
    remote_buffer *var = variable_buffer(n, in, 0);
    fl_tensor last = staged(in[n->ninputs - 1]);
    if (n->op == FL_OP_ASSIGN && n->inputs[0]->initializer == n)
        return fl_task_client_init(c, var->name, &last, NULL);
    int replicas_to_aggregate = fl_sync_replicas_to_aggregate(n); /* 0: not synchronous */
    if (replicas_to_aggregate > 0)
        return send_sync(c, task->sync, n, in, var->name, &last, replicas_to_aggregate);
    if (n->op == FL_OP_ASSIGN)
        return fl_task_client_assign(c, var->name, &last);
    if (n->op == FL_OP_ASSIGN_ADD) /* the reply is the sum: the new global step */
        return var->pending = fl_task_client_assign_add(c, var->name, &last, var->data, var->bytes);
    fl_wire_optimizer_args o = optimizer_args(n, in);
    return fl_task_client_apply(c, var->name, &o, &last);
}
// [end:send_op]

static int remote_run(void *impl, const fl_node *n, fl_tensor *const *in, fl_tensor *out,
                      const fl_kernel_ctx *ctx)
{
    (void)ctx;
    fl_task_client *c = fl_remote_client(impl);
    uint32_t before = fl_task_client_last_id(c);
    double sent = fl_now_us();
    if (!send_op(impl, n, in, out))
        return -1;
    fl_task_client_name_sender(c, before, n->name); /* a lost connection names the op, not the device */
    fl_remote_trace_sent(((fl_remote_task *)impl)->trace, n->id, fl_task_client_last_id(c), sent);
    return 0;
}

/* A traced run's ops here last from their request's send to its reply. */
static int remote_set_tracing(void *impl, bool on)
{
    fl_remote_trace_set(((fl_remote_task *)impl)->trace, on);
    return 0;
}

static int remote_take_timings(void *impl, fl_op_timing *out, int max)
{
    return fl_remote_trace_take(((fl_remote_task *)impl)->trace, out, max);
}

static int remote_wait(void *impl)
{
    fl_task_client *c = fl_remote_client(impl);
    return fl_task_client_wait(c, fl_task_client_last_id(c));
}

/* ---- variables by name: the saver and the readiness check ---- */

static int remote_has_value(void *impl, const char *name)
{
    fl_task_client *c = fl_remote_client(impl);
    bool has = false;
    uint32_t id = fl_task_client_is_initialized(c, name, &has);
    return id && fl_task_client_wait(c, id) == 0 ? has : -1;
}

static int remote_read(void *impl, const char *name, void *host_dst, size_t bytes)
{
    fl_task_client *c = fl_remote_client(impl);
    uint32_t id = fl_task_client_pull(c, name, host_dst, bytes);
    return id && fl_task_client_wait(c, id) == 0 ? 0 : -1;
}

/* The first value if it has none (INIT_VARIABLE), else an ASSIGN. */
static int remote_write(void *impl, const char *name, const fl_tensor *value)
{
    fl_task_client *c = fl_remote_client(impl);
    bool already = false;
    uint32_t id = fl_task_client_init(c, name, value, &already);
    if (!id || fl_task_client_wait(c, id) != 0)
        return -1;
    if (!already)
        return 0;
    id = fl_task_client_assign(c, name, value);
    return id && fl_task_client_wait(c, id) == 0 ? 0 : -1;
}

static const char *remote_why_unavailable(void)
{
    return "a remote device is another task of the cluster: give the session the cluster "
           "(fl_session_options.cluster)";
}

/* ---- marks: request ids ----
 * A mark is the id of the last request sent, carried in the pointer itself
 * (plus one: NULL means an error), so marking a step allocates nothing. */

static void *remote_mark(void *impl)
{
    return (void *)((uintptr_t)fl_task_client_last_id(fl_remote_client(impl)) + 1);
}

static int remote_reached(void *impl, void *mark, bool block)
{
    fl_task_client *c = fl_remote_client(impl);
    uint32_t id = (uint32_t)((uintptr_t)mark - 1);
    if (block)
        return fl_task_client_wait(c, id) == 0 ? 1 : -1;
    return fl_task_client_done(c, id);
}

static void remote_release_mark(void *impl, void *mark)
{
    (void)impl;
    (void)mark; /* nothing was allocated */
}

const fl_backend fl_remote_backend = {
    .name = "remote",
    .device_count = remote_device_count,
    .describe = remote_describe,
    .open = remote_open,
    .close = remote_close,
    .alloc = remote_alloc,
    .release = remote_release,
    .copy_in = remote_copy_in,
    .copy_out = remote_copy_out,
    .has_kernel = remote_has_kernel,
    .run = remote_run,
    .wait = remote_wait,
    .why_unavailable = remote_why_unavailable,
    .marks = {
        .mark = remote_mark,
        .reached = remote_reached,
        .copy_out_now = remote_copy_out,
        .release_mark = remote_release_mark,
    },
    .variables = {
        .has_value = remote_has_value,
        .read = remote_read,
        .write = remote_write,
    },
    .host_memory = {.address_of = remote_host_memory},
    .tracing = {.set_tracing = remote_set_tracing, .take_timings = remote_take_timings},
};
