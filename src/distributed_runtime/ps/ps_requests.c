/* ps_requests.c: the requests a worker sends a ps task, one function per
 * frame type: each encodes its frame into the connection's buffer and hands
 * it to task_client.c, which queues it for its reply and puts it on the wire. */
#include "distributed_runtime/transport/task_client.h"

uint32_t fl_task_client_init(fl_task_client *c, const char *name, const fl_tensor *value, bool *already)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_init_variable(out, id, name, value);
    return fl_task_client_finish(c, rc, id, FL_WIRE_INIT_VARIABLE, NULL, 0, already, name);
}

uint32_t fl_task_client_pull(fl_task_client *c, const char *name, void *dst, size_t bytes)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_pull(out, id, name);
    return fl_task_client_finish(c, rc, id, FL_WIRE_PULL, dst, bytes, NULL, name);
}

uint32_t fl_task_client_assign(fl_task_client *c, const char *name, const fl_tensor *value)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_assign(out, id, name, value);
    return fl_task_client_finish(c, rc, id, FL_WIRE_ASSIGN, NULL, 0, NULL, name);
}

uint32_t fl_task_client_assign_add(fl_task_client *c, const char *name, const fl_tensor *delta, void *dst,
                                 size_t bytes)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_assign_add(out, id, name, delta);
    return fl_task_client_finish(c, rc, id, FL_WIRE_ASSIGN_ADD, dst, bytes, NULL, name);
}

uint32_t fl_task_client_apply(fl_task_client *c, const char *name, const fl_wire_optimizer_args *opt,
                            const fl_tensor *grad)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_apply(out, id, name, opt, grad);
    return fl_task_client_finish(c, rc, id, FL_WIRE_APPLY, NULL, 0, NULL, name);
}

uint32_t fl_task_client_sync_apply(fl_task_client *c, const fl_wire_sync *sync, const char *name,
                                 const fl_wire_optimizer_args *opt, const fl_tensor *grad)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_sync_apply(out, id, sync, name, opt, grad);
    return fl_task_client_finish_sync(c, rc, id, FL_WIRE_SYNC_APPLY, name, sync->step);
}

uint32_t fl_task_client_sync_assignment(fl_task_client *c, fl_wire_type type, const fl_wire_sync *sync,
                                      const char *name, const fl_tensor *value)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_sync_assignment(out, type, id, sync, name, value);
    return fl_task_client_finish_sync(c, rc, id, type, name, sync->step);
}

uint32_t fl_task_client_wait_step(fl_task_client *c, const char *name, uint64_t step, void *dst)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_wait_step(out, id, name, step);
    return fl_task_client_finish(c, rc, id, FL_WIRE_WAIT_STEP, dst, 4, NULL, name);
}

uint32_t fl_task_client_is_initialized(fl_task_client *c, const char *name, bool *has_value)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_is_initialized(out, id, name);
    return fl_task_client_finish(c, rc, id, FL_WIRE_IS_INITIALIZED, NULL, 0, has_value, name);
}

int fl_task_client_goodbye(fl_task_client *c)
{
    uint32_t id;
    fl_wire_buf *out = fl_task_client_begin(c, &id);
    int rc = fl_wire_put_goodbye(out, id);
    id = fl_task_client_finish(c, rc, id, FL_WIRE_GOODBYE, NULL, 0, NULL, NULL);
    return id ? fl_task_client_wait(c, id) : -1;
}

