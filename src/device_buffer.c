/* device_buffer.c: a program's own buffers on a device (flowlab.h's
 * fl_device_buffer_*), so that a lab or a test can use fetches and feeds that
 * stay on a device without CUDA or OpenCL code of its own. */
#include <stdio.h>

#include "device.h"

fl_device *fl_device_named(const char *name)
{
    fl_device_name parsed;
    char canonical[64], list[256];
    if (!name || fl_parse_device(name, &parsed, canonical, sizeof canonical) != 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "'%s' is not a device name; write it as /gpu:0 or /cpu:0",
                          name ? name : "(null)");
        return NULL;
    }
    if (parsed.job[0] || parsed.task >= 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s is a cluster task's device; name one of this process's "
                          "(%s)", canonical, fl_device_list(list, sizeof list));
        return NULL;
    }
    if (parsed.is_gpu)
        return fl_accelerator(parsed.index); /* NOT_FOUND naming the devices when it is not there */
    if (parsed.index == 0)
        return fl_host_device();
    fl_set_error_code(FL_NOT_FOUND, "there is no %s; the devices are %s", canonical,
                      fl_device_list(list, sizeof list));
    return NULL;
}

void *fl_device_buffer_alloc(const char *device, size_t bytes)
{
    fl_device *d = fl_device_named(device);
    void *buffer = d ? fl_device_alloc(d, bytes ? bytes : 1) : NULL;
    if (d && !buffer)
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "no buffer of %zu bytes on %s (out of its memory?)", bytes,
                          d->name);
    return buffer;
}

void fl_device_buffer_free(const char *device, void *buffer)
{
    fl_device *d = buffer ? fl_device_named(device) : NULL;
    if (d)
        d->backend->release(d->impl, buffer);
}

/* A copy with nothing at one of its ends is the caller's mistake, said
 * before any device is asked. */
static bool have_both_ends(const char *caller, const void *buffer, const void *host, size_t bytes)
{
    if (bytes == 0 || (buffer && host))
        return true;
    fl_set_error_code(FL_INVALID_ARGUMENT, "%s: the %s is NULL", caller, buffer ? "host memory" : "device buffer");
    return false;
}

/* The copy is enqueued, so the device's queue is waited for. */
int fl_device_buffer_read(const char *device, const void *buffer, void *host, size_t bytes)
{
    if (!have_both_ends("fl_device_buffer_read", buffer, host, bytes))
        return -1;
    fl_device *d = fl_device_named(device);
    if (!d)
        return -1;
    int rc = d->backend->copy_out(d->impl, host, buffer, bytes);
    return rc ? rc : d->backend->wait(d->impl);
}

int fl_device_buffer_write(const char *device, void *buffer, const void *host, size_t bytes)
{
    if (!have_both_ends("fl_device_buffer_write", buffer, host, bytes))
        return -1;
    fl_device *d = fl_device_named(device);
    if (!d)
        return -1;
    int rc = d->backend->copy_in(d->impl, buffer, host, bytes);
    return rc ? rc : d->backend->wait(d->impl);
}
