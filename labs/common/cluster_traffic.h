/* cluster_traffic.h: the bytes a process of a cluster has moved to and from
 * the cluster's other tasks, for chapter 3's progress lines and for
 * --print_stats (run_stats.h), whose traffic function it is. */
#ifndef LABS_COMMON_CLUSTER_TRAFFIC_H
#define LABS_COMMON_CLUSTER_TRAFFIC_H

#include <stdint.h>
#include <stdio.h>

#include "flowlab.h"
#include "flowlab_cluster.h"

/* cluster: an fl_cluster (const void *, as run_stats_count_traffic takes it).
 * What a worker's master sends its own task's server (the batch its piece is
 * fed) stays in the process: not counted. */
static inline double bytes_moved(const void *cluster)
{
    uint64_t sent, received, to_self = 0, from_self = 0;
    fl_remote_traffic(cluster, &sent, &received);
    const char *job = fl_cluster_job_name(cluster);
    char self[96];
    if (job) {
        snprintf(self, sizeof self, "/job:%s/task:%d", job, fl_cluster_task_index(cluster));
        fl_remote_task_traffic(cluster, self, &to_self, &from_self);
    }
    return (double)(sent - to_self + received - from_self);
}

#endif
