/* cluster_slurm.c: the cluster of a Slurm job step, from the variables srun
 * gives each task, as TensorFlow's SlurmClusterResolver reads them: the
 * step's nodes (SLURM_STEP_NODELIST), its tasks on each node
 * (SLURM_STEP_TASKS_PER_NODE) and this task's rank (SLURM_PROCID). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "hostlist.h"

static const char *const slurm_variables[] = {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST",
                                              "SLURM_STEP_TASKS_PER_NODE"};

/* A whole number of 1 to 9 digits at *p, which moves past it; -1 if none. */
static long read_count(const char **p)
{
    const char *start = *p;
    while (isdigit((unsigned char)**p) && *p - start < 10)
        (*p)++;
    if (*p == start || *p - start > 9)
        return -1;
    return strtol(start, NULL, 10);
}

/* One item of SLURM_STEP_TASKS_PER_NODE, "2" or "2(x3)", at *p: the tasks
 * per node and on how many nodes. -1 when it is neither. */
static int read_item(const char **p, long *tasks, long *nodes)
{
    *tasks = read_count(p);
    *nodes = 1;
    if (*tasks < 1)
        return -1;
    if (strncmp(*p, "(x", 2) != 0)
        return 0;
    *p += 2;
    *nodes = read_count(p);
    if (*nodes < 1 || **p != ')')
        return -1;
    (*p)++;
    return 0;
}

/* SLURM_STEP_TASKS_PER_NODE, "2(x3),1", as one count per node (2 2 2 1) in
 * *counts: the number of nodes, or -1 after fl_set_error. */
static int parse_tasks_per_node(const char *text, int **counts)
{
    int n = 0, capacity = 0;
    *counts = NULL;
    for (const char *p = text;;) {
        const char *item = p;
        long tasks, nodes;
        if (read_item(&p, &tasks, &nodes) != 0 || (*p && *p != ',') || n + nodes > FL_HOSTLIST_MAX_HOSTS) {
            fl_set_error_code(FL_INVALID_ARGUMENT,
                              "SLURM_STEP_TASKS_PER_NODE=\"%s\": \"%.*s\" is not a count of tasks such as 2 or 2(x3) "
                              "(2 tasks on each of 3 nodes), at most %d nodes",
                              text, (int)strcspn(item, ","), item, FL_HOSTLIST_MAX_HOSTS);
            free(*counts);
            *counts = NULL;
            return -1;
        }
        if (n + nodes > capacity) {
            capacity = (int)(n + nodes) * 2;
            *counts = fl_xrealloc(*counts, (size_t)capacity * sizeof **counts);
        }
        for (long k = 0; k < nodes; k++)
            (*counts)[n++] = (int)tasks;
        if (!*p++)
            return n;
    }
}

/* Checks the counts against the nodes and the tasks: 0, or -1 after
 * fl_set_error naming both variables that disagree. */
static int check_step(int num_nodes, int num_counts, const int *counts, long num_tasks)
{
    const char *nodelist = getenv("SLURM_STEP_NODELIST"), *per_node = getenv("SLURM_STEP_TASKS_PER_NODE");
    if (num_nodes != num_counts) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "SLURM_STEP_NODELIST=\"%s\" names %d node%s but SLURM_STEP_TASKS_PER_NODE=\"%s\" counts "
                          "tasks on %d", nodelist, num_nodes, num_nodes == 1 ? "" : "s", per_node, num_counts);
        return -1;
    }
    long sum = 0;
    for (int i = 0; i < num_counts; i++)
        sum += counts[i];
    if (sum != num_tasks) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "SLURM_STEP_TASKS_PER_NODE=\"%s\" adds up to %ld task%s but SLURM_STEP_NUM_TASKS is %ld",
                          per_node, sum, sum == 1 ? "" : "s", num_tasks);
        return -1;
    }
    return 0;
}

/* The step's tasks in rank order, block by block: node 0's tasks, then node
 * 1's, each with its place on its node (for its port). */
static fl_cluster *cluster_of_step(char **nodes, const int *counts, int num_nodes, long num_tasks, long rank,
                                   int num_ps, int port_base)
{
    const char **host_of_rank = fl_xmalloc((size_t)num_tasks * sizeof *host_of_rank);
    int *local_index = fl_xmalloc((size_t)num_tasks * sizeof *local_index);
    int r = 0;
    for (int node = 0; node < num_nodes; node++)
        for (int k = 0; k < counts[node]; k++, r++) {
            host_of_rank[r] = nodes[node];
            local_index[r] = k;
        }
    fl_cluster *c = fl_cluster_from_ranks(host_of_rank, local_index, (int)num_tasks, (int)rank, num_ps,
                                          port_base, "SLURM_STEP_NUM_TASKS");
    free(host_of_rank);
    free(local_index);
    return c;
}

/* SLURM_STEP_NUM_TASKS and SLURM_PROCID, checked: 0, or -1 after fl_set_error. */
static int read_rank(long *num_tasks, long *rank)
{
    for (size_t i = 0; i < sizeof slurm_variables / sizeof *slurm_variables; i++)
        if (!getenv(slurm_variables[i])) {
            fl_set_error_code(FL_NOT_FOUND,
                              "%s is not set: start each task with srun (an salloc shell or a batch script "
                              "is not a job step)", slurm_variables[i]);
            return -1;
        }
    if (fl_launcher_env_int("SLURM_STEP_NUM_TASKS", 1, FL_HOSTLIST_MAX_HOSTS, "the step's number of tasks",
                            num_tasks) != 0)
        return -1;
    char expected[96];
    snprintf(expected, sizeof expected, "a rank from 0 to %ld (SLURM_STEP_NUM_TASKS is %ld)", *num_tasks - 1,
             *num_tasks);
    return fl_launcher_env_int("SLURM_PROCID", 0, *num_tasks - 1, expected, rank);
}

fl_cluster *fl_cluster_from_slurm(int num_ps, int port_base)
{
    long num_tasks, rank;
    if (read_rank(&num_tasks, &rank) != 0)
        return NULL;
    int *counts;
    int num_counts = parse_tasks_per_node(getenv("SLURM_STEP_TASKS_PER_NODE"), &counts);
    if (num_counts < 0)
        return NULL;
    char **nodes;
    int num_nodes = fl_hostlist_expand(getenv("SLURM_STEP_NODELIST"), &nodes);
    if (num_nodes < 0) {
        char why[FL_ERROR_LEN / 2];
        snprintf(why, sizeof why, "%s", fl_last_error());
        fl_set_error_code(FL_INVALID_ARGUMENT, "SLURM_STEP_NODELIST: %s", why);
        free(counts);
        return NULL;
    }
    fl_cluster *c = NULL;
    if (check_step(num_nodes, num_counts, counts, num_tasks) == 0)
        c = cluster_of_step(nodes, counts, num_nodes, num_tasks, rank, num_ps, port_base);
    fl_hostlist_free(nodes, num_nodes);
    free(counts);
    return c;
}
