/* server_internal.h: what the task server's two files share: server.c (the
 * listening socket, the event-loop thread, join and stop) and server_conn.c
 * (one connection: frames in, replies out, bad input refused). */
#ifndef FLOWLAB_DIST_SERVER_INTERNAL_H
#define FLOWLAB_DIST_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdio.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "flowlab.h"
#include "ps_store.h"
#include "wire.h"

struct fl_server {
    char name[64];        /* "/job:ps/task:0", for replies and logs */
    char log_prefix[32];  /* "ps 0" */
    char job[16];
    int task;
    FILE *log;
    double hello_timeout_s;
    struct event_base *base;
    struct evconnlistener *listener;
    pthread_t thread;
    bool thread_started;
    fl_ps_store *store;   /* touched by the loop thread only */
    const fl_cluster *cluster;
    fl_wire_buf out;      /* the reply being built (loop thread only) */
    fl_wire_message *message; /* the request being served (loop thread; large: names, slots) */
    void *scratch;        /* a received tensor in host order (loop thread only) */
    size_t scratch_cap;
    uint64_t applies;     /* updates applied so far: APPLIED's version */
    struct fl_server_conn *conns; /* open connections (loop thread; stop frees them) */
    /* Who has said goodbye, by job: the ps exits once every worker has. */
    int num_workers, num_chiefs;
    bool *worker_done, *chief_done;
    /* Shared with the threads that join or read stats: under lock. */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    fl_server_stats stats;
    bool all_done, loop_ended;
};

/* libevent's accept callback: a new connection to serve (server_conn.c). */
void fl_server_accept(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *address,
                      int length, void *server);
/* Closes and frees every open connection: after the loop has ended. */
void fl_server_close_all(fl_server *s);
/* Counts a goodbye from job/task; true when it was the last one expected. */
bool fl_server_note_goodbye(fl_server *s, const char *job, int task);
/* Bumps one of the stats counters under the lock. */
void fl_server_count(fl_server *s, uint64_t *counter, uint64_t by);

#endif
