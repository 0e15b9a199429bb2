/* task_server.c: the server of a task that its between-graph worker's
 * masters share: the program's own, as TensorFlow's tf.train.Server, else
 * one the first such master's session starts and the last one's stops;
 * and the task's traffic, which counts what that server received. */
#include <pthread.h>

#include "distributed_runtime/ps/cluster_state.h"
#include "server_internal.h"
#include "task_server.h"

/* Not the cluster state's lock: starting a server takes that one. */
static pthread_mutex_t own_server_lock = PTHREAD_MUTEX_INITIALIZER;

static fl_server *running_server(fl_cluster_state *r)
{
    pthread_mutex_lock(&r->lock);
    fl_server *s = r->task_server;
    pthread_mutex_unlock(&r->lock);
    return s;
}

fl_server *fl_task_server_acquire(const fl_cluster *c)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    pthread_mutex_lock(&own_server_lock);
    fl_server *s = running_server(r); /* the program's own, as TensorFlow's tf.train.Server */
    if (!s)
        s = r->started_server = fl_server_start(c, &(fl_server_options){0});
    r->server_users += s != NULL;
    pthread_mutex_unlock(&own_server_lock);
    return s;
}

void fl_task_server_release(const fl_cluster *c)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    pthread_mutex_lock(&own_server_lock);
    if (--r->server_users == 0 && r->started_server) {
        fl_server_stop(r->started_server);
        r->started_server = NULL;
    }
    pthread_mutex_unlock(&own_server_lock);
}

/* The cluster's connections, and what this task's server received: a
 * worker's piece gets the ps's values as SEND_TENSOR on connections the ps
 * made, which the worker's own connections never see. */
int fl_remote_task_traffic(const fl_cluster *c, const char *task, uint64_t *sent, uint64_t *received)
{
    int found = fl_cluster_connections_traffic(c, task, sent, received);
    if (!c || !sent || !received)
        return found;
    pthread_mutex_lock(&own_server_lock); /* a server the masters started is stopped under it */
    fl_server *server = running_server(fl_cluster_state_of(c));
    fl_server_stats st = {0};
    fl_server_get_stats(server, &st);
    uint64_t from_task = server && task ? fl_server_bytes_from(server, task) : 0;
    pthread_mutex_unlock(&own_server_lock);
    *received += task ? from_task : st.bytes_in;
    return found + (task && from_task > 0);
}

void fl_remote_traffic(const fl_cluster *c, uint64_t *sent, uint64_t *received)
{
    fl_remote_task_traffic(c, NULL, sent, received);
}
