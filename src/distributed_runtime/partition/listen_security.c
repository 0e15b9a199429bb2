/* listen_security.c: secure by default on a network. A task server that
 * would listen where other machines can reach it (0.0.0.0, the machine's
 * own address) must have a way to tell members from strangers, a shared
 * secret or TLS, or be told explicitly that an open cluster is wanted. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cluster_security.h"
#include "distributed_runtime/ps/cluster_state.h"

/* 127.0.0.0/8, ::1, and ::ffff:127.x.y.z: reachable from this machine only. */
static bool is_loopback(const struct sockaddr *addr)
{
    if (addr->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (addr->sa_family != AF_INET6)
        return false;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)addr)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/* FLOWLAB_INSECURE_LISTEN=1 (or true, yes): the knob for programs that
 * take no --insecure_listen flag. */
static bool insecure_listen_from_environment(void)
{
    const char *v = getenv("FLOWLAB_INSECURE_LISTEN");
    return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0);
}

int fl_check_listen_security(const fl_cluster *c, const struct sockaddr *addr, const char *task, const char *host,
                             int port, void *log)
{
    size_t secret_len;
    bool secured = fl_cluster_secret(c, &secret_len) != NULL || fl_cluster_tls(c, true) != NULL;
    if (is_loopback(addr) || secured)
        return 0;
    if (fl_cluster_state_of(c)->insecure_listen || insecure_listen_from_environment()) {
        fprintf(log ? log : stderr,
                "%s: WARNING: listening at %s:%d, which other machines may reach, with no secret and no TLS "
                "(--insecure_listen): anyone who can connect can read and change this cluster's model\n",
                task, host, port);
        fflush(log ? log : stderr);
        return 0;
    }
    fl_set_error_code(FL_FAILED_PRECONDITION,
                      "%s refuses to listen at %s:%d without a secret: other machines may reach that address, and "
                      "anyone who connects could read and change the model. Give every task "
                      "--cluster_secret_file F (launch_cluster makes one; or TLS with --tls_cert, --tls_key, "
                      "--tls_ca), listen on 127.0.0.1, or, on a network you trust, allow it anyway with "
                      "--insecure_listen (FLOWLAB_INSECURE_LISTEN=1)",
                      task, host, port);
    return -1;
}
