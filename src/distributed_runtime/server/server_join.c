/* server_join.c: fl_server_join, the wait of a ps (or a task server) for
 * the goodbyes of the tasks it serves. While one of them is not connected,
 * the wait names whom it still waits for every 10 s; and it ends: a worker
 * that neither said goodbye nor was connected for longer than the task
 * deadline has finished or given up. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/partition/partition_client.h"
#include "server_internal.h"

#define LOG_EVERY_S 10
#define NAMES_LEN 1536 /* a log line's list of tasks: a long one ends in "..." */

void fl_server_join_init(fl_server *s)
{
    s->num_workers = fl_cluster_num_tasks(s->cluster, "worker");
    s->num_chiefs = fl_cluster_num_tasks(s->cluster, "chief");
    s->workers = fl_xcalloc((size_t)s->num_workers + 1, sizeof *s->workers);
    s->chiefs = fl_xcalloc((size_t)s->num_chiefs + 1, sizeof *s->chiefs);
    double now = fl_now_s();
    for (int i = 0; i < s->num_workers; i++)
        s->workers[i].absent_since = now;
    for (int i = 0; i < s->num_chiefs; i++)
        s->chiefs[i].absent_since = now;
    s->client.absent_since = now;
    s->gone_after_s = fl_task_deadline_s();
    const char *text = getenv("FLOWLAB_JOIN_LOG_EVERY_S");
    char *end = NULL;
    s->log_every_s = text ? strtod(text, &end) : 0;
    if (!text || end == text || *end || !(s->log_every_s > 0)) {
        if (text)
            fprintf(s->log, "%s: FLOWLAB_JOIN_LOG_EVERY_S=\"%.32s\" is not a number of seconds above 0; "
                    "logging whom join waits for every %d s\n", s->log_prefix, text, LOG_EVERY_S);
        s->log_every_s = LOG_EVERY_S;
    }
}

void fl_server_join_free(fl_server *s)
{
    free(s->workers);
    free(s->chiefs);
}

/* ---- whom the server waits for (lock held) ---- */

/* In-graph replication: a task server serves one client at a time, whose
 * goodbye ends it. Between-graph: a ps serves every worker and chief. */
static bool waits_for_client(const fl_server *s) { return s->client_seen && !s->serves_workers; }

/* Only a ps and a client's task server count a task as gone: a worker's own
 * server in between-graph training is never told goodbye, nor waited for. */
static bool may_count_gone(const fl_server *s, const fl_awaited_task *t)
{
    return t == &s->client || strcmp(s->job, "ps") == 0;
}

// [book:settled]
/* A task is settled when it said goodbye, or when it has been neither
 * connected nor heard from for longer than the task deadline since this
 * server started or it last disconnected: a live worker that loses its ps
 * tries to reach it again for exactly that long and then gives up, so one
 * absent for longer has finished or given up. */
static bool settled(fl_server *s, fl_awaited_task *t, double now)
{
    if (!t->done && !t->gone && t->connected == 0 && may_count_gone(s, t) && now - t->absent_since > s->gone_after_s)
        t->gone = true;
    return t->done || t->gone;
}
// [end:settled]

/* Every awaited task has said goodbye or is gone (marking those gone now). */
static bool finished(fl_server *s, double now)
{
    if (waits_for_client(s))
        return settled(s, &s->client, now);
    bool all = s->num_workers + s->num_chiefs > 0;
    for (int i = 0; i < s->num_workers; i++)
        all = settled(s, &s->workers[i], now) && all;
    for (int i = 0; i < s->num_chiefs; i++)
        all = settled(s, &s->chiefs[i], now) && all;
    return all;
}

/* When a task not settled yet would count as gone: the next time to look. */
static double next_expiry(const fl_server *s, const fl_awaited_task *t, double soonest)
{
    if (t->done || t->gone || t->connected > 0 || !may_count_gone(s, t))
        return soonest;
    double at = t->absent_since + s->gone_after_s + 0.01;
    return at < soonest ? at : soonest;
}

static double next_change(const fl_server *s, double soonest)
{
    if (waits_for_client(s))
        return next_expiry(s, &s->client, soonest);
    for (int i = 0; i < s->num_workers; i++)
        soonest = next_expiry(s, &s->workers[i], soonest);
    for (int i = 0; i < s->num_chiefs; i++)
        soonest = next_expiry(s, &s->chiefs[i], soonest);
    return soonest;
}

/* ---- what it says ---- */

static void append(char *names, const char *text)
{
    size_t used = strlen(names);
    if (used + strlen(text) + 5 < NAMES_LEN)
        snprintf(names + used, NAMES_LEN - used, "%s%s", used ? ", " : "", text);
    else if (used + 5 < NAMES_LEN && strcmp(names + used - 3, "...") != 0)
        snprintf(names + used, NAMES_LEN - used, ", ...");
}

