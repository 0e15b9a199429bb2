/* solutions/controller.c: a reference answer to exercise controller. */
#include <stdio.h>

#include "exercises.h"

tower_ops my_build_towers(fl_graph *g, tower_loss_fn loss_fn, fl_node *x, fl_node *y,
                          const char *const *devices, int ntowers, const char *controller,
                          fl_optimizer *opt)
{
    fl_node *xs[EX_MAX_TOWERS], *ys[EX_MAX_TOWERS], *losses[EX_MAX_TOWERS];
    fl_device_scope_push(g, "/cpu:0"); /* the batch is fed in host memory */
    fl_split(g, x, ntowers, 0, xs, "split_x");
    fl_split(g, y, ntowers, 0, ys, "split_y");
    fl_device_pop(g);

    fl_grad_var grads[EX_MAX_TOWERS][EX_MAX_VARS];
    int nvars = 0;
    for (int t = 0; t < ntowers; t++) {
        char scope[32];
        snprintf(scope, sizeof scope, "tower_%d", t);
        tower_placement placement = {devices[t], controller};
        fl_name_scope_push(g, scope);
        fl_device_function_push(g, my_assign_to_device, &placement);
        fl_variable_scope_push(g, "model", t == 0 ? FL_REUSE_INHERIT : FL_REUSE);
        losses[t] = loss_fn(g, xs[t], ys[t]);
        fl_variable_scope_pop(g);
        nvars = fl_compute_gradients(g, losses[t], NULL, 0, grads[t]);
        fl_device_pop(g);
        fl_name_scope_pop(g);
    }
    if (nvars < 0 || nvars > EX_MAX_VARS)
        return (tower_ops){NULL, NULL};

    tower_ops ops;
    fl_device_scope_push(g, controller);
    fl_grad_var averaged[EX_MAX_VARS];
    if (my_average_gradients(g, grads, ntowers, nvars, averaged) != 0) {
        fl_device_pop(g);
        return (tower_ops){NULL, NULL};
    }
    ops.train_op = fl_apply_gradients(opt, g, averaged, nvars, fl_get_or_create_global_step(g),
                                      "train");
    ops.loss = fl_div(g, fl_add_n(g, losses, ntowers, NULL), fl_scalar(g, (float)ntowers, NULL),
                      "loss");
    fl_device_pop(g);
    return ops;
}
