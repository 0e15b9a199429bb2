/* run_stats.h: --print_stats, the figures of chapter 3's measurement
 * (labs/tools/ingraph_vs_between.sh). After training a lab prints one line:
 *   stats: graph_nodes=N worker0_nodes=W build_s=S setup_s=U steps=K cpu_ms_per_step=C bytes_per_step=B images_per_sec=I
 * the size of this process's graph, how many of its nodes are placed on
 * /job:worker/task:0 (in-graph across tasks: worker 0's piece), the time to
 * build it and from then to the second step (the session, the
 * initialization, partitioning and registering, the first step); then,
 * from the second step on, this process's CPU time per step, the bytes per
 * step it moved to and from other tasks, and its images/sec. */
#ifndef LABS_COMMON_RUN_STATS_H
#define LABS_COMMON_RUN_STATS_H

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "flowlab.h"
#include "timing.h"

/* One measurement per program: a lab builds one graph and trains once. */
typedef struct {
    double build_started, build_seconds, built_at, setup_seconds;
    int graph_nodes, worker0_nodes;
    double steps_wall, steps_cpu, steps_bytes; /* when the measured steps began */
    double (*traffic)(const void *arg);        /* bytes moved so far; NULL: none */
    const void *traffic_arg;
} run_stats;

static run_stats the_run_stats;

/* User and system time of this process, every thread together. */
static inline double process_cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static inline void run_stats_build_started(void) { the_run_stats.build_started = now_seconds(); }

/* The nodes of g placed on one task ("/job:worker/task:0"). */
static inline int nodes_on_task(const fl_graph *g, const char *task)
{
    int count = 0;
    size_t len = strlen(task);
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        const char *device = fl_node_device(fl_graph_node(g, i));
        count += strncmp(device, task, len) == 0 && device[len] == '/';
    }
    return count;
}

static inline void run_stats_build_done(const fl_graph *g)
{
    the_run_stats.built_at = now_seconds();
    the_run_stats.build_seconds = the_run_stats.built_at - the_run_stats.build_started;
    the_run_stats.graph_nodes = fl_graph_node_count(g);
    the_run_stats.worker0_nodes = nodes_on_task(g, "/job:worker/task:0");
}

/* A lab of a cluster says how to read the bytes it has moved. */
static inline void run_stats_count_traffic(double (*traffic)(const void *), const void *arg)
{
    the_run_stats.traffic = traffic;
    the_run_stats.traffic_arg = arg;
}

static inline double run_stats_traffic(void)
{
    return the_run_stats.traffic ? the_run_stats.traffic(the_run_stats.traffic_arg) : 0;
}

static inline void run_stats_steps_started(void)
{
    the_run_stats.steps_wall = now_seconds();
    the_run_stats.setup_seconds = the_run_stats.steps_wall - the_run_stats.built_at;
    the_run_stats.steps_cpu = process_cpu_seconds();
    the_run_stats.steps_bytes = run_stats_traffic();
}

/* The stats: line, for `steps` steps of `images` images in all since
 * run_stats_steps_started. */
static inline void print_run_stats(long steps, long images)
{
    const run_stats *s = &the_run_stats;
    double wall = now_seconds() - s->steps_wall, cpu = process_cpu_seconds() - s->steps_cpu;
    double per_step = steps > 0 ? 1.0 / (double)steps : 0;
    printf("stats: graph_nodes=%d worker0_nodes=%d build_s=%.4f setup_s=%.3f steps=%ld cpu_ms_per_step=%.2f "
           "bytes_per_step=%.0f images_per_sec=%.1f\n", s->graph_nodes, s->worker0_nodes, s->build_seconds,
           s->setup_seconds, steps, 1000 * cpu * per_step,
           (run_stats_traffic() - s->steps_bytes) * per_step, wall > 0 ? (double)images / wall : 0);
    fflush(stdout);
}

#endif
