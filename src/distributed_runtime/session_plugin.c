/* session_plugin.c: what the distributed runtime lends a session through
 * fl_session_options.cluster: devices of other tasks for placement, and the
 * task's name, chief, reconnection and goodbye for the monitored session;
 * in the client of a cluster, the master that runs each step on the tasks. */
#include <pthread.h>
#include <stdio.h>

#include "cluster/cluster.h"
#include "master.h"
#include "remote_device.h"

/* A "/job:.../task:..." device: this task's own (*is_local), or another
 * task's remote device, connecting to it the first time. */
static fl_device *resolve_device(void *state, const char *device, bool *is_local)
{
    const fl_cluster *c = state;
    int local = fl_cluster_device_is_local(c, device);
    *is_local = local == 1;
    if (local != 0)
        return NULL; /* local, or an error fl_last_error() names */
    fl_device_name d = {.task = -1};
    if (fl_parse_device(device, &d, NULL, 0) != 0)
        return NULL;
    fl_device *remote = fl_remote_device(c, d.job, d.task);
    if (!remote)
        fl_prefix_error("cannot reach %s: ", device); /* keeps UNAVAILABLE */
    return remote;
}

static const char *task_name(void *state) { return fl_cluster_state_of(state)->task_name; }
static bool is_chief(void *state) { return fl_cluster_is_chief(state); }
static int recover(void *state) { return fl_cluster_reconnect(state); }
static int say_goodbye(void *state) { return fl_cluster_say_goodbye(state); }

/* The plugin lives in the cluster's runtime state, so it is freed with the
 * cluster; filled under the state's lock, since two threads may ask at once. */
const fl_cluster_plugin *fl_cluster_session_plugin(const fl_cluster *cluster)
{
    if (!cluster)
        return NULL;
    fl_cluster_state *r = fl_cluster_state_of(cluster);
    pthread_mutex_lock(&r->lock);
    if (!r->session_plugin.state)
        r->session_plugin = (fl_cluster_plugin){.state = (void *)cluster, .resolve_device = resolve_device,
                                                .task_name = task_name, .is_chief = is_chief,
                                                .recover = recover, .say_goodbye = say_goodbye};
    pthread_mutex_unlock(&r->lock);
    return &r->session_plugin;
}

static void *open_master(void *state, fl_graph *g) { return fl_master_new(state, g); }
static void close_master(void *master) { fl_master_free(master); }
static const char *node_device(void *master, const fl_node *n) { return fl_master_node_device(master, n); }

static int run_master(void *master, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                      fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    return fl_master_run(master, feeds, nfeeds, fetches, nfetches, outputs, targets, ntargets);
}

/* The client places nothing itself: its graph runs on the tasks. */
static fl_device *no_device(void *state, const char *device, bool *is_local)
{
    (void)state;
    *is_local = false;
    fl_set_error_code(FL_INTERNAL, "%s: the client of a cluster runs no node itself; its master does", device);
    return NULL;
}

const fl_cluster_plugin *fl_cluster_client_plugin(const fl_cluster *cluster)
{
    if (!cluster)
        return NULL;
    fl_cluster_state *r = fl_cluster_state_of(cluster);
    pthread_mutex_lock(&r->lock);
    if (!r->client_plugin.state)
        r->client_plugin = (fl_cluster_plugin){.state = (void *)cluster, .resolve_device = no_device,
                                               .task_name = task_name, .is_chief = is_chief, .recover = recover,
                                               .say_goodbye = say_goodbye, .open_master = open_master,
                                               .run_master = run_master, .node_device = node_device,
                                               .close_master = close_master};
    pthread_mutex_unlock(&r->lock);
    return &r->client_plugin;
}
