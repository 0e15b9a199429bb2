/* master_links.c: a between-graph worker's master's own connections, one
 * per task, made anew when broken (master_links.h says why they are not
 * the cluster's). */
#include <stdlib.h>
#include <string.h>

#include "master_links.h"
#include "distributed_runtime/ps/cluster_state.h"

fl_task_client *fl_master_link_to(fl_master_links *l, const fl_cluster *c, const char *job, int task,
                                fl_task_client **replaced)
{
    *replaced = NULL;
    int i = 0;
    while (i < l->count && !(l->items[i].task == task && strcmp(l->items[i].job, job) == 0))
        i++;
    if (i < l->count && !fl_task_client_broken(l->items[i].client))
        return l->items[i].client;
    fl_task_client *client = fl_cluster_connect_within(c, job, task, fl_task_deadline_s());
    if (!client)
        return NULL;
    if (i == l->count) {
        l->items = fl_xrealloc(l->items, (size_t)(l->count + 1) * sizeof *l->items);
        l->items[l->count++] = (fl_master_link){.task = task};
        snprintf(l->items[i].job, sizeof l->items[i].job, "%s", job);
    } else {
        *replaced = l->items[i].client;
        fl_task_client_close(l->items[i].client);
    }
    return l->items[i].client = client;
}

void fl_master_links_close(fl_master_links *l)
{
    for (int i = 0; i < l->count; i++)
        fl_task_client_close(l->items[i].client);
    free(l->items);
    memset(l, 0, sizeof *l);
}
