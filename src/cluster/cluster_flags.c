/* cluster_flags.c: a cluster spec from the flags of TensorFlow's distributed
 * examples (mnist_replica): --ps_hosts, --worker_hosts, --job_name and
 * --task_index. A program parses its own argv and hands the values here. */
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

static const fl_cluster_spelling flag_spelling = {
    .job_key = "--job_name",
    .index_key = "--task_index",
    .list_key = {"--ps_hosts", "--worker_hosts", NULL},
};

/* "h:1,h:2" becomes job's tasks 0 and 1; flag names the list in errors. */
static int add_host_list(fl_cluster *c, fl_job job, const char *list, const char *flag)
{
    const char *entry = list;
    for (;;) {
        size_t len = strcspn(entry, ",");
        char *address = fl_xmalloc(len + 1);
        memcpy(address, entry, len);
        address[len] = '\0';
        int rc = fl_cluster_add_task(c, job, address, flag);
        free(address);
        if (rc != 0)
            return -1;
        if (entry[len] == '\0')
            return 0;
        entry += len + 1;
    }
}

/* The lists alone, into a new cluster; NULL after fl_set_error. */
static fl_cluster *cluster_of_lists(const char *ps_hosts, const char *worker_hosts)
{
    if (!worker_hosts || !*worker_hosts) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "--worker_hosts is empty; list the workers as host:port,host:port");
        return NULL;
    }
    fl_cluster *c = fl_cluster_new();
    if (!c)
        return NULL;
    bool ok = true;
    if (ps_hosts && *ps_hosts)
        ok = add_host_list(c, FL_JOB_PS, ps_hosts, "--ps_hosts") == 0;
    ok = ok && add_host_list(c, FL_JOB_WORKER, worker_hosts, "--worker_hosts") == 0;
    if (!ok) {
        fl_cluster_free(c);
        return NULL;
    }
    return c;
}

fl_cluster *fl_cluster_client_from_flags(const char *ps_hosts, const char *worker_hosts)
{
    fl_cluster *c = cluster_of_lists(ps_hosts, worker_hosts);
    if (c) {
        c->is_client = true;
        c->job = FL_JOB_WORKER;
        c->task_index = 0;
    }
    return c;
}

fl_cluster *fl_cluster_from_flags(const char *ps_hosts, const char *worker_hosts,
                                  const char *job_name, int task_index)
{
    if (!job_name || !*job_name) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "--job_name is missing; say which job this task is in: ps or worker");
        return NULL;
    }
    fl_cluster *c = cluster_of_lists(ps_hosts, worker_hosts);
    if (c && fl_cluster_set_task(c, job_name, task_index, &flag_spelling) != 0) {
        fl_cluster_free(c);
        return NULL;
    }
    return c;
}