typedef enum { STILL_AWAITED, COUNTED_GONE, SAID_GOODBYE } task_state;

static task_state state_of(const fl_awaited_task *t)
{
    return t->done ? SAID_GOODBYE : t->gone ? COUNTED_GONE : STILL_AWAITED;
}

/* Appends job/task to the list when it is in the state asked for (a task
 * still awaited with whether it is connected). */
static void name_task(const fl_awaited_task *t, const char *job, int task, task_state state, double now,
                      char *names)
{
    char text[128];
    if (state_of(t) != state)
        return;
    int n = task < 0 ? snprintf(text, sizeof text, "its client (/job:%s)", job)
                     : snprintf(text, sizeof text, "/job:%s/task:%d", job, task);
    if (state == STILL_AWAITED && t->connected > 0)
        snprintf(text + n, sizeof text - (size_t)n, " (connected)");
    else if (state == STILL_AWAITED)
        snprintf(text + n, sizeof text - (size_t)n, " (not seen for %.0f s)", now - t->absent_since);
    append(names, text);
}

static void name_tasks(const fl_server *s, task_state state, double now, char *names)
{
    names[0] = '\0';
    if (waits_for_client(s))
        return name_task(&s->client, FL_WIRE_CLIENT_JOB, -1, state, now, names);
    for (int i = 0; i < s->num_chiefs; i++)
        name_task(&s->chiefs[i], "chief", i, state, now, names);
    for (int i = 0; i < s->num_workers; i++)
        name_task(&s->workers[i], "worker", i, state, now, names);
}

/* "ps 0: waiting for goodbyes from /job:worker/task:1 (connected),
 * /job:worker/task:2 (not seen for 34 s)": every log_every_s while join
 * waits and one of them is not connected. */
static bool absent(const fl_awaited_task *t) { return state_of(t) == STILL_AWAITED && t->connected == 0; }

/* Whether a task awaited is not connected now: while all are, the server
 * serves them and says nothing. */
static bool someone_absent(const fl_server *s)
{
    if (waits_for_client(s))
        return absent(&s->client);
    bool any = strcmp(s->job, "ps") != 0; /* a task server without a client yet */
    for (int i = 0; i < s->num_workers; i++)
        any = any || absent(&s->workers[i]);
    for (int i = 0; i < s->num_chiefs; i++)
        any = any || absent(&s->chiefs[i]);
    return any;
}

static void say_waiting(const fl_server *s, double now)
{
    char names[NAMES_LEN];
    if (!someone_absent(s))
        return;
    name_tasks(s, STILL_AWAITED, now, names);
    if (strcmp(s->job, "ps") != 0 && !waits_for_client(s))
        fprintf(s->log, "%s: waiting for its client's goodbye (no client has connected yet)\n", s->log_prefix);
    else
        fprintf(s->log, "%s: waiting for goodbyes from %s; a task neither connected nor heard from for %.0f s "
                "(FLOWLAB_TASK_DEADLINE) counts as gone\n", s->log_prefix, names, s->gone_after_s);
    fflush(s->log);
}

/* The end of a wait that counted tasks as gone says which, and who finished. */
static void say_gone(const fl_server *s, double now)
{
    char gone[NAMES_LEN], finished[NAMES_LEN];
    name_tasks(s, COUNTED_GONE, now, gone);
    name_tasks(s, SAID_GOODBYE, now, finished);
    if (!gone[0])
        return;
    fprintf(s->log, "%s: done waiting: counted as gone rather than finished (neither connected nor heard from for "
            "%.0f s, FLOWLAB_TASK_DEADLINE): %s; said goodbye: %s\n", s->log_prefix, s->gone_after_s, gone,
            finished[0] ? finished : "none");
    fflush(s->log);
}

/* ---- the wait ---- */

int fl_server_join(fl_server *s, double timeout_s)
{
    if (!s) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_server_join: the server is NULL (did fl_server_start fail?)");
        return -1;
    }
    double now = fl_now_s(), end = timeout_s > 0 ? now + timeout_s : 1e300, next_line = now + s->log_every_s;
    pthread_mutex_lock(&s->lock);
    bool done = finished(s, now);
    while (!done && !s->loop_ended && now < end) {
        if (now >= next_line) {
            say_waiting(s, now);
            next_line = now + s->log_every_s;
        }
        double wake = next_change(s, end < next_line ? end : next_line);
        struct timespec until = fl_wall_after(wake - now);
        pthread_cond_timedwait(&s->changed, &s->lock, &until);
        now = fl_now_s();
        done = finished(s, now);
    }
    if (done)
        say_gone(s, now);
    pthread_mutex_unlock(&s->lock);
    return done ? 0 : 1;
}
