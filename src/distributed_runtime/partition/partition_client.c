/* partition_client.c: the client's requests to a task server for in-graph
 * replication across tasks. Each encodes its frame on the connection
 * (task_client.c queues it and sends it), then waits for the reply, which the
 * connection's reader thread hands over whole (take_* below). */
#include <stdlib.h>
#include <string.h>

#include "partition_def.h"
#include "partition_client.h"
#include "runtime.h"

/* A value this big leaves by reference, not copied into the frame: its
 * owner keeps it until it is out (fl_partition_send_tensor). */
#define LEND_BYTES ((size_t)64 << 10)

/* One request's outcome, filled on the connection's reader thread. */
typedef fl_partition_call outcome;

static void failed(outcome *o, fl_error_code code, const char *fmt, const char *detail)
{
    o->code = code;
    snprintf(o->error, sizeof o->error, fmt, detail);
}

/* PARTITION_DONE's values into new tensors, one per fetch, and its trace
 * kept: the reply's message goes with the connection's next reply. */
static void take_values(const fl_wire_partition_done *done, outcome *o)
{
    if (done->count != o->nfetches)
        return failed(o, FL_DATA_LOSS, "%s", "PARTITION_DONE: not one value per fetch");
    for (int i = 0; i < done->count; i++) {
        o->outputs[i] = fl_tensor_new(done->values[i].dtype, done->values[i].shape);
        fl_wire_tensor_read(&done->values[i], o->outputs[i]->data);
    }
    if (o->trace)
        fl_wire_step_trace_copy(&done->trace, o->trace);
}

static void take_reply(const fl_wire_frame *f, const fl_wire_message *m, void *user)
{
    outcome *o = user;
    (void)f; /* the message holds all: PARTITION_DONE's values lie in its arena */
    o->replied_us = fl_now_us();
    if (!m) /* the connection was lost first: fl_task_client_wait says how */
        failed(o, FL_UNAVAILABLE, "%s", "the connection was lost");
    else if (m->type == FL_WIRE_ERROR)
        failed(o, fl_wire_error_meaning(m->u.error.code), "%s", m->u.error.message);
    else if (m->type == FL_WIRE_PARTITION_REGISTERED)
        o->number = m->u.number;
    else if (m->type == FL_WIRE_PARTITION_DONE)
        take_values(&m->u.done, o);
    if (o->replied)
        o->replied(o->user);
}

/* Waits for the reply to o's request: 0, or -1 with an error naming the task. */
static int await_reply(fl_task_client *c, fl_wire_type type, outcome *o)
{
    if (fl_task_client_wait(c, o->id) != 0)
        return -1;
    if (o->code == FL_OK)
        return 0;
    const char *peer = fl_task_client_peer(c);
    if (strncmp(o->error, peer, strlen(peer)) == 0) /* its words name it already */
        fl_set_error_code(o->code, "%s", o->error);
    else
        fl_set_error_code(o->code, "%s refused %s: %s", peer, fl_wire_type_name(type), o->error);
    return -1;
}

/* Queues what the caller encoded and waits for its reply. */
static int finish(fl_task_client *c, int encoded, uint32_t id, fl_wire_type type, outcome *o, const char *what)
{
    o->id = fl_task_client_finish_taking(c, encoded, id, type, take_reply, o, what);
    return o->id == 0 ? -1 : await_reply(c, type, o);
}

int fl_partition_register(fl_task_client *c, const fl_graph_partition *p, uint64_t *handle)
{
    fl_wire_buf graph = {0};
    if (fl_partition_def_encode(p, &graph) != 0)
        return -1;
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_register_partition(out, id, graph.data, graph.len);
    fl_wire_buf_free(&graph);
    outcome o = {0};
    char what[64];
    snprintf(what, sizeof what, "partition of /job:%s/task:%d", p->job, p->task);
    if (finish(c, rc, id, FL_WIRE_REGISTER_PARTITION, &o, what) != 0)
        return -1;
    *handle = o.number;
    return 0;
}

int fl_partition_run_start(fl_task_client *c, uint64_t handle, const fl_partition_run *run, fl_partition_call *call)
{
    for (int i = 0; i < run->nfetches; i++)
        call->outputs[i] = NULL;
    call->nfetches = run->nfetches;
    if (call->trace)
        memset(call->trace, 0, sizeof *call->trace);
    fl_wire_name_list lists[2] = {{run->nfetches, run->fetch_names}, {run->ntargets, run->target_names}};
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_run_partition(out, id, handle, run->step_id, call->trace ? FL_WIRE_RUN_TRACE : 0,
                                       run->nfeeds, run->feed_names, run->feed_values, lists);
    call->id = fl_task_client_finish_taking(c, rc, id, FL_WIRE_RUN_PARTITION, take_reply, call, "partition");
    return call->id == 0 ? -1 : 0;
}

int fl_partition_run_finish(fl_task_client *c, fl_partition_call *call)
{
    if (await_reply(c, FL_WIRE_RUN_PARTITION, call) == 0)
        return 0;
    for (int i = 0; i < call->nfetches; i++) {
        fl_tensor_free(call->outputs[i]);
        call->outputs[i] = NULL;
    }
    return -1;
}

int fl_partition_run_remote(fl_task_client *c, uint64_t handle, const fl_partition_run *run, fl_tensor **outputs,
                            fl_wire_step_trace *trace)
{
    fl_partition_call call = {.outputs = outputs, .trace = trace};
    if (fl_partition_run_start(c, handle, run, &call) != 0)
        return -1;
    return fl_partition_run_finish(c, &call);
}

/* ABORT_STEP and DEREGISTER_PARTITION: one number, answered by OK; queued for o (0 or -1). */
static int queue_number(fl_task_client *c, fl_wire_type type, uint64_t number, outcome *o)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_number(out, type, id, number);
    o->id = fl_task_client_finish_taking(c, rc, id, type, take_reply, o, fl_wire_type_name(type));
    return o->id == 0 ? -1 : 0;
}

int fl_partition_abort_start(fl_task_client *c, uint64_t step_id, fl_partition_call *call)
{
    return queue_number(c, FL_WIRE_ABORT_STEP, step_id, call);
}

int fl_partition_abort_step(fl_task_client *c, uint64_t step_id)
{
    outcome o = {0};
    return queue_number(c, FL_WIRE_ABORT_STEP, step_id, &o) != 0 ? -1 : await_reply(c, FL_WIRE_ABORT_STEP, &o);
}

int fl_partition_deregister(fl_task_client *c, uint64_t handle)
{
    outcome o = {0};
    return queue_number(c, FL_WIRE_DEREGISTER_PARTITION, handle, &o) != 0
               ? -1 : await_reply(c, FL_WIRE_DEREGISTER_PARTITION, &o);
}

uint32_t fl_partition_send_tensor(fl_task_client *c, uint64_t step_id, const char *key, const fl_tensor *value)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_tensor_bytes(value) >= LEND_BYTES ? fl_wire_put_send_tensor_head(out, id, step_id, key, value)
                                                  : fl_wire_put_send_tensor(out, id, step_id, key, value);
    return fl_task_client_finish(c, rc, id, FL_WIRE_SEND_TENSOR, NULL, key);
}
