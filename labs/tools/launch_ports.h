/* launch_ports.h: the loopback ports of a launched cluster: --base_port's,
 * each checked free, or free ones the system picks, and the host lists
 * (--ps_hosts, --worker_hosts) made of them (or of --links' addresses). */
#ifndef FLOWLAB_LAUNCH_PORTS_H
#define FLOWLAB_LAUNCH_PORTS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "launch_flags.h"
#include "launch_output.h"

/* A socket bound to 127.0.0.1:port (0: any free port), or -1. SO_REUSEADDR
 * as the task's server sets it, so a port in TIME_WAIT counts as free. */
static int bind_loopback(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Ports for the n tasks named, ps tasks first: --base_port's, each checked free, or
 * the system's free ones (all held open at once, so no two are the same). */
static int pick_ports(int base_port, const char *const *names, int n, int *ports)
{
    int fds[LAUNCH_MAX_TASKS], rc = 0;
    for (int i = 0; i < n; i++) {
        int want = base_port > 0 ? base_port + i : 0;
        fds[i] = bind_loopback(want);
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        if (fds[i] < 0 || getsockname(fds[i], (struct sockaddr *)&a, &len) != 0) {
            if (want > 0)
                say("port %d (for %s) is not free: %s; choose another --base_port, or leave it out to use "
                    "free ports", want, names[i], strerror(errno));
            else
                say("cannot find a free loopback port for %s: %s", names[i], strerror(errno));
            n = i; /* close only what was opened */
            rc = -1;
            break;
        }
        ports[i] = ntohs(a.sin_port);
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return rc;
}

/* "host:p,host:q" for count tasks from first: their addresses and ports. */
static void host_list(char (*hosts)[40], const int *ports, int first, int count, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < count && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s%s:%d", i ? "," : "", hosts[first + i], ports[first + i]);
}

#endif
