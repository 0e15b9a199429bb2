/* cluster_connections.c: this process's connections to the other tasks, one
 * remote device each. A worker reaches each ps task it uses once, on first
 * use (fl_remote_device), connects again to those it lost, between runs
 * (fl_cluster_reconnect), and says goodbye to all of them when it has
 * finished (fl_cluster_say_goodbye), which is how a ps knows it may exit. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "remote_device.h"

#define MAX_REMOTE_TASKS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fl_device devices[MAX_REMOTE_TASKS];
static fl_remote_task tasks[MAX_REMOTE_TASKS];
static int count;
static uint64_t stale_of_lost; /* stale updates counted on connections since lost */

static fl_ps_client *connect_to(const fl_cluster *c, const char *job, int task, const char *who,
                                uint32_t first_id)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s %d", fl_cluster_job_name(c), fl_cluster_task_index(c));
    fl_connect_options o = {.who = who, .host = fl_cluster_task_host(c, job, task),
                            .port = fl_cluster_task_port(c, job, task), .deadline_s = fl_task_deadline_s(),
                            .log_prefix = prefix};
    return fl_ps_client_reopen(&o, fl_cluster_job_name(c), fl_cluster_task_index(c), first_id);
}

/* A lost connection made again; the worker's step is unknown until the
 * next token, since the task may have been restarted and restored. */
static fl_ps_client *reconnect(fl_remote_task *t)
{
    fprintf(stderr, "%s %d: lost %s; connecting again\n", fl_cluster_job_name(t->cluster),
            fl_cluster_task_index(t->cluster), t->who);
    uint32_t last = fl_ps_client_last_id(t->client);
    fl_ps_client *fresh = connect_to(t->cluster, t->job, t->task, t->who, last);
    if (!fresh)
        return NULL;
    stale_of_lost += fl_ps_client_stale_updates(t->client);
    uint64_t sent, received;
    fl_ps_client_traffic(t->client, &sent, &received);
    t->sent_before += sent;
    t->received_before += received;
    fl_remote_sync_forget(t->client);
    fl_ps_client_close(t->client);
    t->client = fresh;
    return fresh;
}

/* Between runs, never inside one: a run whose requests were lost must
 * fail, not go on over a new connection as if nothing happened. */
int fl_cluster_reconnect(const fl_cluster *c)
{
    (void)c; /* every task this process talks to is in its one cluster */
    int made = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < count && made >= 0; i++) {
        if (!fl_ps_client_broken(tasks[i].client))
            continue;
        made = reconnect(&tasks[i]) ? made + 1 : -1;
    }
    pthread_mutex_unlock(&lock);
    return made;
}

static fl_device *find(const char *who)
{
    for (int i = 0; i < count; i++)
        if (strcmp(tasks[i].who, who) == 0)
            return &devices[i];
    return NULL;
}

fl_device *fl_remote_device(const fl_cluster *c, const char *job, int task)
{
    char who[64];
    snprintf(who, sizeof who, "/job:%s/task:%d", job, task);
    pthread_mutex_lock(&lock);
    fl_device *d = find(who);
    if (!d && count == MAX_REMOTE_TASKS)
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "%s: this process already talks to %d tasks, the most it can", who,
                          MAX_REMOTE_TASKS);
    if (!d && count < MAX_REMOTE_TASKS) {
        fl_ps_client *client = connect_to(c, job, task, who, 0);
        if (client) {
            fl_remote_task *t = &tasks[count];
            *t = (fl_remote_task){0};
            snprintf(t->who, sizeof t->who, "%s", who);
            snprintf(t->job, sizeof t->job, "%s", job);
            t->task = task;
            t->cluster = c;
            t->client = client;
            d = &devices[count++];
            *d = (fl_device){.backend = &fl_remote_backend, .impl = t, .index = task};
            snprintf(d->name, sizeof d->name, "%s/cpu:0", who);
        }
    }
    pthread_mutex_unlock(&lock);
    return d;
}

int fl_cluster_say_goodbye(const fl_cluster *c)
{
    int rc = 0, num_ps = fl_cluster_num_tasks(c, "ps");
    for (int task = 0; task < num_ps; task++) { /* also those this worker never used */
        fl_device *d = fl_remote_device(c, "ps", task);
        fl_ps_client *client = d ? fl_remote_client(d->impl) : NULL;
        if (!client || fl_ps_client_goodbye(client) != 0)
            rc = -1;
    }
    pthread_mutex_lock(&lock);
    for (int i = 0; i < count; i++)
        fl_ps_client_close(tasks[i].client);
    count = 0;
    pthread_mutex_unlock(&lock);
    fl_remote_sync_forget(NULL);
    return rc;
}

int fl_remote_task_traffic(const char *task, uint64_t *sent, uint64_t *received)
{
    *sent = *received = 0;
    int found = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < count; i++) {
        if (task && strcmp(task, tasks[i].who) != 0)
            continue;
        uint64_t s, r;
        fl_ps_client_traffic(tasks[i].client, &s, &r);
        *sent += tasks[i].sent_before + s;
        *received += tasks[i].received_before + r;
        found++;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

uint64_t fl_remote_stale_updates(void)
{
    pthread_mutex_lock(&lock);
    uint64_t n = stale_of_lost;
    for (int i = 0; i < count; i++)
        n += fl_ps_client_stale_updates(tasks[i].client);
    pthread_mutex_unlock(&lock);
    return n;
}

void fl_remote_traffic(uint64_t *sent, uint64_t *received)
{
    fl_remote_task_traffic(NULL, sent, received);
}
