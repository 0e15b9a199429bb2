/* session_plugin.c: what the distributed runtime lends a session given a
 * cluster as fl_session_options.cluster: devices of other tasks for
 * placement, and the task's name, chief, reconnection and goodbye for the
 * monitored session; in the client of a cluster, and in a between-graph
 * worker that partitions its own graph, the master of each step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "distributed_runtime/partition/master.h"
#include "distributed_runtime/ps/cluster_state.h"
#include "task_server.h"

/* A "/job:.../task:..." device: this task's own (*is_local). Another
 * task's is no device of this session's: a worker's master cuts its graph
 * by task (open_task_master), and a ps runs only what is its own. */
static fl_device *resolve_device(const fl_cluster *c, const char *device, bool *is_local)
{
    int local = fl_cluster_device_is_local(c, device);
    *is_local = local == 1;
    if (local != 0)
        return NULL; /* local, or an error fl_last_error() names */
    fl_set_error_code(FL_INVALID_ARGUMENT, "%s is another task's device, and this %s's session runs only its own "
                      "nodes: build the graph in a worker, whose session sends each task its piece (chapter 3)",
                      device, fl_cluster_job_name(c));
    return NULL;
}

static const char *task_name(const fl_cluster *c) { return fl_cluster_state_of(c)->task_name; }
static bool is_chief(const fl_cluster *c) { return fl_cluster_is_chief(c); }
static int recover(const fl_cluster *c) { return fl_cluster_reconnect(c); }
static int say_goodbye(const fl_cluster *c) { return fl_cluster_say_goodbye(c); }

static void *open_master(const fl_cluster *c, fl_graph *g, const fl_session_options *options)
{
    return fl_master_new(c, g, options->reuse_memory);
}
static void close_master(void *master) { fl_master_free(master); }
static const char *node_device(void *master, const fl_node *n) { return fl_master_node_device(master, n); }
static void trace_into(void *master, fl_session *trace) { fl_master_trace_into(master, trace); }
static int variable_has_value(void *master, const fl_node *var) { return fl_master_variable_has_value(master, var); }

static int run_master(void *master, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                      fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    return fl_master_run(master, feeds, nfeeds, fetches, nfetches, outputs, targets, ntargets);
}

/* A between-graph worker partitions its own graph, as TensorFlow's does
 * (issue 36 item 2), synchronous training through the accumulator ops
 * (master_sync.c). NULL on a ps: the session runs its graph itself. */
// [book:open_task_master]
static void *open_task_master(const fl_cluster *c, fl_graph *g, const fl_session_options *options)
{
    if (strcmp(fl_cluster_job_name(c), "ps") == 0)
        return NULL;
    if (!fl_task_server_acquire(c)) {
        fl_prefix_error("a between-graph worker runs its piece of the graph on a server of its own: ");
        return NULL;
    }
    return fl_master_new_on_task(c, g, options->reuse_memory);
}
// [end:open_task_master]

static int run_task_master(void *master, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                           fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    return fl_master_run_training(master, feeds, nfeeds, fetches, nfetches, outputs, targets, ntargets);
}

/* The chief's session ends its synchronous training first; the task's
 * server goes (if this session started it) after the master. */
static void close_task_master(void *master)
{
    const fl_cluster *c = fl_master_cluster(master);
    fl_master_end_training(master);
    fl_master_free(master);
    fl_task_server_release(c);
}

/* A task's: fl_cluster_new gives it to every cluster (cluster_head.c). */
const fl_cluster_plugin fl_cluster_task_plugin_table = {
    .resolve_device = resolve_device, .task_name = task_name, .is_chief = is_chief,
    .recover = recover, .say_goodbye = say_goodbye, .open_master = open_task_master, .run_master = run_task_master,
    .node_device = node_device, .variable_has_value = variable_has_value, .close_master = close_task_master,
    .trace_into = trace_into};
/* The client places nothing itself: its graph runs on the tasks. */
static fl_device *no_device(const fl_cluster *c, const char *device, bool *is_local)
{
    (void)c;
    *is_local = false;
    fl_set_error_code(FL_INTERNAL, "%s: the client of a cluster runs no node itself; its master does", device);
    return NULL;
}

/* The client's (fl_cluster_client_from_flags): the same, with a master. */
const fl_cluster_plugin fl_cluster_client_plugin_table = {
    .resolve_device = no_device, .task_name = task_name, .is_chief = is_chief, .recover = recover,
    .say_goodbye = say_goodbye, .open_master = open_master, .run_master = run_master,
    .node_device = node_device, .variable_has_value = variable_has_value, .close_master = close_master,
    .trace_into = trace_into};
