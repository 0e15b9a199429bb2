/* solutions/round_robin.c: a reference answer to exercise round-robin. */
#include <stdio.h>
#include <string.h>

#include "exercises.h"

const char *my_round_robin(const fl_node *node, void *user)
{
    ps_placement *placement = user;
    if (strcmp(fl_node_op_type(node), "VariableV2") != 0)
        return placement->worker_device;
    int task = placement->variables_placed++ % placement->num_ps;
    snprintf(placement->chosen, sizeof placement->chosen, "/job:ps/task:%d/cpu:0", task);
    return placement->chosen;
}
