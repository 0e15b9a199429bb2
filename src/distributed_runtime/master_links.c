/* master_links.c: a between-graph worker's master's own connections, one
 * per task, made anew when broken (master_links.h says why they are not
 * the cluster's), and the one server of its task that they share. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "master_links.h"
#include "remote_device.h"

fl_ps_client *fl_master_link_to(fl_master_links *l, const fl_cluster *c, const char *job, int task,
                                fl_ps_client **replaced)
{
    *replaced = NULL;
    int i = 0;
    while (i < l->count && !(l->items[i].task == task && strcmp(l->items[i].job, job) == 0))
        i++;
    if (i < l->count && !fl_ps_client_broken(l->items[i].client))
        return l->items[i].client;
    fl_ps_client *client = fl_cluster_connect_within(c, job, task, fl_task_deadline_s());
    if (!client)
        return NULL;
    if (i == l->count) {
        l->items = fl_xrealloc(l->items, (size_t)(l->count + 1) * sizeof *l->items);
        l->items[l->count++] = (fl_master_link){.task = task};
        snprintf(l->items[i].job, sizeof l->items[i].job, "%s", job);
    } else {
        *replaced = l->items[i].client;
        fl_ps_client_close(l->items[i].client);
    }
    return l->items[i].client = client;
}

/* Not the cluster state's lock: starting a server takes that one. */
static pthread_mutex_t own_server_lock = PTHREAD_MUTEX_INITIALIZER;

static fl_server *running_server(fl_cluster_state *r)
{
    pthread_mutex_lock(&r->lock);
    fl_server *s = r->task_server;
    pthread_mutex_unlock(&r->lock);
    return s;
}

fl_server *fl_master_acquire_server(const fl_cluster *c)
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

void fl_master_release_server(const fl_cluster *c)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    pthread_mutex_lock(&own_server_lock);
    if (--r->server_users == 0 && r->started_server) {
        fl_server_stop(r->started_server);
        r->started_server = NULL;
    }
    pthread_mutex_unlock(&own_server_lock);
}

void fl_master_links_close(fl_master_links *l)
{
    for (int i = 0; i < l->count; i++)
        fl_ps_client_close(l->items[i].client);
    free(l->items);
    memset(l, 0, sizeof *l);
}
