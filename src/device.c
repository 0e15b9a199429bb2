/* device.c: the backend seam's optional groups (marks, tracing, variables by
 * name, host memory, copies within a device), each wrapped once with its
 * fallback, as ggml wraps an optional set_tensor_async with the synchronous
 * one. The executor, saver and readiness check call these and never test a
 * member for NULL. */
#include <string.h>

#include "device.h"

/* ---- marks: without them, the whole queue is the one mark ---- */

int fl_device_mark(fl_device *d, void **mark)
{
    *mark = NULL;
    if (!d->backend->marks.mark)
        return 0;
    *mark = d->backend->marks.mark(d->impl);
    return *mark ? 0 : -1;
}

int fl_device_reached(fl_device *d, void *mark, bool block)
{
    if (mark)
        return d->backend->marks.reached(d->impl, mark, block);
    if (!block)
        return 0;
    return d->backend->wait(d->impl) == 0 ? 1 : -1;
}

void fl_device_release_mark(fl_device *d, void *mark)
{
    if (mark)
        d->backend->marks.release_mark(d->impl, mark);
}

bool fl_device_waits_on_any(const fl_device *d) { return d->backend->marks.wait_any != NULL; }

int fl_device_wait_any(fl_device *d) { return d->backend->marks.wait_any(d->impl); }

/* The value is finished (every caller waits for its mark first), so where
 * the device's memory is the host's (a PoCL CPU device) the calling thread
 * copies it: a command would block on the device's own worker threads,
 * which the device's later ops need. */
int fl_device_copy_out_now(fl_device *d, void *host_dst, const void *src, size_t bytes)
{
    const fl_backend *b = d->backend;
    const void *in_host = fl_device_host_memory(d, src);
    if (in_host) {
        memcpy(host_dst, in_host, bytes);
        return 0;
    }
    if (b->marks.copy_out_now)
        return b->marks.copy_out_now(d->impl, host_dst, src, bytes);
    int rc = b->copy_out(d->impl, host_dst, src, bytes);
    return rc ? rc : b->wait(d->impl);
}

/* ---- tracing: without it, the host's clock around run() ---- */

int fl_device_set_tracing(fl_device *d, bool on)
{
    if (!d->backend->tracing.set_tracing || !d->backend->tracing.take_timings)
        return -1;
    return d->backend->tracing.set_tracing(d->impl, on);
}

int fl_device_take_timings(fl_device *d, fl_op_timing *out, int max)
{
    if (!d->backend->tracing.take_timings)
        return 0;
    return d->backend->tracing.take_timings(d->impl, out, max);
}

/* ---- variables by name: without them, the session's own buffer ---- */

int fl_device_variable_has_value(fl_device *d, const char *name, bool here)
{
    if (!d->backend->variables.has_value)
        return here ? 1 : 0;
    return d->backend->variables.has_value(d->impl, name);
}

int fl_device_read_variable(fl_device *d, const char *name, void *host_dst, const void *buffer, size_t bytes)
{
    if (!d->backend->variables.read)
        return d->backend->copy_out(d->impl, host_dst, buffer, bytes);
    return d->backend->variables.read(d->impl, name, host_dst, bytes);
}

int fl_device_write_variable(fl_device *d, const char *name, void *buffer, const fl_tensor *value)
{
    if (!d->backend->variables.write)
        return d->backend->copy_in(d->impl, buffer, value->data, fl_tensor_bytes(value));
    return d->backend->variables.write(d->impl, name, value);
}

/* ---- host memory: without it, only the host's buffers lie there ---- */

void *fl_device_host_memory(const fl_device *d, const void *buffer)
{
    if (d->is_host)
        return (void *)buffer;
    if (!d->backend->host_memory.address_of)
        return NULL;
    return d->backend->host_memory.address_of(d->impl, (void *)buffer);
}

void *fl_device_wrap_host_memory(fl_device *d, void *host, size_t bytes)
{
    if (d->is_host || !d->backend->host_memory.wrap || bytes == 0)
        return NULL;
    return d->backend->host_memory.wrap(d->impl, host, bytes);
}

void fl_device_unwrap(fl_device *d, void *buffer) { d->backend->host_memory.unwrap(d->impl, buffer); }

/* ---- copies within a device: without copy_now, copy and wait for all ---- */

bool fl_device_can_copy_within(const fl_device *d)
{
    return d->backend->device_copies.copy != NULL;
}

int fl_device_copy_within(fl_device *d, void *dst, const void *src, size_t bytes, bool now)
{
    const fl_backend_device_copies *c = &d->backend->device_copies;
    if (!c->copy) {
        fl_set_error_code(FL_UNIMPLEMENTED, "%s (%s) cannot copy between its own buffers: fetch its values "
                          "to the host instead", d->name, d->backend->name);
        return -1;
    }
    if (now && c->copy_now)
        return c->copy_now(d->impl, dst, src, bytes);
    int rc = c->copy(d->impl, dst, src, bytes);
    return rc || !now ? rc : d->backend->wait(d->impl);
}
