/* cluster.h: the insides of fl_cluster, shared by the files that build it
 * (cluster_flags.c, cluster_tf_config.c, the launchers' cluster_slurm.c and
 * cluster_mpi_launcher.c) and read it (cluster.c, cluster_device.c). Users see only the accessors in
 * flowlab_cluster.h; a session sees only its head (cluster_plugin.h). */
#ifndef FLOWLAB_DIST_CLUSTER_H
#define FLOWLAB_DIST_CLUSTER_H

#include "cluster_plugin.h"
#include "flowlab_cluster.h"
#include "runtime.h"

/* The jobs TensorFlow's between-graph examples use, in the order messages
 * list them. */
typedef enum { FL_JOB_PS, FL_JOB_WORKER, FL_JOB_CHIEF, FL_JOB_COUNT } fl_job;

/* The longest host a spec may name: a DNS name has at most 253 characters,
 * and an address fewer. */
#define FL_MAX_HOST_LEN 253

typedef struct {
    char *host; /* an IPv6 address without its brackets */
    int port;
} fl_task_address;

struct fl_cluster {
    /* First, so that a session (the core) can check that what it was given
     * is a cluster and find its plugin table (cluster_plugin.h). */
    fl_cluster_head head;
    fl_task_address *tasks[FL_JOB_COUNT]; /* tasks[job][index] */
    int num_tasks[FL_JOB_COUNT];
    fl_job job; /* the local task: this process */
    int task_index;
    /* The client of in-graph replication across tasks is no task: its job
     * name is "client", and what its device strings leave out is worker 0's,
     * where TensorFlow's master puts what the client leaves unplaced. */
    bool is_client;
    /* What the distributed runtime keeps for this cluster (its
     * fl_cluster_state: connections, the synchronous step), made on first
     * use by fl_cluster_runtime and freed with the cluster; this room never
     * looks inside. */
    void *runtime;
    void (*free_runtime)(void *runtime);
};

/* How a source of cluster specs spells things in its error messages. */
typedef struct {
    const char *job_key;                /* "--job_name" */
    const char *index_key;              /* "--task_index" */
    const char *list_key[FL_JOB_COUNT]; /* "--worker_hosts"; NULL for no such list */
} fl_cluster_spelling;

/* -1 for a name other than "ps", "worker" and "chief". */
int fl_job_from_name(const char *name);
const char *fl_job_name(fl_job job);
/* "2 tasks (0 and 1)", "1 task (only 0)", "no tasks": for messages. */
const char *fl_task_count_text(int n, char *buf, size_t len);

/* A cluster with no tasks yet: a task's until fl_cluster_set_plugin says
 * it is a client's. */
fl_cluster *fl_cluster_new(void);
/* What the cluster lends a session (cluster_head.c): the distributed
 * runtime's table for a task or for the client (session_plugin.c). */
void fl_cluster_set_plugin(fl_cluster *c, bool client);
extern const fl_cluster_plugin fl_cluster_task_plugin_table, fl_cluster_client_plugin_table;
/* Appends "host:port" as job's next task; where names it in messages
 * ("--worker_hosts", "TF_CONFIG: \"cluster.worker[1]\""). */
int fl_cluster_add_task(fl_cluster *c, fl_job job, const char *address, const char *where);
/* The task job:index, or NULL with an error that caller begins and that
 * says which tasks exist. */
const fl_task_address *fl_cluster_find_task(const fl_cluster *c, const char *job, int index,
                                            const char *caller);
/* Chooses the local task, once every task is added. */
int fl_cluster_set_task(fl_cluster *c, const char *job_name, int task_index,
                        const fl_cluster_spelling *spelling);

/* The distributed runtime's state for c: made by make_runtime on first use
 * (under a lock, so that two threads cannot both make it), freed by
 * free_runtime when the cluster is freed. The runtime depends on the
 * cluster, never the other way: it hands this room its two functions. */
void *fl_cluster_runtime(const fl_cluster *c, void *(*make_runtime)(const fl_cluster *c),
                         void (*free_runtime)(void *runtime));

/* What the launcher resolvers share (cluster_launcher.c). */
/* The whole number in environment variable name, into *value: 0; 1 when the
 * variable is not set; -1 after fl_set_error naming it and what it should
 * hold ("SLURM_PROCID=\"x\": expected a rank from 0 to 3 ..."). */
int fl_launcher_env_int(const char *name, long min, long max, const char *expected, long *value);
/* A cluster of n tasks in rank order, rank r at hosts[r]:port_base +
 * local_index[r] (its place among the tasks of its node), the first num_ps
 * ps tasks and the rest workers, this process being rank. size_name names
 * the variable that counted the tasks, in messages. */
fl_cluster *fl_cluster_from_ranks(const char *const *hosts, const int *local_index, int n, int rank, int num_ps,
                                  int port_base, const char *size_name);

#endif
