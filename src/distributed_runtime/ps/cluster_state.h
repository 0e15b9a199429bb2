/* cluster_state.h: what the runtime keeps for one cluster: its connections
 * to the other tasks, one per task, made on first use and kept by the
 * cluster (its runtime state, freed with it: cluster_connections.c), its
 * stale tally, its task's server and who may talk to it. */
#ifndef FLOWLAB_DIST_CLUSTER_STATE_H
#define FLOWLAB_DIST_CLUSTER_STATE_H

#include <pthread.h>

#include "device.h"
#include "distributed_runtime/transport/task_client.h"
#include "distributed_runtime/transport/stale_tally.h"

/* The cluster's connection to task `task` of job `job`, connecting to it
 * (and waiting for it, with a line every few seconds) the first time. NULL
 * after fl_set_error when the task does not answer within the deadline
 * (FLOWLAB_TASK_DEADLINE seconds, 120 by default). */
fl_task_client *fl_cluster_client(const fl_cluster *c, const char *job, int task);
/* For a goodbye (cluster_goodbye.c): the cluster's connection to job/task
 * when it has one that is not broken, else NULL; a new connection, not the
 * cluster's (the caller closes it), tried for deadline_s seconds; and every
 * connection of the cluster closed. */
fl_task_client *fl_cluster_live_client(const fl_cluster *c, const char *job, int task);
fl_task_client *fl_cluster_connect_within(const fl_cluster *c, const char *job, int task, double deadline_s);
void fl_cluster_close_connections(const fl_cluster *c);
/* What this process's connections to `task` (NULL: every task) sent and
 * received; fl_remote_task_traffic adds what the task's server received. */
int fl_cluster_connections_traffic(const fl_cluster *c, const char *task, uint64_t *sent, uint64_t *received);
/* Another task and the cluster's connection to it. */
typedef struct {
    char who[64]; /* "/job:ps/task:0" */
    char job[32];
    int task;
    const fl_cluster *cluster;
    fl_task_client *client;
    uint64_t sent_before, received_before; /* on connections since lost */
} fl_remote_task;

#define FL_MAX_REMOTE_TASKS 64
#define FL_MAX_SECRET_BYTES 1024

/* What the runtime keeps for one cluster, in the cluster's runtime slot
 * (made on first use, freed with the cluster): its connections and
 * counters. Anything else the
 * runtime keeps per cluster belongs here too, so two clusters share nothing. */
typedef struct {
    char task_name[48];               /* "worker 1": this task, for log lines */
    pthread_mutex_t lock; /* the tasks and counters below */
    fl_remote_task tasks[FL_MAX_REMOTE_TASKS];
    int count;
    int tasks_lost; /* found lost (reconnected, or by a master) since fl_cluster_reconnect last said */
    fl_stale_tally stale; /* updates the ps tasks dropped as stale, over every connection */
    /* This task's running server, whoever started it (server.c), under
     * lock; and for a between-graph worker's masters, which run their
     * pieces there (server/task_server.c): the one they started when there was
     * none, and how many use it. */
    struct fl_server *task_server;
    struct fl_server *started_server;
    int server_users;
    /* Who may talk to this cluster's tasks (cluster_security.c): set before
     * the first connection, read-only afterwards. */
    unsigned char secret[FL_MAX_SECRET_BYTES];
    size_t secret_len;                   /* 0: no shared secret */
    struct ssl_ctx_st *tls_client, *tls_server; /* NULL: no TLS */
    bool insecure_listen; /* its server may listen off loopback with neither (listen_security.c) */
} fl_cluster_state;

fl_cluster_state *fl_cluster_state_of(const fl_cluster *c);
/* cluster_connections.c. A master found a task lost (its link closed under
 * registered pieces): the program's next fl_cluster_reconnect counts it. */
void fl_cluster_note_task_lost(const fl_cluster *c);
/* A task server's piece, before its step: connects again to the tasks it
 * lost, leaving them counted for the program's fl_cluster_reconnect; 0 or -1. */
int fl_cluster_reconnect_peers(const fl_cluster *c);

#endif
