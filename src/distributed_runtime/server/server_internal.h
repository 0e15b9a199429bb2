/* server_internal.h: what the task server's files share: server.c (the
 * listening socket, the event-loop thread, join and stop), server_conn.c
 * (one connection's frames in), server_requests.c (each request served), server_reply.c (replies out), server_close.c (bad input
 * refused, connections closed). */
#ifndef FLOWLAB_DIST_SERVER_INTERNAL_H
#define FLOWLAB_DIST_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdio.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "flowlab_cluster.h"
#include "distributed_runtime/partition/rendezvous.h"
#include "distributed_runtime/transport/wire.h"
#include "variable_container.h"

/* The most bytes a connection reads or writes per trip through the loop. */
#define FL_SERVER_MAX_SINGLE_IO (4 << 20)
/* A frame this long is read into memory of its own (see server_conn.c). */
#define FL_SERVER_BIG_FRAME (256 << 10)

/* One task whose goodbye a server awaits (under the server's lock). */
typedef struct {
    bool done;           /* it said goodbye */
    bool gone;           /* counted as gone: absent for longer than the task deadline */
    int connected;       /* its welcomed connections open now */
    double absent_since; /* fl_now_s() at the server's start or its last disconnection */
} fl_awaited_task;

struct fl_server {
    char name[64];        /* "/job:ps/task:0", for replies and logs */
    char log_prefix[32];  /* "ps 0" */
    char job[16];
    int task;
    FILE *log;
    fl_server_options limits; /* every limit resolved to its value (server_limits.c) */
    struct event *resume_accepting; /* accepting paused: out of descriptors (server_guard.c) */
    uint64_t accept_pauses;
    uint64_t strangers_dropped;
    struct event_base *base;
    struct evconnlistener *listener;
    pthread_t thread;
    bool thread_started;
    const fl_cluster *cluster;
    fl_wire_buf out;      /* the reply being built (loop thread only) */
    fl_wire_message *message; /* the request being served (loop thread; large: names, slots) */
    fl_wire_arena *arena;     /* its body unpacked; a RUN_PARTITION's goes to its run's job */
    struct fl_server_conn *conns; /* open connections (loop thread; stop frees them) */
    /* In-graph replication across tasks (server_partitions.c). */
    fl_rendezvous *rendezvous;    /* values from other tasks, by step and edge */
    fl_variable_container *variables; /* every partition's variables on this task, by name */
    uint64_t next_handle;         /* the last partition handle given (loop thread) */
    struct fl_partition_job *jobs; /* partitions running on their runners (loop thread) */
    struct fl_runner_pool *runners; /* the threads that run them, made at the first run */
    bool serves_workers;  /* a worker or chief has sent ps requests: a client's goodbye does not end it */
    char sync_worker[64], async_worker[64]; /* the first to register each kind of update (server_sync_modes.c) */
    bool sync_modes_logged;       /* a refusal of the other kind is logged once (loop thread) */
    /* Shared with the threads that join or read stats: under lock. */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    fl_server_stats stats;
    struct fl_peer_bytes *bytes_from; /* bytes in per welcomed peer task (fl_server_count_in) */
    int nbytes_from;
    bool loop_ended;
    /* Whom join waits for (server_join.c): the workers and chiefs of the
     * spec by job, or the client of in-graph replication once one has
     * connected. Each is connected, or absent since a time; one absent for
     * longer than gone_after_s has finished or given up. */
    int num_workers, num_chiefs;
    fl_awaited_task *workers, *chiefs, client;
    bool client_seen;
    double gone_after_s;  /* fl_task_deadline_s() when the server started */
    double log_every_s;   /* a "waiting for" line this often (FLOWLAB_JOIN_LOG_EVERY_S, else 10 s) */
};

/* One client connection (server_conn.c). */
typedef struct fl_server_conn {
    fl_server *server;
    struct bufferevent *bev;
    fl_wire_conn order;
    char peer[80]; /* "127.0.0.1:40312" */
    char host[64]; /* "127.0.0.1": strangers are counted per address */
    struct event *deadline; /* until HELLO_OK: a stranger is dropped when it fires (server_guard.c) */
    char who[64];  /* "/job:worker/task:1" once it said HELLO */
    int bytes_from_slot; /* 1 + its task's index in the server's bytes_from; 0 until counted */
    char job[FL_WIRE_MAX_NAME + 1];
    int task;
    bool said_goodbye;
    bool requested; /* it has sent a request after its handshake */
    bool sent_values; /* a peer task's connection for SEND_TENSOR: it closes with no goodbye */
    bool closing;  /* refused: closes once the ERROR is out */
    bool reading_paused; /* too many replies unread (--max_unread_reply_bytes): until they drain */
    size_t room_made;      /* the length of the big frame memory was made for, until it is served */
    struct fl_partition_registry *partitions; /* what this client registered (server_partitions.c) */
    struct fl_partition_job *running; /* its RUN_PARTITION in flight: later frames wait */
    struct fl_partition_job *spare_job; /* its last run's, for the next (server_partitions.c) */
    fl_rendezvous_sender *values_sent; /* its SEND_TENSOR values waiting for runs (NULL: none sent) */
    unsigned char nonce[FL_WIRE_PROOF_BYTES]; /* the CHALLENGE sent, which its PROOF must answer */
    bool tls;              /* a TLS bufferevent (libevent_openssl): no tricks with its buffers */
    bool challenged;       /* sent a CHALLENGE, not yet welcomed: a stranger until it proves itself */
    bool heard;            /* its bytes have been read at least once (server_guard.c's eviction order) */
    struct fl_server_conn *next;
} fl_server_conn;

