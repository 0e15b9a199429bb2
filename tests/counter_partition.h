/* counter_partition.h: a counter on a ps, for tests that need a worker's
 * updates to land while something else goes on (bad input, strangers, a
 * secret, TLS): one partition registered on the ps, run once per step. */
#ifndef FLOWLAB_TESTS_COUNTER_PARTITION_H
#define FLOWLAB_TESTS_COUNTER_PARTITION_H

#include <stdio.h>

#include "distributed_runtime/partition/partition_client.h"

/* A one-partition graph with w (zeros, [1, width])
 * and update = w += delta (fed). Its handle, or 0 after fl_set_error. */
static inline uint64_t counter_register(fl_task_client *c, int width)
{
    fl_graph_partition p = {.task = 0};
    snprintf(p.job, sizeof p.job, "ps");
    p.graph = fl_graph_new();
    fl_node *w = fl_get_variable(p.graph, "w", fl_shape_make(1, width), fl_zeros_initializer());
    fl_assign_add(p.graph, w, fl_placeholder(p.graph, FL_FLOAT32, fl_shape_make(1, width), "delta"), "update");
    uint64_t handle = 0;
    if (fl_partition_register(c, &p, &handle) != 0)
        handle = 0;
    fl_graph_partition_free(&p);
    return handle;
}

/* Step 1 initialises w; later steps add delta and fetch the sum into *value
 * (freed first; NULL: not fetched). 0, or -1 as fl_partition_run_remote. */
static inline int counter_step(fl_task_client *c, uint64_t handle, uint64_t step, const fl_tensor *delta,
                               fl_tensor **value)
{
    static const char *init[] = {"w/Assign"}, *feeds[] = {"delta"}, *fetches[] = {"update"};
    fl_partition_run run = {.step_id = step, .target_names = init, .ntargets = 1};
    if (step > 1)
        run = (fl_partition_run){.step_id = step, .feed_names = feeds, .feed_values = &delta, .nfeeds = 1,
                                 .fetch_names = fetches, .nfetches = value ? 1 : 0,
                                 .target_names = fetches, .ntargets = value ? 0 : 1};
    if (value) {
        fl_tensor_free(*value);
        *value = NULL;
    }
    return fl_partition_run_remote(c, handle, &run, value, NULL);
}

#endif
