/* cluster_plugin.h: the seam between a session and a cluster, internal to
 * flowlab: what the core may call of a cluster without naming a symbol of
 * the cluster's archive. Shared by the session core and the cluster rooms. */
#ifndef FLOWLAB_CLUSTER_PLUGIN_H
#define FLOWLAB_CLUSTER_PLUGIN_H

#include "flowlab.h"

/* What a cluster runtime lends a session (TensorFlow plugs its distributed
 * runtime in the same way, through session factories). The core calls only
 * these, each with the cluster the program gave as fl_session_options.cluster.
 * A task's cluster (fl_cluster_from_flags, TF_CONFIG, a launcher's) and a
 * client's (fl_cluster_client_from_flags) point at different tables. */
typedef struct fl_cluster_plugin {
    /* Placement: the device a "/job:.../task:..." name stands for. *is_local
     * set (and NULL returned) when it is this process's own task, which the
     * core then places as usual. NULL otherwise means an error, with
     * fl_last_error() saying why. */
    fl_device *(*resolve_device)(const fl_cluster *cluster, const char *device, bool *is_local);
    /* The monitored session: this task's name for log lines ("worker 1"),
     * whether it is the chief, reconnecting lost tasks after a run failed with
     * UNAVAILABLE or ABORTED (tasks reconnected, or -1), and saying goodbye
     * to the ps tasks at close. */
    const char *(*task_name)(const fl_cluster *cluster);
    bool (*is_chief)(const fl_cluster *cluster);
    int (*recover)(const fl_cluster *cluster);
    int (*say_goodbye)(const fl_cluster *cluster);
    /* In the client of a cluster, TensorFlow's master: the session opens it, runs
     * each step through it, asks it where a node ran, closes it (goodbye to
     * the tasks). NULL in a task. options: the session's (the tasks' own
     * sessions pool their values when it asks for reuse_memory). */
    void *(*open_master)(const fl_cluster *cluster, fl_graph *g, const fl_session_options *options);
    int (*run_master)(void *master, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                      int nfetches, fl_tensor **outputs, fl_node *const *targets, int ntargets);
    const char *(*node_device)(void *master, const fl_node *n);
    /* Whether the variable has a value on the task that holds it (TensorFlow's
     * report_uninitialized_variables): 1, 0, or -1 with fl_last_error() set. */
    int (*variable_has_value)(void *master, const fl_node *var);
    /* Before each run: the session whose trace the run's tasks report their
     * ops into (RunMetadata's FULL_TRACE), or NULL when it does not trace.
     * May be NULL itself: the master traces nothing. */
    void (*trace_into)(void *master, fl_session *trace);
    void (*close_master)(void *master);
} fl_cluster_plugin;

/* "FLCL": the first bytes of every live fl_cluster. A freed one has them
 * overwritten, so that a session given a freed cluster (whose memory was not
 * reused yet) is refused too. */
#define FL_CLUSTER_MAGIC 0x464c434cu
#define FL_CLUSTER_FREED 0x64656164u

/* How every fl_cluster begins (src/cluster/cluster.h puts it first): the
 * part of the cluster the core understands. */
typedef struct {
    uint32_t magic;                   /* FL_CLUSTER_MAGIC while the cluster lives */
    const fl_cluster_plugin *plugin;  /* the task's or the client's table */
} fl_cluster_head;

/* 0 when cluster is NULL or a live fl_cluster; -1 with fl_last_error() set
 * (FL_INVALID_ARGUMENT, naming who: "fl_session_new") when the pointer is
 * something else, which no C type check catches after a cast (a plugin
 * table of the previous API, another struct) or a freed cluster. The
 * pointer must point at 4 readable bytes: only its magic is read first. */
int fl_cluster_check(const fl_cluster *cluster, const char *who);

/* The table of a cluster fl_cluster_check passed; NULL for no cluster. */
static inline const fl_cluster_plugin *fl_cluster_plugin_of(const fl_cluster *cluster)
{
    return cluster ? ((const fl_cluster_head *)(const void *)cluster)->plugin : NULL;
}

#endif
