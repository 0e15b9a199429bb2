/* connect.c: connecting to another task of the cluster, patiently. In a
 * cluster the tasks start in any order, so "connection refused" at first is
 * normal: try again after 50 ms, 100 ms, ... up to 1 s between tries, say
 * every few seconds whom we wait for, and stop with an error at a deadline
 * instead of waiting forever in silence. A refusal is another thing: a TLS
 * certificate the peer will not take is final, never tried again. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "connect.h"
#include "runtime.h"
#include "tls_tunnel.h"

double fl_connect_backoff_s(int attempt)
{
    double pause = 0.05;
    for (int i = 0; i < attempt && pause < 1.0; i++)
        pause *= 2;
    return pause < 1.0 ? pause : 1.0;
}

void fl_sleep_s(double seconds)
{
    struct timespec ts = {.tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - (time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* How long one try waits for the peer's SYN-ACK. A peer whose listen queue
 * is full (a ps under a flood of connections) drops SYNs, and a blocking
 * connect() left the retrying to the kernel: SYNs 1, 2, 4 ... 64 s apart,
 * 127 s in all, past our deadline, while the flood's fresh SYNs took every
 * slot that freed. Each try sends a fresh SYN. */
#define CONNECT_TRY_S 1.0

/* connect() that gives up after `seconds`: 0, or -1 with errno (ETIMEDOUT). */
static int connect_within(int fd, const struct sockaddr *to, socklen_t len, double seconds)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
        return -1;
    int why = connect(fd, to, len) == 0 ? 0 : errno;
    if (why == EINPROGRESS) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        socklen_t n = sizeof why;
        int ms = seconds > 0 ? (int)(seconds * 1000) : 0; /* never -1: that waits for ever */
        if (poll(&p, 1, ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &why, &n) != 0)
            why = ETIMEDOUT; /* a signal too: the caller tries again */
    }
    fcntl(fd, F_SETFL, flags); /* blocking again, as the handshake and TLS expect */
    errno = why;
    return why == 0 ? 0 : -1;
}

/* One try at every address host:port resolves to, each for at most
 * `seconds`: a connected socket, or -1 with the reason in *why (an errno value). */
static int try_connect(const struct addrinfo *addresses, double seconds, int *why)
{
    for (const struct addrinfo *a = addresses; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            *why = errno;
            continue;
        }
        if (connect_within(fd, a->ai_addr, a->ai_addrlen, seconds) == 0) {
            int one = 1; /* frames are small and answered at once: no Nagle delay */
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return fd;
        }
        *why = errno;
        close(fd);
    }
    return -1;
}

static int resolve(const fl_connect_options *o, struct addrinfo **out)
{
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(o->host, port, &hints, out);
    if (rc != 0) {
        fl_set_error_code(FL_UNAVAILABLE, "%s at %s:%d: cannot resolve \"%s\": %s (check the cluster spec's host "
                          "names)", o->who, o->host, o->port, o->host, gai_strerror(rc));
        return -1;
    }
    return 0;
}

int fl_connect_with_retry(const fl_connect_options *o)
{
    struct addrinfo *addresses;
    if (resolve(o, &addresses) != 0)
        return -1;
    FILE *log = o->log ? o->log : stderr;
    double every = o->log_every_s > 0 ? o->log_every_s : 5.0;
    double start = fl_now_us() * 1e-6, next_log = start + every;
    int why = 0;
    for (int attempt = 0;; attempt++) {
        double try_s = start + o->deadline_s - fl_now_s();
        int fd = try_connect(addresses, try_s < CONNECT_TRY_S ? try_s : CONNECT_TRY_S, &why);
        double now = fl_now_us() * 1e-6;
        if (fd >= 0) {
            if (now - start >= every) /* we said we were waiting: say it is over */
                fprintf(log, "%s: reached %s at %s:%d after %.0f s\n", o->log_prefix ? o->log_prefix : "flowlab",
                        o->who, o->host, o->port, now - start);
            freeaddrinfo(addresses);
            int out = o->tls ? fl_tls_tunnel_open(fd, o->tls, o->who) : fd; /* a failed TLS handshake is final */
            if (out >= 0) /* the handshake after it ends by the deadline too (a TLS tunnel: its end of the pair) */
                fl_socket_receive_within(out, start + o->deadline_s - fl_now_us() * 1e-6);
            return out;
        }
        if (now - start >= o->deadline_s)
            break;
        if (now >= next_log) {
            fprintf(log, "%s: waiting for %s at %s:%d for %.0f s (%s)\n", o->log_prefix ? o->log_prefix : "flowlab",
                    o->who, o->host, o->port, now - start, strerror(why));
            fflush(log);
            next_log += every;
        }
        double pause = fl_connect_backoff_s(attempt), left = start + o->deadline_s - now;
        fl_sleep_s(pause < left ? pause : left);
    }
    freeaddrinfo(addresses);
    fl_set_error_code(FL_UNAVAILABLE, "%s at %s:%d did not answer for %g s (%s); is the task running, and is its "
                      "address in the cluster spec right?",
                      o->who, o->host, o->port, o->deadline_s, strerror(why));
    return -1;
}

void fl_socket_receive_within(int fd, double seconds)
{
    if (seconds < 0.001 && seconds != 0)
        seconds = 0.001; /* 0 would mean no bound */
    struct timeval patience = {(time_t)seconds, (suseconds_t)((seconds - (time_t)seconds) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
}
