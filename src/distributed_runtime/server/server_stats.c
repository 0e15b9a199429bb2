/* server_stats.c: what a server counts (connections, frames, bytes, bad
 * input) and who has said goodbye, under the lock that the threads reading
 * them (join, stats) share with the event loop. */
#include <stdio.h>
#include <string.h>

#include "accumulator.h"
#include "distributed_runtime/partition/partition_client.h"
#include "server_internal.h"

void fl_server_count(fl_server *s, uint64_t *counter, uint64_t by)
{
    pthread_mutex_lock(&s->lock);
    *counter += by;
    pthread_mutex_unlock(&s->lock);
}

/* Bytes in per peer task, for the traffic a worker counts per ps: the ps's
 * values reach a worker's server on connections the ps made. At most
 * MAX_PEERS tasks are told apart; the rest count in bytes_in alone. */
#define MAX_PEERS 1024
struct fl_peer_bytes {
    char who[64]; /* as fl_server_conn's: "(/job:ps/task:0)" */
    uint64_t bytes;
};

/* The peer's entry (new when there is room), or NULL. Lock held. */
static struct fl_peer_bytes *peer_entry(fl_server *s, const char *who, bool add)
{
    for (int i = 0; i < s->nbytes_from; i++)
        if (strcmp(s->bytes_from[i].who, who) == 0)
            return &s->bytes_from[i];
    if (!add || !who[0] || s->nbytes_from == MAX_PEERS)
        return NULL;
    s->bytes_from = fl_xrealloc(s->bytes_from, (size_t)(s->nbytes_from + 1) * sizeof *s->bytes_from);
    struct fl_peer_bytes *p = &s->bytes_from[s->nbytes_from++];
    *p = (struct fl_peer_bytes){.bytes = 0};
    snprintf(p->who, sizeof p->who, "%s", who);
    return p;
}

void fl_server_count_in(fl_server_conn *c, uint64_t by)
{
    fl_server *s = c->server;
    pthread_mutex_lock(&s->lock);
    s->stats.bytes_in += by;
    if (c->bytes_from_slot == 0 && c->who[0]) { /* found once per connection, not per frame */
        struct fl_peer_bytes *p = peer_entry(s, c->who, true);
        c->bytes_from_slot = p ? (int)(p - s->bytes_from) + 1 : 0;
    }
    if (c->bytes_from_slot > 0)
        s->bytes_from[c->bytes_from_slot - 1].bytes += by;
    pthread_mutex_unlock(&s->lock);
}

uint64_t fl_server_bytes_from(fl_server *s, const char *task)
{
    char who[64];
    snprintf(who, sizeof who, "(%s)", task);
    pthread_mutex_lock(&s->lock);
    struct fl_peer_bytes *p = peer_entry(s, who, false);
    uint64_t bytes = p ? p->bytes : 0;
    pthread_mutex_unlock(&s->lock);
    return bytes;
}

static bool is_worker_job(const char *job) { return strcmp(job, "worker") == 0 || strcmp(job, "chief") == 0; }

void fl_server_note_request(fl_server *s, const fl_server_conn *c, fl_wire_type type)
{
    bool between_tasks = type == FL_WIRE_HELLO || type == FL_WIRE_PROOF || type == FL_WIRE_SEND_TENSOR ||
                         type == FL_WIRE_ABORT_STEP || type == FL_WIRE_GOODBYE;
    if (between_tasks || !is_worker_job(c->job) || s->serves_workers)
        return;
    pthread_mutex_lock(&s->lock); /* join reads it */
    s->serves_workers = true;
    pthread_mutex_unlock(&s->lock);
}

fl_awaited_task *fl_server_awaited(fl_server *s, const char *job, int task)
{
    if (strcmp(job, FL_WIRE_CLIENT_JOB) == 0)
        return &s->client;
    bool chief = strcmp(job, "chief") == 0;
    if (!chief && strcmp(job, "worker") != 0) /* a ps or an unknown job: no goodbye of theirs is awaited */
        return NULL;
    int count = chief ? s->num_chiefs : s->num_workers;
    if (task < 0 || task >= count)
        return NULL;
    return chief ? &s->chiefs[task] : &s->workers[task];
}

void fl_server_note_connected(fl_server *s, const char *job, int task)
{
    pthread_mutex_lock(&s->lock);
    fl_awaited_task *t = fl_server_awaited(s, job, task);
    if (t)
        t->connected++;
    if (t == &s->client)
        s->client_seen = true;
    pthread_mutex_unlock(&s->lock);
}

void fl_server_note_disconnected(fl_server *s, const char *job, int task)
{
    pthread_mutex_lock(&s->lock);
    fl_awaited_task *t = fl_server_awaited(s, job, task);
    if (t && t->connected > 0 && --t->connected == 0)
        t->absent_since = fl_now_s();
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

/* The workers and chiefs that have not said goodbye. */
static int remaining(const fl_server *s)
{
    int n = 0;
    for (int i = 0; i < s->num_workers; i++)
        n += !s->workers[i].done;
    for (int i = 0; i < s->num_chiefs; i++)
        n += !s->chiefs[i].done;
    return n;
}

static bool all_said_goodbye(const fl_server *s) { return s->num_workers + s->num_chiefs > 0 && remaining(s) == 0; }

/* A client's goodbye ends a task server's work (in-graph replication: the
 * tasks serve one client, which says goodbye at session close), but not a
 * ps that serves workers (between-graph): it ends when they have all said
 * goodbye (or gone, server_join.c), whatever a `client` says. */
bool fl_server_note_goodbye(fl_server *s, const char *job, int task)
{
    pthread_mutex_lock(&s->lock);
    fl_awaited_task *t = fl_server_awaited(s, job, task);
    bool counts = t && !t->done && (t != &s->client || !s->serves_workers);
    if (counts) {
        t->done = true;
        s->stats.goodbyes++;
    }
    if (counts && t != &s->client) /* a synchronous step's take learns how many workers can still bring one */
        fl_accumulator_set_note_remaining(fl_variable_container_accumulators(s->variables), remaining(s));
    bool last = counts && (t == &s->client || all_said_goodbye(s));
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return last;
}
