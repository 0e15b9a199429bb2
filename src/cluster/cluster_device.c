/* cluster_device.c: device strings in a cluster. What a device string leaves
 * out is the local task's, as in TensorFlow; completed, it says whether a
 * device is this task's (local) or another task's (remote). */
#include <stdio.h>
#include <string.h>

#include "cluster.h"

/* Parses device and fills in the local job and task; -1 with the error set
 * when it does not parse or names a task the cluster does not have. */
static int complete_device(const fl_cluster *c, const char *device, fl_device_name *d)
{
    const char *text = device ? device : "";
    *d = (fl_device_name){.task = -1};
    if (!c) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "device \"%s\": the cluster is NULL", text);
        return -1;
    }
    /* "" places nothing: it runs on the local task's host. */
    if (*text && fl_parse_device(text, d, NULL, 0) != 0)
        return -1;
    if (!d->job[0])
        snprintf(d->job, sizeof d->job, "%s", fl_job_name(c->job));
    if (d->task < 0 && strcmp(d->job, fl_job_name(c->job)) != 0) {
        /* Guessing task 0 would put another task's work on one ps unseen. */
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "device \"%s\" names job %s but no task; name one, as in /job:%s/task:0", text,
                          d->job, d->job);
        return -1;
    }
    if (d->task < 0)
        d->task = c->task_index;
    char caller[FL_DEVICE_LEN + 16];
    snprintf(caller, sizeof caller, "device \"%s\"", text);
    return fl_cluster_find_task(c, d->job, d->task, caller) ? 0 : -1;
}

int fl_cluster_device_name(const fl_cluster *c, const char *device, char *out, size_t len)
{
    fl_device_name d;
    if (complete_device(c, device, &d) != 0)
        return -1;
    const char *kind = d.is_gpu ? "gpu" : "cpu";
    int n = snprintf(out, len, "/job:%s/task:%d/%s:%d", d.job, d.task, kind, d.index);
    if (n < 0 || (size_t)n >= len) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_cluster_device_name: %d bytes do not fit in %zu", n + 1, len);
        return -1;
    }
    return 0;
}

int fl_cluster_device_is_local(const fl_cluster *c, const char *device)
{
    fl_device_name d;
    if (complete_device(c, device, &d) != 0)
        return -1;
    return strcmp(d.job, fl_job_name(c->job)) == 0 && d.task == c->task_index;
}
