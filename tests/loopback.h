/* loopback.h: what the tests of chapter 3's tasks need from the network:
 * ports on 127.0.0.1 that nothing uses, and a client socket whose reads
 * give up after a deadline, so that a test never hangs on a peer. */
#ifndef FLOWLAB_TESTS_LOOPBACK_H
#define FLOWLAB_TESTS_LOOPBACK_H

#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* A socket bound (and listening, when listening) on 127.0.0.1:*port (0:
 * any port, which *port then receives), or -1 when the port is taken. */
static inline int loopback_bind(int *port, int listening)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || (listening && listen(fd, 1) != 0) ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* The ports this test has handed out. The kernel may pick a port it just
 * released again, so two calls in a row for one cluster spec could return
 * the same port ("no cluster spec": its two tasks share an address). */
static int loopback_given[256];
static int loopback_given_count;

static inline int loopback_was_given(int port, int count)
{
    for (int i = 0; i < loopback_given_count && i < 256; i++)
        if (loopback_given[i] >= port && loopback_given[i] < port + count)
            return 1;
    return 0;
}

static inline void loopback_remember(int port, int count)
{
    for (int i = 0; i < count; i++)
        loopback_given[loopback_given_count++ % 256] = port + i;
}

/* Where the kernel's ephemeral ports begin (net.ipv4.ip_local_port_range):
 * the source ports of every process's outgoing connections. */
static inline int loopback_ephemeral_start(void)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    int start = 32768;
    if (f && fscanf(f, "%d", &start) != 1)
        start = 32768;
    if (f)
        fclose(f);
    return start > 2048 ? start : 32768;
}

/* A port nothing listens on now and this test has not handed out before,
 * chosen at random below the ephemeral range. A port the kernel picked
 * (bind to port 0) is an ephemeral one: between its release here and a
 * server's bind, any process's outgoing connection may take it as its
 * source port, and under prove -j2 other tests open thousands. */
static inline int loopback_free_port(void)
{
    static unsigned seed;
    if (!seed)
        seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);
    int top = loopback_ephemeral_start(), bottom = top > 12000 ? 10000 : 1024;
    for (int attempt = 0; attempt < 200; attempt++) {
        int port = bottom + (int)(rand_r(&seed) % (unsigned)(top - bottom - 16)), fd = loopback_bind(&port, 0);
        if (fd < 0)
            continue;
        close(fd);
        if (!loopback_was_given(port, 1)) {
            loopback_remember(port, 1);
            return port;
        }
    }
    return 0;
}

/* A port P with P .. P+count-1 all free now (for a launcher's --base_port),
 * or 0. */
static inline int loopback_free_ports(int count)
{
    for (int attempt = 0; attempt < 50; attempt++) {
        int base = loopback_free_port(), held = 0, fds[16];
        while (base > 0 && held < count && held < 16) {
            int port = base + held;
            if ((fds[held] = loopback_bind(&port, 0)) < 0)
                break;
            held++;
        }
        for (int i = 0; i < held; i++)
            close(fds[i]);
        if (held == count && !loopback_was_given(base + 1, count - 1)) {
            loopback_remember(base + 1, count - 1);
            return base;
        }
    }
    return 0;
}

/* A connection to 127.0.0.1:port whose reads give up after seconds, or -1. */
static inline int loopback_connect(int port, int seconds)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval deadline = {seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A cluster of one ps and one worker on ports nothing uses now, as the
 * --ps_hosts and --worker_hosts of fl_cluster_from_flags. */
static inline void loopback_cluster_hosts(char *ps_hosts, char *worker_hosts, size_t len)
{
    snprintf(ps_hosts, len, "127.0.0.1:%d", loopback_free_port());
    snprintf(worker_hosts, len, "127.0.0.1:%d", loopback_free_port());
}

#endif
