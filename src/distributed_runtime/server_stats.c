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

static bool is_worker_job(const char *job) { return strcmp(job, "worker") == 0 || strcmp(job, "chief") == 0; }

void fl_server_note_request(fl_server *s, const fl_server_conn *c, fl_wire_type type)
{
    bool between_tasks = type == FL_WIRE_HELLO || type == FL_WIRE_PROOF || type == FL_WIRE_SEND_TENSOR ||
                         type == FL_WIRE_ABORT_STEP || type == FL_WIRE_GOODBYE;
    if (!between_tasks && is_worker_job(c->job))
        s->serves_workers = true;
}

/* A client's goodbye ends a task server's work (in-graph replication:
 * the tasks serve one client, which says goodbye at session close), but
 * not a ps that serves workers (between-graph): it ends when they have all
 * said goodbye, whatever a `client` says. */
static bool note_client_goodbye(fl_server *s)
{
    if (s->serves_workers)
        return false;
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
    if (!is_worker_job(job)) /* a ps or an unknown job: no goodbye of theirs is awaited */
        return false;
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
