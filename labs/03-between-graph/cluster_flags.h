/* cluster_flags.h: chapter 3's lab's own flags (the cluster, where a worker
 * computes, its security and the task server's limits), how they are read,
 * and the cluster they name. Included by between_graph.c after it names
 * `program`, which every error message starts with. */
#ifndef LAB03_CLUSTER_FLAGS_H
#define LAB03_CLUSTER_FLAGS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "../common/flags.h"
#include "../common/model.h" /* model_partitions */
#include "worker_towers.h" /* MAX_TOWERS */

/* This lab's own flags: the cluster and where a worker computes. */
typedef struct {
    const char *ps_hosts, *worker_hosts, *job_name, *device, *ps_strategy;
    const char *cluster_graph; /* a worker writes who it talked to, and how much */
    long task_index;
    long num_ps, port_base;    /* a launcher's tasks: how many are ps, their first port */
    long num_gpus;             /* 0: one copy of the model; K: the hybrid, K towers per worker */
    bool sync_replicas;        /* chapter 4: synchronous updates */
    long replicas_to_aggregate, total_num_replicas; /* 0: the number of workers */
    fl_cluster_security_flags security; /* --cluster_secret_file, --tls_*: chapter 4's securing a cluster */
    fl_server_options server;           /* --hello_timeout_s, --max_*: what a stranger or client may hold */
} cluster_flags;

static long parse_port_base(const char *flag, const char *value)
{
    long port = parse_count(program, flag, value, 1);
    if (port > 65535)
        bad_flag(program, flag, value, "it must be a port from 1 to 65535");
    return port;
}

static void set_cluster_flag(const char *flag, const char *value, void *options)
{
    cluster_flags *c = options;
    if (fl_cluster_security_flag(&c->security, flag, value))
        return;
    int limit = fl_server_option_flag(&c->server, flag, value);
    if (limit < 0)
        bad_flag(program, flag, value, fl_last_error());
    if (limit > 0)
        return;
    if (strcmp(flag, "--ps_hosts") == 0)
        c->ps_hosts = value;
    else if (strcmp(flag, "--worker_hosts") == 0)
        c->worker_hosts = value;
    else if (strcmp(flag, "--job_name") == 0)
        c->job_name = value;
    else if (strcmp(flag, "--device") == 0)
        c->device = value;
    else if (strcmp(flag, "--cluster_graph") == 0)
        c->cluster_graph = value;
    else if (strcmp(flag, "--task_index") == 0)
        c->task_index = parse_count(program, flag, value, 0);
    else if (strcmp(flag, "--num_gpus") == 0 && parse_count(program, flag, value, 1) > MAX_TOWERS)
        bad_flag(program, flag, value, "a worker builds at most 8 towers");
    else if (strcmp(flag, "--num_gpus") == 0)
        c->num_gpus = parse_count(program, flag, value, 1);
    else if (strcmp(flag, "--partitions") == 0 && parse_count(program, flag, value, 1) > 64)
        bad_flag(program, flag, value, "a kernel is split into at most 64 parts");
    else if (strcmp(flag, "--partitions") == 0)
        model_partitions = (int)parse_count(program, flag, value, 1); /* model.h's */
    else if (strcmp(flag, "--num_ps") == 0)
        c->num_ps = parse_count(program, flag, value, 0);
    else if (strcmp(flag, "--port_base") == 0)
        c->port_base = parse_port_base(flag, value);
    else if (strcmp(flag, "--replicas_to_aggregate") == 0)
        c->replicas_to_aggregate = parse_count(program, flag, value, 1);
    else if (strcmp(flag, "--total_num_replicas") == 0)
        c->total_num_replicas = parse_count(program, flag, value, 1);
    else if (strcmp(flag, "--sync_replicas") == 0 && (strcmp(value, "true") == 0 || strcmp(value, "false") == 0))
        c->sync_replicas = strcmp(value, "true") == 0;
    else if (strcmp(flag, "--sync_replicas") == 0)
        bad_flag(program, flag, value, "true or false");
    else if (strcmp(value, "round_robin") == 0 || strcmp(value, "greedy") == 0)
        c->ps_strategy = value;
    else
        bad_flag(program, flag, value, "round_robin or greedy");
}

/* --insecure_listen: the one switch among the cluster's flags. */
static bool set_cluster_switch(const char *arg, void *options)
{
    return fl_cluster_security_switch(&((cluster_flags *)options)->security, arg);
}

/* The cluster from the four flags; without them from the environment:
 * TF_CONFIG, else the variables of the launcher that started this task. */
static fl_cluster *read_cluster(const cluster_flags *c)
{
    bool any = c->ps_hosts || c->worker_hosts || c->job_name;
    const char *source = any ? "flags" : fl_cluster_environment_source();
    if (!source) {
        fprintf(stderr, "%s: no cluster: give --ps_hosts, --worker_hosts and --job_name, or TF_CONFIG (see --help)\n",
                program);
        exit(2);
    }
    bool launcher = !any && strcmp(source, "TF_CONFIG") != 0;
    fl_cluster *cluster = any ? fl_cluster_from_flags(c->ps_hosts, c->worker_hosts, c->job_name, (int)c->task_index)
                              : fl_cluster_from_environment((int)c->num_ps, (int)c->port_base);
    if (!cluster) {
        fprintf(stderr, "%s: %s%s (see --help)\n", program, fl_last_error(),
                launcher ? "; --num_ps and --port_base say how the launcher's tasks are used" : "");
        exit(2);
    }
    if (fl_cluster_apply_security(cluster, &c->security) != 0) {
        fprintf(stderr, "%s: %s (see --help)\n", program, fl_last_error());
        exit(2);
    }
    if (launcher) /* "worker 1 from Slurm's variables: 1 ps and 2 workers; listening on vm:8890" */
        printf("%s %d from %s's variables: %d ps and %d workers; listening on %s:%d\n", fl_cluster_job_name(cluster),
               fl_cluster_task_index(cluster), source, fl_cluster_num_tasks(cluster, "ps"),
               fl_cluster_num_tasks(cluster, "worker"),
               fl_cluster_task_host(cluster, fl_cluster_job_name(cluster), fl_cluster_task_index(cluster)),
               fl_cluster_task_port(cluster, fl_cluster_job_name(cluster), fl_cluster_task_index(cluster)));
    return cluster;
}

#endif
