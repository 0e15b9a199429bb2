/* session_master.c: a session in the client of a cluster (in-graph
 * replication across tasks) hands each run to the cluster runtime's master,
 * which runs it on the tasks; the core only keeps fl_session_run's promises
 * around it. The master comes through fl_cluster_plugin: no cluster symbol. */
#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "session_internal.h"

void fl_session_open_master(fl_session *s)
{
    const fl_cluster_plugin *plugin = s->options.cluster;
    if (plugin && plugin->open_master)
        s->master = plugin->open_master(plugin->state, s->graph);
}

void fl_session_close_master(fl_session *s)
{
    if (s->master)
        s->options.cluster->close_master(s->master);
    s->master = NULL;
    free(s->placement_logged);
    s->placement_logged = NULL;
}

int fl_session_refuse_in_client(fl_session *s, const char *what)
{
    if (!s->master)
        return 0;
    return fl_session_fail_code(s, FL_UNIMPLEMENTED, "%s: this session is the client of a cluster: its variables "
                                "live on the tasks, and checkpoints of in-graph replication across tasks are not "
                                "supported yet", what);
}

const char *fl_session_master_node_device(const fl_session *s, const fl_node *n)
{
    if (!n || n->graph != s->graph || !s->options.cluster->node_device)
        return NULL;
    return s->options.cluster->node_device(s->master, n);
}

/* log_device_placement, as a session on its own devices prints it: once
 * per node, after the first run that needed it succeeded. */
static void log_new_placements(fl_session *s)
{
    int n = fl_graph_node_count(s->graph);
    if (n > s->nplacement_logged) { /* the graph has grown */
        s->placement_logged = fl_xrealloc(s->placement_logged, (size_t)n * sizeof *s->placement_logged);
        memset(s->placement_logged + s->nplacement_logged, 0, (size_t)(n - s->nplacement_logged) * sizeof(bool));
        s->nplacement_logged = n;
    }
    for (int id = 0; id < n; id++) {
        fl_node *node = fl_graph_node(s->graph, id);
        const char *device = s->placement_logged[id] ? NULL : fl_session_master_node_device(s, node);
        if (!device)
            continue;
        fl_log_placement(node, device);
        s->placement_logged[id] = true;
    }
}

/* Outputs NULL on failure, fl_session_error and its code set; a fetch that
 * is ready is handed over at the end, as a value on a device with no marks. */
int fl_session_run_master(fl_session *s, const fl_run_options *options, const fl_feed *feeds, int nfeeds,
                          fl_node *const *fetches, int nfetches, fl_tensor **outputs, fl_node *const *targets,
                          int ntargets)
{
    bool device_feeds = false;
    for (int i = 0; i < nfeeds; i++)
        device_feeds |= feeds[i].value && feeds[i].value->device;
    if (device_feeds || (options && options->fetch_to))
        return fl_session_fail_code(s, FL_UNIMPLEMENTED, "this session is the client of a cluster: its values "
                                    "live on the tasks; fetch_to and device feeds are for a session's own devices");
    if (s->options.cluster->run_master(s->master, feeds, nfeeds, fetches, nfetches, outputs, targets,
                                       ntargets) != 0) {
        for (int i = 0; i < nfetches; i++)
            outputs[i] = NULL;
        return fl_session_fail(s, "%s", fl_last_error());
    }
    s->run_count++;
    if (s->options.log_device_placement)
        log_new_placements(s);
    for (int i = 0; options && options->fetch_ready && i < nfetches; i++)
        options->fetch_ready(i, outputs[i], options->user);
    return 0;
}
