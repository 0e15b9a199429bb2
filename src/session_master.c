/* session_master.c: a session in the client of a cluster (in-graph
 * replication across tasks) hands each run to the cluster runtime's master,
 * which runs it on the tasks; the core only keeps fl_session_run's promises
 * around it. The master comes through the cluster's plugin table
 * (cluster_plugin.h): no cluster symbol. */
#include <stdlib.h>
#include <string.h>

#include "cluster_plugin.h"
#include "placement.h"
#include "session_internal.h"

int fl_session_open_master(fl_session *s)
{
    if (fl_cluster_check(s->options.cluster, "fl_session_new") != 0)
        return -1;
    const fl_cluster_plugin *plugin = fl_cluster_plugin_of(s->options.cluster);
    fl_clear_error();
    if (plugin && plugin->open_master)
        s->master.runtime = plugin->open_master(s->options.cluster, s->graph, &s->options);
    /* NULL: no master (a task's session runs its graph), or one that failed */
    return !s->master.runtime && fl_last_error_code() != FL_OK ? -1 : 0;
}

void fl_session_close_master(fl_session *s)
{
    if (s->master.runtime)
        fl_cluster_plugin_of(s->options.cluster)->close_master(s->master.runtime);
    free(s->master.placement_logged);
    s->master = (fl_master_state){NULL, NULL, 0};
}

bool fl_session_in_client(const fl_session *s) { return s->master.runtime != NULL; }

const char *fl_session_master_node_device(const fl_session *s, const fl_node *n)
{
    const fl_cluster_plugin *plugin = fl_cluster_plugin_of(s->options.cluster);
    if (!n || n->graph != s->graph || !plugin || !plugin->node_device)
        return NULL;
    return plugin->node_device(s->master.runtime, n);
}

int fl_session_master_variable_has_value(fl_session *s, const fl_node *var)
{
    const fl_cluster_plugin *plugin = fl_cluster_plugin_of(s->options.cluster);
    if (!plugin->variable_has_value)
        return fl_session_fail_code(s, FL_UNIMPLEMENTED, "%s: this cluster cannot say whether a variable has a "
                                    "value", var->name);
    int has = plugin->variable_has_value(s->master.runtime, var);
    if (has < 0)
        return fl_session_fail(s, "asking whether %s has a value: %s", var->name, fl_last_error());
    return has;
}

/* log_device_placement, as a session on its own devices prints it: once
 * per node, after the first run that needed it succeeded. */
static void log_new_placements(fl_session *s)
{
    fl_master_state *m = &s->master;
    int n = fl_graph_node_count(s->graph);
    if (n > m->nplacement_logged) { /* the graph has grown */
        m->placement_logged = fl_xrealloc(m->placement_logged, (size_t)n * sizeof *m->placement_logged);
        memset(m->placement_logged + m->nplacement_logged, 0, (size_t)(n - m->nplacement_logged) * sizeof(bool));
        m->nplacement_logged = n;
    }
    for (int id = 0; id < n; id++) {
        fl_node *node = fl_graph_node(s->graph, id);
        const char *device = m->placement_logged[id] ? NULL : fl_session_master_node_device(s, node);
        if (!device)
            continue;
        fl_log_placement(node, device);
        m->placement_logged[id] = true;
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
    const fl_cluster_plugin *plugin = fl_cluster_plugin_of(s->options.cluster);
    if (plugin->trace_into)
        plugin->trace_into(s->master.runtime, fl_session_tracing(s) ? s : NULL);
    if (plugin->run_master(s->master.runtime, feeds, nfeeds, fetches, nfetches, outputs, targets, ntargets) != 0) {
        for (int i = 0; i < nfetches; i++)
            outputs[i] = NULL;
        return fl_session_fail(s, "%s", fl_last_error());
    }
    if (s->options.log_device_placement)
        log_new_placements(s);
    for (int i = 0; options && options->fetch_ready && i < nfetches; i++)
        options->fetch_ready(i, outputs[i], options->user);
    return 0;
}
