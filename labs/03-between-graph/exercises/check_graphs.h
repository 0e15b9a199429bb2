/* check_graphs.h: the graphs the partition checks cut. A small one worked
 * by hand, and chapter 2's towers placed across tasks as the lab's cluster
 * mode places them: tower i on /job:worker/task:i/gpu:0; the input and its
 * split on worker 0 (the client feeds it there); the variables, the
 * averaging and Adam on /job:ps/task:0. */
#ifndef LAB03_CHECK_GRAPHS_H
#define LAB03_CHECK_GRAPHS_H

#include "flowlab.h"
#include "../../common/towers.h"

#define PS "/job:ps/task:0/cpu:0"

/* x [N,4] and w [4,2] on the ps; worker 0 computes relu(x w), worker 1
 * relu(x w) and the sum of w (w read twice there: still one pair); the ps
 * adds the two workers' results. */
static fl_graph *small_graph(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, PS);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 4), "x");
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, 4, 2), fl_zeros_initializer());
    fl_device_scope_push(g, "/job:worker/task:0/gpu:0");
    fl_node *y0 = fl_relu(g, fl_matmul(g, x, w, false, false, NULL), "y0");
    fl_device_pop(g);
    fl_device_scope_push(g, "/job:worker/task:1/gpu:0");
    fl_node *y1 = fl_relu(g, fl_matmul(g, x, w, false, false, NULL), "y1");
    fl_reduce_sum(g, w, NULL, 0, false, "w_sum");
    fl_device_pop(g);
    fl_add(g, y0, y1, "sum");
    fl_device_pop(g);
    return g;
}

/* A tower's nodes on its worker, its variables left to the ps scope outside. */
static const char *on_worker(const fl_node *node, void *worker_device)
{
    return strcmp(fl_node_op_type(node), "VariableV2") == 0 ? NULL : worker_device;
}

/* Chapter 2's training graph with one tower per worker task; adam outlives
 * it. *train (when not NULL): the training op. */
static fl_graph *towers_graph(int workers, fl_optimizer *adam, fl_node **train)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, PS);
    fl_device_scope_push(g, "/job:worker/task:0/cpu:0");
    fl_node *image = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image");
    fl_node *label = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "label");
    fl_node *images[MAX_TOWERS], *labels[MAX_TOWERS], *losses[MAX_TOWERS];
    fl_split(g, image, workers, 0, images, "split_image");
    fl_split(g, label, workers, 0, labels, "split_label");
    fl_device_pop(g);
    fl_grad_var grads[MAX_TOWERS][MAX_VARS], averaged[MAX_VARS];
    char devices[MAX_TOWERS][48];
    int nvars = 0;
    for (int t = 0; t < workers; t++) {
        snprintf(devices[t], sizeof devices[t], "/job:worker/task:%d/gpu:0", t);
        nvars = build_tower(g, t, images[t], labels[t], on_worker, devices[t], grads[t], &losses[t]);
    }
    average_gradients(g, grads, workers, nvars, averaged);
    fl_node *update = fl_apply_gradients(adam, g, averaged, nvars, fl_get_or_create_global_step(g), "train");
    if (train)
        *train = update;
    fl_div(g, fl_add_n(g, losses, workers, NULL), fl_scalar(g, (float)workers, NULL), "loss");
    fl_device_pop(g);
    return g;
}

#endif
