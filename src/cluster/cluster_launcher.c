/* cluster_launcher.c: what the launcher resolvers (cluster_slurm.c,
 * cluster_mpi_launcher.c) share: reading a launcher's numeric variables, and
 * making the cluster of its ranks, ps first as TensorFlow's resolvers do. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

int fl_launcher_env_int(const char *name, long min, long max, const char *expected, long *value)
{
    const char *text = getenv(name);
    if (!text)
        return 1;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno == ERANGE || v < min || v > max) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s=\"%s\": expected %s", name, text, expected);
        return -1;
    }
    *value = v;
    return 0;
}

/* "vm:8888", as fl_cluster_add_task reads it. */
static int add_rank(fl_cluster *c, fl_job job, const char *host, int port, int rank)
{
    char address[FL_MAX_HOST_LEN + 16], where[48];
    snprintf(where, sizeof where, "the launcher's rank %d", rank);
    if (strlen(host) > FL_MAX_HOST_LEN) { /* not cut short into another name */
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: its host \"%.40s...\" is %zu characters long; a host name "
                          "has at most %d", where, host, strlen(host), FL_MAX_HOST_LEN);
        return -1;
    }
    snprintf(address, sizeof address, "%s:%d", host, port);
    return fl_cluster_add_task(c, job, address, where);
}

fl_cluster *fl_cluster_from_ranks(const char *const *hosts, const int *local_index, int n, int rank, int num_ps,
                                  int port_base, const char *size_name)
{
    if (num_ps < 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%d ps tasks: expected 0 or more", num_ps);
        return NULL;
    }
    if (num_ps >= n) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%d ps task%s and %d task%s in all (%s): the ps tasks are taken first and at least one "
                          "worker must be left; ask the launcher for more tasks or fewer ps",
                          num_ps, num_ps == 1 ? "" : "s", n, n == 1 ? "" : "s", size_name);
        return NULL;
    }
    fl_cluster *c = fl_cluster_new();
    if (!c)
        return NULL;
    for (int r = 0; r < n; r++) {
        long port = (long)port_base + local_index[r];
        if (port_base < 1 || port > 65535) {
            fl_set_error_code(FL_INVALID_ARGUMENT,
                              "port base %d: rank %d would listen on port %ld, outside 1 to 65535 (TensorFlow's "
                              "base is 8888)", port_base, r, port);
            fl_cluster_free(c);
            return NULL;
        }
        if (add_rank(c, r < num_ps ? FL_JOB_PS : FL_JOB_WORKER, hosts[r], (int)port, r) != 0) {
            fl_cluster_free(c);
            return NULL;
        }
    }
    c->job = rank < num_ps ? FL_JOB_PS : FL_JOB_WORKER;
    c->task_index = rank < num_ps ? rank : rank - num_ps;
    return c;
}
