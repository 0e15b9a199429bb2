/* cluster_goodbye.c: how a process tells the tasks it used that it has
 * finished: a worker to every ps task, the client of in-graph replication to
 * every task. All goodbyes go at once, each on a thread of its own, over the
 * cluster's connection to the task, else over a new one tried for a short
 * deadline of its own: a task that cannot be reached delays the close by a
 * few seconds, not by FLOWLAB_TASK_DEADLINE per task. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "partition_client.h"
#include "distributed_runtime/ps/cluster_state.h"

/* A task not reached in this long misses its goodbye, and its server counts
 * this process as gone once FLOWLAB_TASK_DEADLINE has passed (server_join.c). */
#define GOODBYE_DEADLINE_S 2.0

typedef struct {
    const fl_cluster *cluster;
    const char *job;
    int task;
    pthread_t thread;
    bool threaded; /* false: no thread could be made, it ran on the caller's */
    int rc;
    fl_error_code code;
    char error[FL_ERROR_LEN];
} goodbye_call;

static double goodbye_deadline_s(void)
{
    double task_deadline = fl_task_deadline_s();
    return task_deadline < GOODBYE_DEADLINE_S ? task_deadline : GOODBYE_DEADLINE_S;
}

/* Over the cluster's connection when it has a live one: a task restarted
 * since (a broken connection) is reached anew. */
static void *say_goodbye_to_task(void *arg)
{
    goodbye_call *g = arg;
    fl_task_client *fresh = NULL, *client = fl_cluster_live_client(g->cluster, g->job, g->task);
    if (!client)
        client = fresh = fl_cluster_connect_within(g->cluster, g->job, g->task, goodbye_deadline_s());
    g->rc = client ? fl_task_client_goodbye(client) : -1;
    if (g->rc != 0) {
        g->code = fl_last_error_code();
        snprintf(g->error, sizeof g->error, "%s", fl_last_error());
    }
    fl_task_client_close(fresh);
    return NULL;
}

/* Every task of job into calls from *n on (also those this process never used). */
static void add_job(const fl_cluster *c, const char *job, goodbye_call *calls, int *n, int most)
{
    for (int task = 0; task < fl_cluster_num_tasks(c, job) && *n < most; task++)
        calls[(*n)++] = (goodbye_call){.cluster = c, .job = job, .task = task};
}

/* The first failure, naming its task, as the error; -1, or 0 when none failed. */
static int report(const goodbye_call *calls, int n)
{
    int failed = 0;
    const goodbye_call *first = NULL;
    for (int i = 0; i < n; i++)
        if (calls[i].rc != 0) {
            failed++;
            first = first ? first : &calls[i];
        }
    if (!first)
        return 0;
    fl_set_error_code(first->code, "the goodbye reached %d of %d tasks (each tried for %.0f s); /job:%s/task:%d: %s",
                      n - failed, n, goodbye_deadline_s(), first->job, first->task, first->error);
    return -1;
}

int fl_cluster_say_goodbye(const fl_cluster *c)
{
    if (!c) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_cluster_say_goodbye: the cluster is NULL");
        return -1;
    }
    int n = 0, most = FL_MAX_REMOTE_TASKS;
    goodbye_call *calls = fl_xcalloc((size_t)most, sizeof *calls);
    add_job(c, "ps", calls, &n, most);
    if (strcmp(fl_cluster_job_name(c), FL_WIRE_CLIENT_JOB) == 0) {
        add_job(c, "worker", calls, &n, most);
        add_job(c, "chief", calls, &n, most);
    }
    for (int i = 0; i < n; i++) {
        calls[i].threaded = pthread_create(&calls[i].thread, NULL, say_goodbye_to_task, &calls[i]) == 0;
        if (!calls[i].threaded)
            say_goodbye_to_task(&calls[i]);
    }
    for (int i = 0; i < n; i++)
        if (calls[i].threaded)
            pthread_join(calls[i].thread, NULL);
    int rc = report(calls, n);
    free(calls);
    fl_cluster_close_connections(c);
    return rc;
}
