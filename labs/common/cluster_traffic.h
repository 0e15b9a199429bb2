/* cluster_traffic.h: the bytes a process of a cluster has moved to and from
 * the cluster's other tasks, for chapter 3's progress lines and for
 * --print_stats (run_stats.h), whose traffic function it is. */
#ifndef LABS_COMMON_CLUSTER_TRAFFIC_H
#define LABS_COMMON_CLUSTER_TRAFFIC_H

#include <stdint.h>

#include "flowlab.h"
#include "flowlab_cluster.h"

/* cluster: an fl_cluster (const void *, as run_stats_count_traffic takes it). */
static inline double bytes_moved(const void *cluster)
{
    uint64_t sent, received;
    fl_remote_traffic(cluster, &sent, &received);
    return (double)(sent + received);
}

#endif
