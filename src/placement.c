/* placement.c: choosing the device each node runs on, for one session.
 * The node's requested device names it; a node with none runs on /cpu:0.
 * With allow_soft_placement, a missing device or kernel falls back to the
 * host; with log_device_placement, each decision is printed once. A device
 * of a cluster task (/job:, /task:) is this process's own, or another task's,
 * which the session's cluster refuses (a worker's master cuts its graph). */
#include <stdio.h>
#include <string.h>

#include "cluster_plugin.h"
#include "device.h"
#include "placement.h"

/* The host has one device, /cpu:0; /cpu:1 names nothing, as /gpu:7 does
 * on a machine with one accelerator. */
static fl_device *requested_device(const fl_device_name *d)
{
    if (d->is_gpu)
        return fl_accelerator(d->index);
    if (d->index == 0)
        return fl_host_device();
    char list[256];
    fl_set_error_code(FL_NOT_FOUND, "there is no /cpu:%d; the devices are %s (the host is one device, /cpu:0)",
                      d->index, fl_device_list(list, sizeof list));
    return NULL;
}

/* Whether dev can run n: a kernel for its op, or nothing to compute there
 * (a source, a NoOp: its op's signature says so). */
static bool can_run(const fl_device *dev, const fl_node *n)
{
    return dev->backend->has_kernel(n->op) || fl_op_why_no_kernel(n->op) != NULL;
}

/* A node whose device names a task: the session's cluster plugin resolves
 * it. The local task's devices are this process's own (*local set: place
 * as usual); another task's is refused (a worker's master cuts its graph
 * by task before any session places it). */
static fl_device *place_on_task(const fl_node *n, const fl_session_options *opt, bool *local, fl_status *st)
{
    const fl_cluster_plugin *plugin = fl_cluster_plugin_of(opt->cluster);
    if (!plugin) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "%s: device %s names a cluster task, but the session has no "
                      "cluster: set fl_session_options.cluster = cluster (chapter 3), or drop the "
                      "/job: and /task: parts to run it here",
                      n->name, n->device);
        return NULL;
    }
    fl_device *dev = plugin->resolve_device(opt->cluster, n->device, local);
    if (!dev && !*local) /* the resolver's code (INVALID_ARGUMENT) stays */
        fl_status_set(st, fl_last_error_code(), "%s: %s", n->name, fl_last_error());
    return dev;
}

fl_device *fl_place_node(const fl_node *n, const fl_session_options *opt, fl_status *st)
{
    fl_device_name d = {.task = -1};
    if (n->device[0] && fl_parse_device(n->device, &d, NULL, 0) != 0) {
        fl_status_set(st, fl_last_error_code(), "%s: %s", n->name, fl_last_error());
        return NULL;
    }
    if (d.job[0] || d.task >= 0) { /* soft placement must not hide a cluster */
        bool local = false;
        fl_device *remote = place_on_task(n, opt, &local, st);
        if (!local)
            return remote;
    }
    fl_device *dev = requested_device(&d);
    if (!dev) {
        if (opt->allow_soft_placement)
            return fl_host_device();
        fl_status_set(st, fl_last_error_code(), "%s: cannot place on %s: %s (allow_soft_placement falls back to "
                      "/cpu:0)", n->name, n->device, fl_last_error());
        return NULL;
    }
    if (can_run(dev, n))
        return dev;
    if (opt->allow_soft_placement)
        return fl_host_device();
    fl_status_set(st, FL_UNIMPLEMENTED, "%s: %s has no %s kernel for %s (allow_soft_placement falls back to /cpu:0)",
                  n->name, dev->name, dev->backend->name, fl_node_op_type(n));
    return NULL;
}

void fl_log_placement(const fl_node *n, const char *device)
{
    bool moved = n->device[0] && strcmp(n->device, device) != 0;
    fprintf(stderr, "%s: (%s): %s%s%s%s\n", n->name, fl_node_op_type(n), device,
            moved ? " (asked for " : "", moved ? n->device : "", moved ? ")" : "");
}
