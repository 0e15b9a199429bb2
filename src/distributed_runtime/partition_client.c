/* partition_client.c: the client's requests to a task server for in-graph
 * replication across tasks. Each encodes its frame on the connection
 * (ps_client.c queues it and sends it), then waits for the reply, which the
 * connection's reader thread hands over whole (take_* below). */
#include <stdlib.h>
#include <string.h>

#include "graph_wire.h"
#include "partition_client.h"
#include "runtime.h"

/* One request's outcome, filled on the connection's reader thread. */
typedef struct {
    fl_error_code code;
    char error[FL_WIRE_MAX_MESSAGE + 128];
    uint64_t number;      /* PARTITION_REGISTERED's handle */
    fl_tensor **outputs;  /* PARTITION_DONE's values */
    int nfetches;
    fl_wire_step_trace *trace; /* its trace field, when asked for */
} outcome;

static void failed(outcome *o, fl_error_code code, const char *fmt, const char *detail)
{
    o->code = code;
    snprintf(o->error, sizeof o->error, fmt, detail);
}

/* PARTITION_DONE's values into new tensors, one per fetch. */
static void take_values(const fl_wire_frame *f, outcome *o)
{
    fl_wire_tensor *values;
    int n;
    fl_status why = {0};
    if (fl_wire_parse_partition_done(f, &values, &n, o->trace, &why) != 0)
        return failed(o, why.code, "%s", why.message);
    if (n != o->nfetches) {
        free(values);
        return failed(o, FL_DATA_LOSS, "%s", "PARTITION_DONE: not one value per fetch");
    }
    for (int i = 0; i < n; i++) {
        o->outputs[i] = fl_tensor_new(values[i].dtype, values[i].shape);
        fl_wire_tensor_read(&values[i], o->outputs[i]->data);
    }
    free(values);
}

static void take_reply(const fl_wire_frame *f, const fl_wire_message *m, void *user)
{
    outcome *o = user;
    if (m->type == FL_WIRE_ERROR)
        failed(o, fl_wire_error_meaning(m->u.error.code), "%s", m->u.error.message);
    else if (m->type == FL_WIRE_PARTITION_REGISTERED)
        o->number = m->u.number;
    else if (m->type == FL_WIRE_PARTITION_DONE)
        take_values(f, o);
}

/* Sends what the caller encoded, waits for its reply; 0, or -1 with an
 * error naming the task. */
static int finish(fl_ps_client *c, int encoded, uint32_t id, fl_wire_type type, outcome *o, const char *what)
{
    id = fl_ps_client_finish_taking(c, encoded, id, type, take_reply, o, what);
    if (id == 0 || fl_ps_client_wait(c, id) != 0)
        return -1;
    if (o->code == FL_OK)
        return 0;
    fl_set_error_code(o->code, "%s refused %s: %s", fl_ps_client_peer(c), fl_wire_type_name(type), o->error);
    return -1;
}

int fl_partition_register(fl_ps_client *c, const fl_graph_partition *p, uint64_t *handle)
{
    fl_wire_buf graph = {0};
    if (fl_graph_wire_encode(p, &graph) != 0)
        return -1;
    uint32_t id;
    fl_wire_buf *out = fl_ps_client_begin(c, &id);
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

int fl_partition_run_remote(fl_ps_client *c, uint64_t handle, const fl_partition_run *run, fl_tensor **outputs,
                            fl_wire_step_trace *trace)
{
    for (int i = 0; i < run->nfetches; i++)
        outputs[i] = NULL;
    fl_wire_name_list lists[2] = {{run->nfetches, run->fetch_names}, {run->ntargets, run->target_names}};
    outcome o = {.outputs = outputs, .nfetches = run->nfetches, .trace = trace};
    if (trace)
        memset(trace, 0, sizeof *trace);
    uint32_t id;
    fl_wire_buf *out = fl_ps_client_begin(c, &id);
    int rc = fl_wire_put_run_partition(out, id, handle, run->step_id, trace ? FL_WIRE_RUN_TRACE : 0, run->nfeeds,
                                       run->feed_names, run->feed_values, lists);
    if (finish(c, rc, id, FL_WIRE_RUN_PARTITION, &o, "partition") == 0)
        return 0;
    for (int i = 0; i < run->nfetches; i++) {
        fl_tensor_free(outputs[i]);
        outputs[i] = NULL;
    }
    return -1;
}

/* ABORT_STEP and DEREGISTER_PARTITION: one number, answered by OK. */
static int send_number(fl_ps_client *c, fl_wire_type type, uint64_t number)
{
    uint32_t id;
    fl_wire_buf *out = fl_ps_client_begin(c, &id);
    int rc = fl_wire_put_number(out, type, id, number);
    outcome o = {0};
    return finish(c, rc, id, type, &o, fl_wire_type_name(type));
}

int fl_partition_abort_step(fl_ps_client *c, uint64_t step_id)
{
    return send_number(c, FL_WIRE_ABORT_STEP, step_id);
}

int fl_partition_deregister(fl_ps_client *c, uint64_t handle)
{
    return send_number(c, FL_WIRE_DEREGISTER_PARTITION, handle);
}

uint32_t fl_partition_send_tensor(fl_ps_client *c, uint64_t step_id, const char *key, const fl_tensor *value)
{
    uint32_t id;
    fl_wire_buf *out = fl_ps_client_begin(c, &id);
    int rc = fl_wire_put_send_tensor(out, id, step_id, key, value);
    return fl_ps_client_finish(c, rc, id, FL_WIRE_SEND_TENSOR, NULL, 0, NULL, key);
}
