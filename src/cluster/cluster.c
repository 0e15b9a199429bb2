/* cluster.c: the cluster spec of between-graph replication (chapter 3): jobs
 * of host:port tasks, which task this process is, and what a program asks of
 * them. The parsers that fill it are cluster_flags.c and cluster_tf_config.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster.h"

static const char *const job_names[FL_JOB_COUNT] = {"ps", "worker", "chief"};

int fl_job_from_name(const char *name)
{
    for (int j = 0; j < FL_JOB_COUNT; j++)
        if (name && strcmp(name, job_names[j]) == 0)
            return j;
    return -1;
}

const char *fl_job_name(fl_job job) { return job_names[job]; }

const char *fl_task_count_text(int n, char *buf, size_t len)
{
    if (n == 0)
        snprintf(buf, len, "no tasks");
    else if (n == 1)
        snprintf(buf, len, "1 task (only 0)");
    else if (n == 2)
        snprintf(buf, len, "2 tasks (0 and 1)");
    else
        snprintf(buf, len, "%d tasks (0 to %d)", n, n - 1);
    return buf;
}

/* Every way of making a cluster starts here, on the thread that will use
 * it: a wrong FLOWLAB_TASK_DEADLINE fails it, before any task waits. */
fl_cluster *fl_cluster_new(void)
{
    return fl_task_deadline_check() == 0 ? fl_xcalloc(1, sizeof(fl_cluster)) : NULL;
}

void fl_cluster_free(fl_cluster *c)
{
    if (!c)
        return;
    if (c->free_runtime)
        c->free_runtime(c->runtime);
    for (int j = 0; j < FL_JOB_COUNT; j++) {
        for (int t = 0; t < c->num_tasks[j]; t++)
            free(c->tasks[j][t].host);
        free(c->tasks[j]);
    }
    free(c);
}

void *fl_cluster_runtime(const fl_cluster *c, void *(*make_runtime)(const fl_cluster *c),
                         void (*free_runtime)(void *runtime))
{
    static pthread_mutex_t making = PTHREAD_MUTEX_INITIALIZER; /* guards every cluster's slot */
    /* The slot is the cluster's own, filled once; the spec itself, which
     * callers see as const, never changes. */
    fl_cluster *owner = (fl_cluster *)c;
    pthread_mutex_lock(&making);
    if (!owner->runtime) {
        owner->runtime = make_runtime(c);
        owner->free_runtime = free_runtime;
    }
    void *runtime = owner->runtime;
    pthread_mutex_unlock(&making);
    return runtime;
}

/* A host name or IPv4 address; inside brackets, an IPv6 address (with an
 * optional %zone). Anything else, a stray space above all, is a typo. */
static bool host_is_valid(const char *host, size_t len, bool bracketed)
{
    for (size_t i = 0; i < len; i++) {
        char ch = host[i];
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                     ch == '.' || ch == '-' || ch == '_';
        if (!plain && !(bracketed && (ch == ':' || ch == '%')))
            return false;
    }
    return true;
}

/* The port after the last ':', 1 to 65535; -1 with the error set. */
static int parse_port(const char *text, const char *address, const char *where)
{
    size_t digits = strspn(text, "0123456789");
    if (digits == 0 || text[digits] != '\0') {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: \"%s\": the port \"%s\" is not a number", where, address, text);
        return -1;
    }
    /* Six digits or more cannot be a port, and could overflow strtol. */
    long port = digits > 5 ? 0 : strtol(text, NULL, 10);
    if (port < 1 || port > 65535) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: \"%s\": port %s is out of range (1 to 65535)", where, address, text);
        return -1;
    }
    return (int)port;
}

/* Splits "host:port" or "[v6]:port"; *host is allocated. */
static int split_address(const char *address, const char *where, char **host, int *port)
{
    const char *colon = strrchr(address, ':');
    if (!*address) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: an empty entry; separate host:port entries with one ',' and no ',' at the ends",
                          where);
        return -1;
    }
    if (!colon || (address[0] == '[' && colon[-1] != ']')) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: \"%s\" has no \":port\"; write host:port, as in localhost:2222", where, address);
        return -1;
    }
    bool bracketed = address[0] == '[' && colon[-1] == ']';
    const char *h = address + bracketed;
    size_t len = (size_t)(colon - address) - 2 * bracketed;
    if (len == 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: \"%s\" has no host before the \":port\"", where, address);
        return -1;
    }
    if (len > FL_MAX_HOST_LEN) { /* a name in DNS is at most 253 characters; longer is no host */
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: the host of \"%.40s...\" is %zu characters long; a host name or address has at "
                          "most %d", where, address, len, FL_MAX_HOST_LEN);
        return -1;
    }
    if (!host_is_valid(h, len, bracketed)) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: \"%s\": the host is not a host name or an address (IPv6 goes in brackets, "
                          "as in [::1]:2222)", where, address);
        return -1;
    }
    *port = parse_port(colon + 1, address, where);
    if (*port < 0)
        return -1;
    *host = fl_xmalloc(len + 1);
    memcpy(*host, h, len);
    (*host)[len] = '\0';
    return 0;
}

