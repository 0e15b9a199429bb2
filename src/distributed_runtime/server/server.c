/* server.c: a task's server: it listens at the task's address in the
 * cluster spec, runs libevent's loop on a thread of its own, and for a ps
 * knows when every worker has finished, so the ps can exit by itself
 * instead of waiting in join forever (server_join.c). What one connection
 * does is in server_conn.c. */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/thread.h>

#include "distributed_runtime/partition/cluster_security.h"
#include "device.h"
#include "distributed_runtime/ps/cluster_state.h"
#include "distributed_runtime/transport/socket_writer.h"
#include "server_internal.h"

static pthread_once_t libevent_threads_once = PTHREAD_ONCE_INIT;

/* Other threads call event_base_loopexit (stop): libevent must lock. */
static void use_pthreads(void) { evthread_use_pthreads(); }

/* The socket address of the local task, as the spec spells it. */
static int resolve_own_address(const fl_cluster *c, struct addrinfo **out)
{
    const char *job = fl_cluster_job_name(c);
    int task = fl_cluster_task_index(c);
    char port[16];
    snprintf(port, sizeof port, "%d", fl_cluster_task_port(c, job, task));
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    int rc = getaddrinfo(fl_cluster_task_host(c, job, task), port, &hints, out);
    if (rc != 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "/job:%s/task:%d: cannot resolve its own host \"%s\": %s", job, task,
                          fl_cluster_task_host(c, job, task), gai_strerror(rc));
        return -1;
    }
    return 0;
}

static int listen_on_own_address(fl_server *s, const fl_cluster *c)
{
    struct addrinfo *address;
    if (resolve_own_address(c, &address) != 0)
        return -1;
    if (fl_check_listen_security(c, address->ai_addr, s->name, fl_cluster_task_host(c, s->job, s->task),
                                 fl_cluster_task_port(c, s->job, s->task), s->log) != 0) {
        freeaddrinfo(address); /* secure by default: listen_security.c */
        return -1;
    }
    unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
    s->listener = evconnlistener_new_bind(s->base, fl_server_accept, s, flags, 64, address->ai_addr,
                                          (int)address->ai_addrlen);
    int why = errno;
    freeaddrinfo(address);
    if (s->listener)
        return 0;
    const char *host = fl_cluster_task_host(c, s->job, s->task);
    int port = fl_cluster_task_port(c, s->job, s->task);
    if (why == EADDRINUSE)
        fl_set_error_code(FL_UNAVAILABLE,
                          "port %d of %s is already in use (at %s:%d): is another task or an earlier run still "
                          "there? Stop it, or give this task another port in the cluster spec",
                          port, s->name, host, port);
    else
        fl_set_error_code(fl_errno_code(why),
                          "%s cannot listen at %s:%d: %s (is %s an address of this machine?)", s->name, host, port,
                          strerror(why), host);
    return -1;
}

static void *run_loop(void *server)
{
    fl_server *s = server;
    fl_socket_writes_fail_quietly(); /* a peer killed while its reply is written */
    event_base_dispatch(s->base);
    fl_server_close_all(s); /* here, where SIGPIPE is blocked, not in the thread that stops the server */
    pthread_mutex_lock(&s->lock);
    s->loop_ended = true;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void free_server(fl_server *s)
{
    fl_server_close_all(s); /* none are left once the loop ran */
    fl_server_stop_partitions(s);
    fl_rendezvous_free(s->rendezvous);
    fl_variable_container_free(s->variables);
    if (s->listener)
        evconnlistener_free(s->listener);
    if (s->resume_accepting)
        event_free(s->resume_accepting);
    if (s->base)
        event_base_free(s->base);
    fl_wire_buf_free(&s->out);
    free(s->message);
    free(s->bytes_from);
    fl_wire_arena_free(s->arena);
    fl_server_join_free(s);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->changed);
    free(s);
}

static fl_server *new_server(const fl_cluster *c, const fl_server_options *o)
{
    fl_server *s = fl_xcalloc(1, sizeof *s);
    s->cluster = c;
    snprintf(s->job, sizeof s->job, "%s", fl_cluster_job_name(c));
    s->task = fl_cluster_task_index(c);
    snprintf(s->name, sizeof s->name, "/job:%s/task:%d", s->job, s->task);
    snprintf(s->log_prefix, sizeof s->log_prefix, "%s %d", s->job, s->task);
    s->limits = fl_server_limits_resolve(o);
    s->log = s->limits.log;
    s->rendezvous = fl_rendezvous_new();
    s->variables = fl_variable_container_new();
    fl_variable_container_set_limit(s->variables, s->limits.max_variables);
    fl_rendezvous_set_limits(s->rendezvous, (size_t)s->limits.max_waiting_value_bytes,
                             (size_t)s->limits.max_waiting_value_bytes_total, fl_task_deadline_s());
    s->message = fl_xmalloc(sizeof *s->message);
    s->arena = fl_wire_arena_new();
    fl_server_join_init(s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    return s;
}

/* The cluster knows its task's server (a worker's masters run their pieces
 * there): was becomes now when it was the one known. */
static void note_task_server(const fl_cluster *c, fl_server *was, fl_server *now)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    pthread_mutex_lock(&r->lock);
    if (r->task_server == was)
        r->task_server = now;
    pthread_mutex_unlock(&r->lock);
}

fl_server *fl_server_start(const fl_cluster *cluster, const fl_server_options *options)
{
    if (!cluster) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_server_start: no cluster spec");
        return NULL;
    }
    pthread_once(&libevent_threads_once, use_pthreads);
    /* The devices are found here, on the starting thread, not by the first
     * partition's run on a thread of its own: PoCL's LLVM gives the thread
     * that first loads it a signal stack of its own, which a thread that
     * then ends leaves dangling (AddressSanitizer stops on it). */
    fl_accelerator_count();
    fl_server *s = new_server(cluster, options);
    s->base = event_base_new();
    if (!s->base || listen_on_own_address(s, cluster) != 0 || fl_server_guard_listener(s) != 0) {
        if (!s->base || s->listener)
            fl_set_error_code(FL_INTERNAL, "%s: libevent could not make an event loop", s->name);
        free_server(s);
        return NULL;
    }
    if (pthread_create(&s->thread, NULL, run_loop, s) != 0) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "%s: cannot start the server's thread", s->name);
        free_server(s);
        return NULL;
    }
    s->thread_started = true;
    note_task_server(cluster, NULL, s);
    return s;
}

void fl_server_get_stats(fl_server *s, fl_server_stats *out)
{
    if (!out)
        return;
    if (!s) {
        *out = (fl_server_stats){0};
        return;
    }
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    pthread_mutex_unlock(&s->lock);
    out->waiting_value_bytes = fl_rendezvous_bytes(s->rendezvous);
    out->variables += fl_variable_container_count(s->variables); /* those the pieces on this task hold */
    out->variable_bytes += fl_variable_container_bytes(s->variables);
}

void fl_server_stop(fl_server *s)
{
    if (!s)
        return;
    note_task_server(s->cluster, s, NULL);
    if (s->thread_started) {
        /* loopexit, not loopbreak: libevent forgets a break asked for
         * before its loop has started, and a stop right after a start
         * would then wait for ever; an exit is an event the loop meets. */
        event_base_loopexit(s->base, NULL);
        pthread_join(s->thread, NULL);
    }
    free_server(s);
}
