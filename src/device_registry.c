/* device_registry.c: which devices exist and what they are called.
 * "/cpu:0" is the host; "/gpu:N" is the N-th device of the active
 * accelerator backend, chosen by FLOWLAB_BACKEND=opencl|cuda|host or else
 * automatically (the first backend of the build's list that has a device:
 * CUDA, else OpenCL). Devices are opened on first use and stay open for the
 * life of the process. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_entry.h"

#define FL_MAX_ACCELERATORS 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool chosen;
static const fl_backend *active;     /* NULL: no accelerators */
static char why_none[FL_ERROR_LEN]; /* said when /gpu:N is asked for and none exist */
static fl_device host_device;
static fl_device accelerators[FL_MAX_ACCELERATORS];

static const fl_backend_entry *entry_named(const char *name)
{
    for (int i = 0; fl_backend_entries[i]; i++)
        if (strcmp(fl_backend_entries[i]->name, name) == 0)
            return fl_backend_entries[i];
    return NULL;
}

/* The entry's table, opening its module only when a driver answers, so that
 * a machine without the hardware never maps the module's libraries. NULL
 * with why in st when there is none. */
static const fl_backend *backend_of(const fl_backend_entry *e, fl_status *st)
{
    if (e->linked)
        return e->linked;
    if (!e->driver_answers(st))
        return NULL;
    return fl_backend_module_open(e, st);
}

/* The entry's table when it has a device; else appends why not to why_none. */
static const fl_backend *usable_backend(const fl_backend_entry *e)
{
    fl_status why = {0};
    const fl_backend *b = backend_of(e, &why);
    if (b && b->device_count() > 0)
        return b;
    size_t used = strlen(why_none);
    snprintf(why_none + used, sizeof why_none - used, "%s%s", used ? "; " : "", b ? b->why_unavailable() : why.message);
    return NULL;
}

/* Every built-in backend's reason, so that the hint fits this machine: a
 * CUDA build on a laptop without NVIDIA's driver also says why PoCL is not
 * there ("...; no OpenCL platform found; install PoCL: ..."). */
static void choose_automatically(void)
{
    why_none[0] = '\0';
    for (int i = 0; fl_backend_entries[i] && !active; i++)
        active = usable_backend(fl_backend_entries[i]);
    if (active)
        why_none[0] = '\0'; /* the reasons of the backends passed over do not matter */
    else if (!fl_backend_entries[0])
        snprintf(why_none, sizeof why_none, "this flowlab was built without an accelerator backend");
}

/* FLOWLAB_BACKEND names a backend this build does not have: list those it has. */
static void say_not_built(const char *wanted)
{
    char built[128] = "";
    for (int i = 0; fl_backend_entries[i]; i++) {
        size_t used = strlen(built);
        snprintf(built + used, sizeof built - used, "%s%s", used ? ", " : "", fl_backend_entries[i]->name);
    }
    snprintf(why_none, sizeof why_none, "FLOWLAB_BACKEND=%s is not a backend built into this flowlab "
             "(built: %s; unset it, or see that backend's backend.mk for what its build needs)", wanted,
             built[0] ? built : "none");
}

static void choose_backend(void)
{
    const char *wanted = getenv("FLOWLAB_BACKEND");
    if (wanted && strcmp(wanted, "host") == 0) {
        snprintf(why_none, sizeof why_none, "FLOWLAB_BACKEND=host turns accelerators off");
        return;
    }
    if (!wanted || !wanted[0]) {
        choose_automatically();
        return;
    }
    const fl_backend_entry *e = entry_named(wanted);
    if (e) {
        active = usable_backend(e);
        return;
    }
    say_not_built(wanted);
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
    /* Sessions on several threads share a device (two task servers of one
     * process run their partitions at once): the count must not race. */
    __atomic_fetch_add(&d->allocations, 1, __ATOMIC_RELAXED);
    return d->backend->alloc(d->impl, bytes);
}

/* /cpu:0, then each /gpu:N, as many as out holds. */
static int describe_devices(fl_device_info *out, int max)
{
    int count = 0;
    if (count < max)
        fl_host_backend.describe(0, &out[count++]);
    for (int i = 0; i < fl_accelerator_count() && count < max; i++) {
        active->describe(i, &out[count]);
        snprintf(out[count].name, sizeof out[count].name, "/gpu:%d", i);
        count++;
    }
    return count;
}

int fl_list_devices(fl_device_info *out, int max)
{
    int count = out ? describe_devices(out, max) : 1 + fl_accelerator_count(); /* out NULL: only the count */
    if (fl_accelerator_count() == 0)
        fl_set_error_code(FL_NOT_FOUND, "%s", why_none);
    return count;
}

/* Asks each built backend in turn; the active one is not asked again. */
static void describe_backend(const fl_backend_entry *e, fl_backend_info *info)
{
    *info = (fl_backend_info){0};
    snprintf(info->name, sizeof info->name, "%s", e->name);
    fl_status why = {0};
    const fl_backend *b = backend_of(e, &why);
    info->active = b && b == active;
    info->devices = b ? b->device_count() : 0;
    if (info->devices == 0)
        snprintf(info->why_unavailable, sizeof info->why_unavailable, "%s", b ? b->why_unavailable() : why.message);
}

int fl_list_backends(fl_backend_info *out, int max)
{
    ensure_chosen();
    int count = 0;
    if (!out) { /* only the count */
        while (fl_backend_entries[count])
            count++;
        return count;
    }
    for (int i = 0; fl_backend_entries[i] && count < max; i++)
        describe_backend(fl_backend_entries[i], &out[count++]);
    return count;
}
