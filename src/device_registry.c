/* device_registry.c: which devices exist and what they are called.
 * "/cpu:0" is the host; "/gpu:N" is the N-th device of the active
 * accelerator backend, chosen by FLOWLAB_BACKEND=opencl|cuda|host or else
 * automatically (CUDA when it has a device, else OpenCL). Devices are opened
 * on first use and stay open for the life of the process. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

#define FL_MAX_ACCELERATORS 16

static const fl_backend *const accelerator_backends[] = {
#ifdef FL_HAVE_CUDA
    &fl_cuda_backend,
#endif
#ifdef FL_HAVE_OPENCL
    &fl_opencl_backend,
#endif
    NULL,
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool chosen;
static const fl_backend *active;     /* NULL: no accelerators */
static char why_none[FL_ERROR_LEN]; /* said when /gpu:N is asked for and none exist */
static fl_device host_device;
static fl_device accelerators[FL_MAX_ACCELERATORS];

static const fl_backend *backend_named(const char *name)
{
    for (int i = 0; accelerator_backends[i]; i++)
        if (strcmp(accelerator_backends[i]->name, name) == 0)
            return accelerator_backends[i];
    return NULL;
}

/* Every built-in backend's reason, so that the hint fits this machine: a
 * CUDA build on a laptop without NVIDIA's driver also says why PoCL is not
 * there ("...; no OpenCL platform found; install PoCL: ..."). */
static void say_why_none_is_available(void)
{
    snprintf(why_none, sizeof why_none, "this flowlab was built without an accelerator backend");
    for (int i = 0; accelerator_backends[i]; i++) {
        size_t used = i == 0 ? 0 : strlen(why_none);
        snprintf(why_none + used, sizeof why_none - used, "%s%s", i == 0 ? "" : "; ",
                 accelerator_backends[i]->why_unavailable());
    }
}

static void choose_backend(void)
{
    const char *wanted = getenv("FLOWLAB_BACKEND");
    if (wanted && wanted[0] && strcmp(wanted, "host") != 0) {
        active = backend_named(wanted);
        if (!active)
            snprintf(why_none, sizeof why_none, "FLOWLAB_BACKEND=%s is not a backend built into this "
                     "flowlab (use opencl or cuda, or unset it)", wanted);
        else if (active->device_count() == 0)
            snprintf(why_none, sizeof why_none, "%s", active->why_unavailable());
        return;
    }
    if (wanted && strcmp(wanted, "host") == 0) {
        snprintf(why_none, sizeof why_none, "FLOWLAB_BACKEND=host turns accelerators off");
        return;
    }
    for (int i = 0; accelerator_backends[i]; i++)
        if (accelerator_backends[i]->device_count() > 0) {
            active = accelerator_backends[i];
            return;
        }
    say_why_none_is_available();
}

static void ensure_chosen(void)
{
    pthread_mutex_lock(&lock);
    if (!chosen) {
        host_device.backend = &fl_host_backend;
        host_device.impl = fl_host_backend.open(0);
        host_device.is_host = true;
        strcpy(host_device.name, "/cpu:0");
        choose_backend();
        chosen = true;
    }
    pthread_mutex_unlock(&lock);
}

fl_device *fl_host_device(void)
{
    ensure_chosen();
    return &host_device;
}

int fl_accelerator_count(void)
{
    ensure_chosen();
    if (!active)
        return 0;
    int n = active->device_count();
    return n < FL_MAX_ACCELERATORS ? n : FL_MAX_ACCELERATORS;
}

fl_device *fl_accelerator(int index)
{
    char list[256];
    int count = fl_accelerator_count();
    if (index < 0 || index >= count) {
        char why[FL_ERROR_LEN + 4] = "";
        if (why_none[0])
            snprintf(why, sizeof why, " (%s)", why_none);
        fl_set_error_code(FL_NOT_FOUND,
                          "there is no /gpu:%d; the devices are %s%s", index, fl_device_list(list, sizeof list), why);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    fl_device *d = &accelerators[index];
    if (!d->impl) {
        d->backend = active;
        d->index = index;
        snprintf(d->name, sizeof d->name, "/gpu:%d", index);
        d->impl = active->open(index);
    }
    pthread_mutex_unlock(&lock);
    if (!d->impl) {
        fl_set_error_code(FL_INTERNAL,
                          "/gpu:%d (%s) could not be opened: %s", index, active->name, active->why_unavailable());
        return NULL;
    }
    return d;
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
        fl_host_backend.describe(0, &out[count++]);
    for (int i = 0; i < fl_accelerator_count() && count < max; i++) {
        active->describe(i, &out[count]);
        snprintf(out[count].name, sizeof out[count].name, "/gpu:%d", i);
        count++;
    }
    if (fl_accelerator_count() == 0)
        fl_set_error_code(FL_NOT_FOUND, "%s", why_none);
    return count;
}
