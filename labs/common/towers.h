/* towers.h: in-graph towers, shared by chapter 2's lab and chapter 3's
 * hybrid (between_graph --num_gpus): build_tower builds one copy of the
 * model under a device function, average_gradients averages the towers'
 * gradients. */
#ifndef LABS_COMMON_TOWERS_H
#define LABS_COMMON_TOWERS_H

#include <stdio.h>
#include <stdlib.h>

#include "flowlab.h"
#include "model.h"

#define MAX_TOWERS 8
#define MAX_VARS 16 /* the model has 8 trainable variables */

// [book:average_gradients]
/* tower_grads[t][v] is tower t's gradient for variable v; every tower lists
 * the same variables in the same order. Writes one pair per variable: the
 * mean of the towers' gradients and the shared variable. Call it inside the
 * controller's device scope: this is where the towers wait for each other. */
static void average_gradients(fl_graph *g, fl_grad_var tower_grads[][MAX_VARS], int ntowers,
                              int nvars, fl_grad_var *out)
{
    for (int v = 0; v < nvars; v++) {
        fl_node *grads[MAX_TOWERS];
        int n = 0;
        for (int t = 0; t < ntowers; t++)
            if (tower_grads[t][v].grad) /* NULL: the loss does not depend on this variable */
                grads[n++] = tower_grads[t][v].grad;
        fl_node *mean = NULL;
        if (n > 0)
            mean = fl_div(g, fl_add_n(g, grads, n, NULL), fl_scalar(g, (float)n, NULL), NULL);
        out[v] = (fl_grad_var){mean, tower_grads[0][v].var};
    }
}
// [end:average_gradients]

/* The mean of one copy's per-example losses: the loss of its batch. */
static fl_node *tower_loss(fl_graph *g, fl_node *logits, fl_node *label)
{
    fl_node *per_example = fl_sparse_softmax_cross_entropy_with_logits(g, label, logits, NULL);
    return fl_reduce_mean(g, per_example, NULL, 0, false, "loss");
}

// [book:build_tower]
/* Tower t on (image, label): in name scope tower_t, its nodes placed by the
 * device function place(node, where). Tower 0 creates the variables in
 * variable scope "model"; the later towers must find them (FL_REUSE).
 * Writes the tower's loss and its (gradient, variable) pairs into grads[0..
 * MAX_VARS); returns how many pairs. */
static int build_tower(fl_graph *g, int t, fl_node *image, fl_node *label, fl_device_fn place, void *where,
                       fl_grad_var *grads, fl_node **loss)
{
    char scope[32];
    snprintf(scope, sizeof scope, "tower_%d", t);
    fl_name_scope_push(g, scope);
    fl_device_function_push(g, place, where);
    fl_variable_scope_push(g, "model", t == 0 ? FL_REUSE_INHERIT : FL_REUSE);
    fl_node *logits = core_model(g, image);
    fl_variable_scope_pop(g);
    *loss = tower_loss(g, logits, label);
    int nvars = fl_trainable_variables(g, NULL, 0);
    if (nvars > MAX_VARS) { /* before grads could overflow */
        fprintf(stderr, "the model has %d variables; raise MAX_VARS in labs/common/towers.h\n", nvars);
        exit(1);
    }
    nvars = fl_compute_gradients(g, *loss, NULL, 0, grads);
    fl_device_pop(g);
    fl_name_scope_pop(g);
    return nvars;
}
// [end:build_tower]

#endif
