/* worker_towers.h: what a worker of chapter 3's lab trains, one copy of the
 * model or, with --num_gpus K, the hybrid: K in-graph towers on the worker's
 * own devices (chapter 2's build_tower), averaged on the worker, one push.
 * Between-graph across the workers, in-graph inside each. */
#ifndef LAB03_WORKER_TOWERS_H
#define LAB03_WORKER_TOWERS_H

#include <stdio.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "../common/devices.h"
#include "../common/towers.h"

/* What a worker's optimizer is given: the loss of the worker's batch, one
 * (gradient, variable) pair per variable, and logits of the whole batch to
 * measure accuracy with. */
typedef struct {
    fl_node *loss, *logits;
    fl_grad_var grads[MAX_VARS];
    int nvars;
} worker_model;

/* One copy of chapter 1's model, as a worker without --num_gpus builds it. */
static worker_model build_single_model(fl_graph *g, fl_node *image, fl_node *label)
{
    worker_model m = {0};
    m.logits = core_model(g, image);
    m.loss = tower_loss(g, m.logits, label);
    m.nvars = fl_compute_gradients(g, m.loss, NULL, 0, m.grads);
    return m;
}

// [book:place_worker_tower]
/* A device function for one of a worker's towers: a variable is left to the
 * replica device setter below it on the stack (NULL), so it lands on a ps
 * task; every other node goes to the tower's device. */
static const char *place_worker_tower(const fl_node *node, void *tower_device)
{
    if (strcmp(fl_node_op_type(node), "VariableV2") == 0)
        return NULL;
    return tower_device;
}
// [end:place_worker_tower]

/* 0 when this task has K accelerators for K towers; else says how many it
 * has and how PoCL makes more, and returns -1. */
static int check_tower_devices(const char *program, int task, int ntowers)
{
    fl_device_info accelerators[16];
    int available = list_accelerators(accelerators, 16);
    if (available >= ntowers)
        return 0;
    fprintf(stderr, "%s: worker %d: --num_gpus %d: this task has %d accelerator%s (see flowlab-devices; "
            "on a CPU, POCL_DEVICES='pthread pthread' makes two)\n", program, task, ntowers, available,
            available == 1 ? "" : "s");
    return -1;
}

// [book:worker_towers]
/* The hybrid: K towers on this worker's /gpu:0 ... /gpu:K-1, each on its
 * slice of the worker's batch, their gradients averaged on the worker's
 * host. Build it under the replica device setter: the variables go to the
 * ps tasks, and the worker sends one averaged gradient per variable. */
static worker_model build_worker_towers(fl_graph *g, const fl_cluster *cluster, int ntowers, fl_node *image,
                                        fl_node *label)
{
    worker_model m = {0};
    char host[96], devices[MAX_TOWERS][96];
    fl_cluster_device_name(cluster, "/cpu:0", host, sizeof host); /* "/job:worker/task:1/cpu:0" */
    fl_device_scope_push(g, host);
    fl_node *images[MAX_TOWERS], *labels[MAX_TOWERS];
    fl_split(g, image, ntowers, 0, images, "split_image");
    fl_split(g, label, ntowers, 0, labels, "split_label");
    fl_device_pop(g);

    fl_grad_var tower_grads[MAX_TOWERS][MAX_VARS];
    fl_node *losses[MAX_TOWERS];
    for (int t = 0; t < ntowers; t++) {
        char gpu[16];
        snprintf(gpu, sizeof gpu, "/gpu:%d", t);
        fl_cluster_device_name(cluster, gpu, devices[t], sizeof devices[t]);
        m.nvars = build_tower(g, t, images[t], labels[t], place_worker_tower, devices[t], tower_grads[t],
                              &losses[t]);
    }
    fl_device_scope_push(g, host);
    fl_name_scope_push(g, "average_gradients");
    average_gradients(g, tower_grads, ntowers, m.nvars, m.grads);
    fl_name_scope_pop(g);
    m.loss = fl_div(g, fl_add_n(g, losses, ntowers, NULL), fl_scalar(g, (float)ntowers, NULL), "loss");
    fl_device_pop(g);
    // [end:worker_towers]

    /* Evaluation feeds whole test batches, which need not split evenly: one
     * more copy of the model on tower 0's device reads the unsplit batch. */
    fl_name_scope_push(g, "eval");
    fl_device_function_push(g, place_worker_tower, devices[0]);
    fl_variable_scope_push(g, "model", FL_REUSE);
    m.logits = core_model(g, image);
    fl_variable_scope_pop(g);
    fl_device_pop(g);
    fl_name_scope_pop(g);
    return m;
}

#endif
