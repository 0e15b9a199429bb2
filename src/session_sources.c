/* session_sources.c: how a source gets its value in a run: a feed, copied
 * in or read where it lies; a constant or a variable, whose buffer lives as long as the session;
 * one of the task's container; another task's variable, pulled; a Recv, registered on the task's
 * rendezvous, whose value arrives when its sender sends it. */
#include <stdio.h>

#include "device.h"
#include "session_internal.h"

/* A Recv: a buffer on the rendezvous, as large as its shape where known (a
 * fed batch's -1 grows it when the value comes); its run registers it, and
 * its mark is reached when the value has arrived (backend_rendezvous.c). */
static int start_receiving(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    fl_tensor like = {.dtype = n->dtype, .shape = n->attrs.shape};
    size_t bytes = fl_shape_known(like.shape) ? fl_tensor_bytes(&like) : 1;
    if (fl_session_ensure_buffer(slot, bytes) != 0)
        return fl_session_fail(s, "%s: %s", n->name, fl_last_error());
    slot->value = (fl_tensor){.dtype = n->dtype, .shape = n->attrs.shape, .data = slot->buffer};
    fl_kernel_ctx ctx = {.seed = 0};
    if (slot->device->backend->run(slot->device->impl, n, NULL, &slot->value, &ctx) != 0)
        return fl_session_fail(s, "%s: %s", n->name, fl_last_error());
    return 0;
}

/* A variable held by another process (a ps task's, over the network): its
 * device has a kernel for the Variable op, a pull, started as soon as the
 * variable is issued when another device will read it or it is fetched, so
 * that the pulls of a step are in flight together. A variable held here has
 * no kernel: its buffer is its value. */
static int start_pulling_remote_variable(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    const fl_backend *b = slot->device->backend;
    if (n->op != FL_OP_VARIABLE || !(slot->crosses || slot->fetched) || !b->has_kernel(FL_OP_VARIABLE))
        return 0;
    fl_kernel_ctx ctx = {.seed = 0};
    if (fl_session_tracing(s)) /* the device times its pulls, from send to reply, from now on */
        fl_session_device_times_ops(s, slot->device);
    if (b->run(slot->device->impl, n, NULL, &slot->value, &ctx) != 0)
        return fl_session_fail(s, "%s: reading it from %s: %s", n->name, slot->device->name, fl_last_error());
    return 0;
}

int fl_session_run_source(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    const fl_tensor *fed = fl_session_fed(s, n->id);
    if (fed) {
        if (fl_session_read_feed_in_place(slot, fed) == 0)
            return 0;
        if (fl_session_ensure_node_buffer(s, n, slot, fed->dtype, fed->shape) != 0)
            return -1;
        slot->value = (fl_tensor){.dtype = fed->dtype, .shape = fed->shape, .data = slot->buffer};
        if (fed->device) /* on this device: fl_session_check_device_io */
            return fl_device_copy_within(slot->device, slot->buffer, fed->data, fl_tensor_bytes(fed), false);
        return slot->device->backend->copy_in(slot->device->impl, slot->buffer, fed->data,
                                              fl_tensor_bytes(fed));
    }
    if (n->op == FL_OP_RECV)
        return start_receiving(s, n);
    if (n->op == FL_OP_PLACEHOLDER) {
        char shape[64];
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT,
                                    "%s: placeholder %s %s was not fed; pass a value for it in the "
                                    "feeds of fl_session_run", n->name, fl_dtype_name(n->dtype),
                                    fl_shape_format(n->shape, shape, sizeof shape));
    }
    if (n->op == FL_OP_VARIABLE && s->container && slot->device->is_host)
        return fl_session_use_shared_variable(s, n);
    /* Variables and constants: one buffer for the session's lifetime. */
    if (!slot->buffer) {
        if (fl_session_ensure_node_buffer(s, n, slot, n->dtype, n->attrs.shape) != 0)
            return -1;
        slot->value = (fl_tensor){.dtype = n->dtype, .shape = n->attrs.shape, .data = slot->buffer};
        if (n->op == FL_OP_CONST)
            return slot->device->backend->copy_in(slot->device->impl, slot->buffer, n->value->data,
                                                  fl_tensor_bytes(n->value));
    }
    return start_pulling_remote_variable(s, n);
}
