/* session_buffers.c: the buffer that holds a node's value on its device,
 * made the first time a run needs it and kept between runs (grown when a
 * value outgrows it), so that a warm step allocates nothing. */
#include "device.h"
#include "session_internal.h"

void fl_session_release_buffer(fl_slot *slot)
{
    if (slot->buffer)
        slot->device->backend->release(slot->device->impl, slot->buffer);
    slot->buffer = NULL;
    slot->capacity = 0;
}

int fl_session_ensure_buffer(fl_slot *slot, size_t bytes)
{
    if (bytes <= slot->capacity)
        return 0;
    if (fl_check_tensor_bytes(bytes) != 0)
        return -1;
    fl_session_release_buffer(slot);
    slot->buffer = fl_device_alloc(slot->device, bytes);
    if (!slot->buffer) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "%s has no room for %zu bytes (a tensor may take up to %zu: "
                          "FLOWLAB_MAX_TENSOR_BYTES, fl_set_max_tensor_bytes)", slot->device->name, bytes,
                          fl_max_tensor_bytes());
        return -1;
    }
    slot->capacity = bytes;
    return 0;
}

int fl_session_ensure_node_buffer(fl_session *s, const fl_node *n, fl_slot *slot, fl_dtype dtype, fl_shape shape)
{
    char text[64];
    if (fl_session_ensure_buffer(slot, fl_tensor_bytes(&(fl_tensor){.dtype = dtype, .shape = shape})) == 0)
        return 0;
    return fl_session_fail(s, "%s: its output, %s %s, %s", n->name, fl_dtype_name(dtype),
                           fl_shape_format(shape, text, sizeof text), fl_last_error());
}