/* What serving a request takes. */
/* server_reply.c: sends s->out to c and empties it. */
void fl_server_send_out(fl_server_conn *c);
/* server_close.c: bad input: an ERROR, a log line, and the connection
 * closes once the error is out. */
void fl_server_refuse(fl_server_conn *c, uint32_t id, fl_wire_error_code code, const char *why);
/* A log line naming the connection's peer and task: "ps 0: lost 127.0.0.1:40312 (...): why". */
void fl_server_log_conn(const fl_server_conn *c, const char *what, const char *detail);
/* Unlinks and frees c now. */
void fl_server_free_conn(fl_server_conn *c);
/* server_handshake.c: HELLO_OK: from now on c's requests are served. */
void fl_server_welcome(fl_server_conn *c, uint32_t id);
/* With a cluster secret, sends c a CHALLENGE and returns
 * true (c is welcomed once its PROOF is right); without, false. */
bool fl_server_challenge(fl_server_conn *c, uint32_t id);
/* Checks c's PROOF: a right one is answered with SERVER_PROOF and HELLO_OK,
 * a wrong one refused (logged with c's peer, an ERROR, closed). */
void fl_server_serve_proof(fl_server_conn *c, uint32_t id, const fl_wire_handshake *h);
/* server_requests.c: one whole frame, checked for its place in the
 * conversation, parsed and served (never while the connection's partition
 * run is in flight: server_conn.c leaves the frames for later, acting on
 * each ABORT_STEP among them at once). */
void fl_server_serve_frame(fl_server_conn *c, const fl_wire_frame *f);
/* server_conn.c: serves the frames buffered (libevent's read callback). */
void fl_server_on_read(struct bufferevent *bev, void *conn);
/* server_reading.c: reads again, and serves what is buffered, unless
 * unread replies or a refusal hold the connection; and serves
 * what is buffered now (through libevent, which calls fl_server_on_read). */
void fl_server_resume_reading(fl_server_conn *c);
void fl_server_serve_buffered(fl_server_conn *c);

/* In-graph replication across tasks (server_partitions.c): the frames,
 * ABORT_STEP seen while a run is in flight (served at once, answered after
 * the run's reply), a closed connection's partitions and waiting values dropped, and at stop
 * every run aborted and joined. */
void fl_server_serve_partition_frame(fl_server_conn *c, const fl_wire_frame *f, const fl_wire_message *m);
void fl_server_peek_while_running(fl_server_conn *c, const fl_wire_frame *f);
void fl_server_drop_partitions(fl_server_conn *c);
void fl_server_stop_partitions(fl_server *s);
/* server_sync_modes.c: true, with st set (FAILED_PRECONDITION naming both
 * workers and --sync_replicas), when c's piece updates of the other kind
 * (synchronous or not) than another worker's pieces on this ps. */
bool fl_server_refuses_sync_mode(fl_server_conn *c, const fl_graph *piece, fl_status *st);

/* server_guard.c: bounds before authentication. A stranger gets its
 * deadline to HELLO_OK (the oldest stranger goes when a cap is reached);
 * welcomed, it loses it; a frame announced by a stranger's header is
 * checked from the header (only HELLO and PROOF); the listener pauses when
 * accept fails. -1 when libevent cannot make a timer. */
int fl_server_guard_stranger(fl_server_conn *c);
void fl_server_guard_welcomed(fl_server_conn *c);
bool fl_server_guard_allows(fl_server_conn *c, fl_wire_type announced, fl_status *st);
int fl_server_guard_listener(fl_server *s);
/* server_join.c: whom join waits for, set up from the spec at the
 * server's start, and freed with it. */
void fl_server_join_init(fl_server *s);
void fl_server_join_free(fl_server *s);
/* server_limits.c: options with every 0 replaced by its default. */
fl_server_options fl_server_limits_resolve(const fl_server_options *o);

/* libevent's accept callback: a new connection to serve (server_conn.c). */
void fl_server_accept(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *address,
                      int length, void *server);
/* server_close.c: closes and frees every open connection: after the loop has ended. */
void fl_server_close_all(fl_server *s);
/* Counts a goodbye from job/task; true when it was the last one expected
 * (every awaited task has said it). */
bool fl_server_note_goodbye(fl_server *s, const char *job, int task);
/* A welcomed connection of job/task opened or closed: join counts a task
 * absent for longer than the task deadline as gone (server_join.c). */
void fl_server_note_connected(fl_server *s, const char *job, int task);
void fl_server_note_disconnected(fl_server *s, const char *job, int task);
/* The awaited task job/task (a worker or chief of the spec, or the client),
 * or NULL for any other. Lock held. */
fl_awaited_task *fl_server_awaited(fl_server *s, const char *job, int task);
/* Notes who sends what: a worker's or chief's ps request makes s a ps that serves workers. */
void fl_server_note_request(fl_server *s, const fl_server_conn *c, fl_wire_type type);
/* Bumps one of the stats counters under the lock. */
void fl_server_count(fl_server *s, uint64_t *counter, uint64_t by);
/* A frame of `by` bytes in from c: the server's bytes_in and, once c said
 * who it is, that task's (fl_server_bytes_from). */
void fl_server_count_in(fl_server_conn *c, uint64_t by);
/* What task ("/job:ps/task:0") has sent to s so far. */
uint64_t fl_server_bytes_from(fl_server *s, const char *task);

#endif
