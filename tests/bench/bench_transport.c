/* bench_transport.c: what a value that crosses tasks costs on the wire.
 * A ps task and a worker task, both task servers in this process on
 * loopback, and a client whose step only moves dense_1's 13.1 MB from a
 * variable on the ps to an Identity on the worker (one Send/Recv pair, one
 * SEND_TENSOR, read by the worker's server). The reference is the same
 * bytes through a plain loopback TCP socket, read by a thread in the
 * largest reads the kernel gives. Both as MB/s, round by round. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_table.h"
#include "bench_transport.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "../loopback.h"

#define FLOATS 3276800 /* dense_1's kernel, 3136 x 1024 */
#define BYTES ((size_t)FLOATS * 4)
#define MEASURED 20

/* The median seconds of a step that moves the value, or NaN. */
static double flowlab_seconds(fl_session *s, fl_node *target)
{
    double t[MEASURED];
    for (int i = -2; i < MEASURED; i++) { /* two to warm up */
        double start = now();
        if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &target, 1) != 0)
            return NAN;
        if (i >= 0)
            t[i] = now() - start;
    }
    return median(t, MEASURED);
}

typedef struct {
    int fd;
    unsigned char *buf;
} socket_reader;

static void *read_values(void *arg)
{
    socket_reader *r = arg;
    for (int i = 0; i < MEASURED + 2; i++) {
        size_t got = 0;
        ssize_t n = 1;
        while (got < BYTES && (n = recv(r->fd, r->buf + got, BYTES - got, 0)) > 0)
            got += (size_t)n;
        if (n <= 0 || send(r->fd, "k", 1, MSG_NOSIGNAL) != 1)
            break;
    }
    return NULL;
}

static bool send_all(int fd, const unsigned char *p, size_t len)
{
    ssize_t n = 1;
    while (len > 0 && (n = send(fd, p, len, MSG_NOSIGNAL)) > 0) {
        p += n;
        len -= (size_t)n;
    }
    return len == 0;
}

/* The median seconds of BYTES through a loopback socket, each acknowledged, or NaN. */
static double socket_seconds(void)
{
    int pair[2] = {-1, -1}, port = 0, listener = loopback_bind(&port, 1);
    double t[MEASURED], result = NAN;
    socket_reader r = {.buf = malloc(BYTES)};
    unsigned char *value = calloc(BYTES, 1), ack;
    pair[0] = listener < 0 ? -1 : loopback_connect(port, 30);
    r.fd = pair[1] = pair[0] < 0 ? -1 : accept(listener, NULL, NULL);
    pthread_t thread;
    if (r.fd >= 0 && r.buf && value && pthread_create(&thread, NULL, read_values, &r) == 0) {
        int i = -2;
        for (; i < MEASURED; i++) {
            double start = now();
            if (!send_all(pair[0], value, BYTES) || recv(pair[0], &ack, 1, MSG_WAITALL) != 1)
                break;
            if (i >= 0)
                t[i] = now() - start;
        }
        shutdown(pair[0], SHUT_RDWR);
        pthread_join(thread, NULL);
        result = i == MEASURED ? median(t, MEASURED) : NAN;
    }
    for (int k = 0; k < 2; k++)
        if (pair[k] >= 0)
            close(pair[k]);
    if (listener >= 0)
        close(listener);
    free(r.buf);
    free(value);
    return result;
}

/* The client's graph: the value on the ps, an Identity of it on the worker. */
static fl_node *build_move(fl_graph *g, fl_node **init)
{
    fl_device_scope_push(g, "/job:ps/task:0/cpu:0");
    fl_node *v = fl_get_variable(g, "dense_1/kernel", fl_shape_make(2, 3136, 1024), fl_constant_initializer(1));
    fl_device_pop(g);
    fl_device_scope_push(g, "/job:worker/task:0/cpu:0");
    fl_node *moved = fl_identity(g, v, "moved");
    fl_device_pop(g);
    *init = fl_global_variables_initializer(g);
    return moved;
}

/* One round of the flowlab side: servers, client, steps; seconds or NaN. */
static double flowlab_round(void)
{
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    fl_cluster *ps = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    fl_cluster *worker = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    fl_cluster *client = fl_cluster_client_from_flags(ps_hosts, worker_hosts);
    FILE *quiet = fopen("/dev/null", "w"); /* the servers' lines are not the table's */
    fl_server_options options = {.log = quiet};
    fl_server *ps_server = ps ? fl_server_start(ps, &options) : NULL;
    fl_server *worker_server = worker ? fl_server_start(worker, &options) : NULL;
    fl_graph *g = fl_graph_new();
    fl_node *init = NULL, *moved = build_move(g, &init);
    fl_session *s = client && ps_server && worker_server ? fl_session_new(g, &(fl_session_options){.cluster = client})
                                                         : NULL;
    double seconds = NAN;
    if (s && fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) == 0)
        seconds = flowlab_seconds(s, moved);
    if (isnan(seconds))
        note("transport: %s", s ? fl_session_error(s) : fl_last_error());
    fl_session_free(s);
    fl_graph_free(g);
    fl_server_stop(worker_server);
    fl_server_stop(ps_server);
    fl_cluster_free(client);
    fl_cluster_free(worker);
    fl_cluster_free(ps);
    if (quiet)
        fclose(quiet);
    return seconds;
}

void bench_transport(void)
{
    int rounds = bench_rounds();
    double ours[BENCH_MAX_ROUNDS], theirs[BENCH_MAX_ROUNDS];
    double mb = (double)BYTES / 1e6;
    printf("  ch3 transport: %d rounds of %d steps (after 2 to warm up), each moving %.1f MB one way on loopback, "
           "then %d sends of the same bytes through a plain socket\n", rounds, MEASURED, mb, MEASURED);
    fflush(stdout);
    for (int r = 0; r < rounds; r++) {
        ours[r] = mb / flowlab_round();
        theirs[r] = mb / socket_seconds();
    }
    row_rounds("transport", "ch3: a 13 MB value ps -> worker vs a socket", "ch3 13 MB value one way", "MB/s", ours,
               theirs, rounds, "plain socket");
}
