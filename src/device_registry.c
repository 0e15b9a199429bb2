/* device_registry.c: which devices exist and what they are called.
 * "/cpu:0" is the host; "/gpu:N" is the N-th device of the active
 * accelerator backend. Devices are opened on first use and kept open. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "device.h"

static fl_device host_device;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void open_host(void)
{
    host_device.backend = &fl_host_backend;
    host_device.impl = fl_host_backend.open(0);
    host_device.index = 0;
    host_device.is_host = true;
    strcpy(host_device.name, "/cpu:0");
}

fl_device *fl_host_device(void)
{
    pthread_once(&host_once, open_host);
    return &host_device;
}

int fl_accelerator_count(void) { return 0; }

fl_device *fl_accelerator(int index)
{
    char list[256];
    fl_set_error("there is no /gpu:%d; the devices are %s", index, fl_device_list(list, sizeof list));
    return NULL;
}

const char *fl_device_list(char *buf, size_t len)
{
    snprintf(buf, len, "/cpu:0");
    for (int i = 0; i < fl_accelerator_count(); i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, ", /gpu:%d", i);
    }
    return buf;
}

void *fl_device_alloc(fl_device *d, size_t bytes)
{
    d->allocations++;
    return d->backend->alloc(d->impl, bytes);
}

int fl_list_devices(fl_device_info *out, int max)
{
    int count = 0;
    if (count < max)
        fl_host_backend.describe(0, &out[count]);
    count++;
    return count < max ? count : max;
}
