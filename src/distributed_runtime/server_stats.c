/* server_stats.c: what a server counts (connections, frames, bytes, bad
 * input) and who has said goodbye, under the lock that the threads reading
 * them (join, stats) share with the event loop. */
#include <string.h>

#include "partition_client.h"
#include "server_internal.h"

void fl_server_count(fl_server *s, uint64_t *counter, uint64_t by)
{
    pthread_mutex_lock(&s->lock);
    *counter += by;
    pthread_mutex_unlock(&s->lock);
}

/* A client's goodbye ends a task server's work (in-graph replication:
 * the tasks serve one client, which says goodbye at session close). */
static bool note_client_goodbye(fl_server *s)
{
    pthread_mutex_lock(&s->lock);
    s->stats.goodbyes++;
    s->all_done = true;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return true;
}

bool fl_server_note_goodbye(fl_server *s, const char *job, int task)
{
    if (strcmp(job, FL_WIRE_CLIENT_JOB) == 0)
        return note_client_goodbye(s);
    bool *done = strcmp(job, "chief") == 0 ? s->chief_done : s->worker_done;
    int count = strcmp(job, "chief") == 0 ? s->num_chiefs : s->num_workers;
    if (!done || task < 0 || task >= count || done[task])
        return false;
    done[task] = true;
    pthread_mutex_lock(&s->lock);
    s->stats.goodbyes++;
    s->all_done = s->stats.goodbyes == s->num_workers + s->num_chiefs;
    bool last = s->all_done;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return last;
}
