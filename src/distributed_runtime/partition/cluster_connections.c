/* cluster_connections.c: a cluster's connections to the other tasks, one
 * each. The client of a cluster reaches each task it uses once, on first
 * use (fl_cluster_client), connects again to those it lost, between runs
 * (fl_cluster_reconnect), and closes them all once it has said goodbye
 * (cluster_goodbye.c), which is how a ps knows it may exit.
 * All of it is the cluster's own state (made on first use, freed with the
 * cluster): two clusters in one process share nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include "cluster/cluster.h"
#include "partition_client.h"
#include "distributed_runtime/ps/cluster_state.h"

static void *state_new(const fl_cluster *c)
{
    fl_cluster_state *r = fl_xcalloc(1, sizeof *r);
    snprintf(r->task_name, sizeof r->task_name, "%s %d", fl_cluster_job_name(c), fl_cluster_task_index(c));
    pthread_mutex_init(&r->lock, NULL);
    fl_stale_tally_init(&r->stale);
    return r;
}

static void state_free(void *runtime)
{
    fl_cluster_state *r = runtime;
    for (int i = 0; i < r->count; i++)
        fl_task_client_close(r->tasks[i].client);
    fl_stale_tally_destroy(&r->stale);
    OPENSSL_cleanse(r->secret, sizeof r->secret); /* the secret leaves no copy behind */
    SSL_CTX_free(r->tls_client);
    SSL_CTX_free(r->tls_server);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

fl_cluster_state *fl_cluster_state_of(const fl_cluster *c)
{
    return fl_cluster_runtime(c, state_new, state_free);
}

static fl_task_client *connect_to(const fl_cluster *c, const char *job, int task, const char *who,
                                  uint32_t first_id, double deadline_s)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    fl_connect_options o = {.who = who, .host = fl_cluster_task_host(c, job, task),
                            .port = fl_cluster_task_port(c, job, task), .deadline_s = deadline_s,
                            .log_prefix = r->task_name, .job = job, .task = task, .secret = r->secret,
                            .secret_len = r->secret_len, .tls = r->tls_client};
    return fl_task_client_reopen(&o, fl_cluster_job_name(c), fl_cluster_task_index(c), first_id);
}

/* A lost connection made again. */
static fl_task_client *reconnect(fl_cluster_state *r, fl_remote_task *t)
{
    fprintf(stderr, "%s %d: lost %s; connecting again\n", fl_cluster_job_name(t->cluster),
            fl_cluster_task_index(t->cluster), t->who);
    uint32_t last = fl_task_client_last_id(t->client);
    fl_task_client *fresh = connect_to(t->cluster, t->job, t->task, t->who, last, fl_task_deadline_s());
    if (!fresh)
        return NULL;
    uint64_t sent, received;
    fl_task_client_traffic(t->client, &sent, &received);
    t->sent_before += sent;
    t->received_before += received;
    fl_task_client_close(t->client);
    t->client = fresh;
    r->tasks_lost++;
    return fresh;
}

/* Between runs, never inside one: a run whose requests were lost must
 * fail, not go on over a new connection as if nothing happened. Lock held. */
static int reconnect_broken(fl_cluster_state *r)
{
    for (int i = 0; i < r->count; i++)
        if (fl_task_client_broken(r->tasks[i].client) && !reconnect(r, &r->tasks[i]))
            return -1;
    return 0;
}

int fl_cluster_reconnect_peers(const fl_cluster *c)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    pthread_mutex_lock(&r->lock);
    int rc = reconnect_broken(r);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* The program's (the monitored session's recovery): counts too the tasks
 * found lost since its last call by others, this task's server's pieces
 * (fl_cluster_reconnect_peers) and its masters' own links. */
int fl_cluster_reconnect(const fl_cluster *c)
{
    if (!c) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_cluster_reconnect: the cluster is NULL");
        return -1;
    }
    fl_cluster_state *r = fl_cluster_state_of(c);
    pthread_mutex_lock(&r->lock);
    int rc = reconnect_broken(r), lost = r->tasks_lost;
    if (rc == 0)
        r->tasks_lost = 0;
    pthread_mutex_unlock(&r->lock);
    return rc == 0 ? lost : -1;
}