/* Two tasks at one address would both try to bind it. Spellings of one
 * machine ("localhost", "127.0.0.1") are not resolved here: the second
 * server to bind finds the port in use and says so. */
static int check_unique(const fl_cluster *c, const char *host, int port, const char *address,
                        const char *where)
{
    for (int j = 0; j < FL_JOB_COUNT; j++)
        for (int t = 0; t < c->num_tasks[j]; t++)
            if (c->tasks[j][t].port == port && strcasecmp(c->tasks[j][t].host, host) == 0) {
                fl_set_error_code(FL_INVALID_ARGUMENT,
                                  "%s: \"%s\" is also %s task %d", where, address, job_names[j], t);
                return -1;
            }
    return 0;
}

int fl_cluster_add_task(fl_cluster *c, fl_job job, const char *address, const char *where)
{
    char *host = NULL;
    int port = 0;
    if (split_address(address, where, &host, &port) != 0)
        return -1;
    if (check_unique(c, host, port, address, where) != 0) {
        free(host);
        return -1;
    }
    int n = c->num_tasks[job];
    c->tasks[job] = fl_xrealloc(c->tasks[job], (size_t)(n + 1) * sizeof *c->tasks[job]);
    c->tasks[job][n] = (fl_task_address){.host = host, .port = port};
    c->num_tasks[job] = n + 1;
    return 0;
}

int fl_cluster_set_task(fl_cluster *c, const char *job_name, int task_index,
                        const fl_cluster_spelling *spelling)
{
    int job = fl_job_from_name(job_name);
    if (job < 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s \"%s\": not one of ps, worker, chief", spelling->job_key, job_name);
        return -1;
    }
    int n = c->num_tasks[job];
    if (n == 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s \"%s\": the cluster has no %s tasks", spelling->job_key, job_name, job_name);
        return -1;
    }
    if (task_index < 0 || task_index >= n) {
        char count[48];
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s %d: %s lists %s", spelling->index_key, task_index, spelling->list_key[job],
                          fl_task_count_text(n, count, sizeof count));
        return -1;
    }
    c->job = (fl_job)job;
    c->task_index = task_index;
    return 0;
}

const char *fl_cluster_job_name(const fl_cluster *c)
{
    if (!c)
        return NULL;
    return c->is_client ? "client" : job_names[c->job];
}

int fl_cluster_task_index(const fl_cluster *c) { return c ? c->task_index : -1; }

int fl_cluster_num_tasks(const fl_cluster *c, const char *job)
{
    int j = fl_job_from_name(job);
    return c && j >= 0 ? c->num_tasks[j] : 0;
}

bool fl_cluster_is_chief(const fl_cluster *c)
{
    if (!c)
        return false;
    if (c->is_client) /* it initializes the variables, as a chief does */
        return true;
    if (c->num_tasks[FL_JOB_CHIEF] > 0)
        return c->job == FL_JOB_CHIEF;
    return c->job == FL_JOB_WORKER && c->task_index == 0;
}

const fl_task_address *fl_cluster_find_task(const fl_cluster *c, const char *job, int index,
                                            const char *caller)
{
    int j = fl_job_from_name(job);
    if (!c) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: the cluster is NULL", caller);
        return NULL;
    }
    if (j < 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: job \"%s\" is not one of ps, worker, chief", caller, job ? job : "(null)");
        return NULL;
    }
    if (index < 0 || index >= c->num_tasks[j]) {
        char count[48];
        fl_set_error_code(FL_NOT_FOUND, "%s: no %s task %d; job %s has %s", caller, job, index, job,
                          fl_task_count_text(c->num_tasks[j], count, sizeof count));
        return NULL;
    }
    return &c->tasks[j][index];
}

const char *fl_cluster_task_host(const fl_cluster *c, const char *job, int task)
{
    const fl_task_address *a = fl_cluster_find_task(c, job, task, "fl_cluster_task_host");
    return a ? a->host : NULL;
}

int fl_cluster_task_port(const fl_cluster *c, const char *job, int task)
{
    const fl_task_address *a = fl_cluster_find_task(c, job, task, "fl_cluster_task_port");
    return a ? a->port : -1;
}