void fl_cluster_note_task_lost(const fl_cluster *c)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    pthread_mutex_lock(&r->lock);
    r->tasks_lost++;
    pthread_mutex_unlock(&r->lock);
}

static fl_task_client *find(fl_cluster_state *r, const char *who)
{
    for (int i = 0; i < r->count; i++)
        if (strcmp(r->tasks[i].who, who) == 0)
            return r->tasks[i].client;
    return NULL;
}

/* Kept as the next task of r. Lock held. */
static void add_task(fl_cluster_state *r, const fl_cluster *c, const char *job, int task, const char *who,
                     fl_task_client *client)
{
    fl_remote_task *t = &r->tasks[r->count++];
    *t = (fl_remote_task){.task = task, .cluster = c, .client = client};
    snprintf(t->who, sizeof t->who, "%s", who);
    snprintf(t->job, sizeof t->job, "%s", job);
}

fl_task_client *fl_cluster_client(const fl_cluster *c, const char *job, int task)
{
    char who[64];
    snprintf(who, sizeof who, "/job:%s/task:%d", job, task);
    fl_cluster_state *r = fl_cluster_state_of(c);
    pthread_mutex_lock(&r->lock);
    fl_task_client *client = find(r, who);
    if (!client && r->count == FL_MAX_REMOTE_TASKS)
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "%s: this cluster already talks to %d tasks, the most it can", who,
                          FL_MAX_REMOTE_TASKS);
    if (!client && r->count < FL_MAX_REMOTE_TASKS) {
        client = connect_to(c, job, task, who, 0, fl_task_deadline_s());
        if (client)
            add_task(r, c, job, task, who, client);
    }
    pthread_mutex_unlock(&r->lock);
    return client;
}

fl_task_client *fl_cluster_live_client(const fl_cluster *c, const char *job, int task)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    fl_task_client *client = NULL;
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->count; i++)
        if (r->tasks[i].task == task && strcmp(r->tasks[i].job, job) == 0)
            client = r->tasks[i].client;
    pthread_mutex_unlock(&r->lock);
    return client && !fl_task_client_broken(client) ? client : NULL;
}

fl_task_client *fl_cluster_connect_within(const fl_cluster *c, const char *job, int task, double deadline_s)
{
    char who[64];
    snprintf(who, sizeof who, "/job:%s/task:%d", job, task);
    return connect_to(c, job, task, who, 0, deadline_s);
}

void fl_cluster_close_connections(const fl_cluster *c)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->count; i++)
        fl_task_client_close(r->tasks[i].client);
    r->count = 0;
    pthread_mutex_unlock(&r->lock);
}

int fl_cluster_connections_traffic(const fl_cluster *c, const char *task, uint64_t *sent, uint64_t *received)
{
    if (!sent || !received)
        return 0;
    *sent = *received = 0;
    if (!c)
        return 0;
    fl_cluster_state *r = fl_cluster_state_of(c);
    int found = 0;
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->count; i++) {
        const fl_remote_task *t = &r->tasks[i];
        if (task && strcmp(task, t->who) != 0)
            continue;
        uint64_t s, got;
        fl_task_client_traffic(t->client, &s, &got);
        *sent += t->sent_before + s;
        *received += t->received_before + got;
        found++;
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

uint64_t fl_remote_stale_steps(const fl_cluster *c)
{
    uint64_t steps = 0, variable_updates = 0;
    if (c)
        fl_stale_tally_read(&fl_cluster_state_of(c)->stale, &steps, &variable_updates);
    return steps;
}

uint64_t fl_remote_stale_variable_updates(const fl_cluster *c)
{
    uint64_t steps = 0, variable_updates = 0;
    if (c)
        fl_stale_tally_read(&fl_cluster_state_of(c)->stale, &steps, &variable_updates);
    return variable_updates;
}

