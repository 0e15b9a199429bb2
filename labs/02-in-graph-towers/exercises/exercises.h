/* exercises.h: the three functions chapter 2's exercises ask you to write.
 * Each lives in its own file in this folder (average_gradients.c,
 * assign_to_device.c, controller.c); edit that file, then run
 * `make exercises` from the top of the repository. The third builds on the
 * first two, so solve them in order. Reference answers are in solutions/. */
#ifndef LAB02_EXERCISES_H
#define LAB02_EXERCISES_H

#include "flowlab.h"

#define EX_MAX_TOWERS 8
#define EX_MAX_VARS 16

/* Exercise average-gradients: tower_grads[t][v] is tower t's (gradient,
 * variable) pair for variable v, for ntowers towers that list the same nvars
 * variables in the same order. Write to out[v] the mean of the towers'
 * gradients for variable v, paired with that variable. A gradient may be
 * NULL (the tower's loss does not use the variable): average the others,
 * and leave out[v].grad NULL when every tower's is NULL. Build the nodes in
 * whatever device scope the caller has open. Return 0, or -1 on error. */
int my_average_gradients(fl_graph *g, fl_grad_var tower_grads[][EX_MAX_VARS], int ntowers,
                         int nvars, fl_grad_var *out);

/* Exercise assign-to-device: a device function (see fl_device_function_push)
 * for one tower. `user` points to a tower_placement; return the controller
 * for a variable (op type "VariableV2") and the tower's device for any
 * other node. */
typedef struct {
    const char *device;     /* the tower's device: "/gpu:1" */
    const char *controller; /* where the variables live: "/cpu:0" */
} tower_placement;
const char *my_assign_to_device(const fl_node *node, void *user);

/* Exercise controller: build in-graph replication for any model and any
 * controller. loss_fn builds one copy of the model on (x, y) and returns its
 * loss; it makes its variables with fl_get_variable. Build, in g:
 *   - x and y split into ntowers equal slices along axis 0 (fl_split);
 *   - for tower t, in name scope "tower_t" and under my_assign_to_device
 *     with devices[t] and the controller: the model (in a variable scope in
 *     which towers after the first reuse the first tower's variables), its
 *     loss and its gradients (fl_compute_gradients);
 *   - on the controller: my_average_gradients, one fl_apply_gradients with
 *     opt and the global step, and the mean of the towers' losses.
 * Return the train op and that mean loss. */
typedef fl_node *(*tower_loss_fn)(fl_graph *g, fl_node *x, fl_node *y);
typedef struct {
    fl_node *train_op, *loss;
} tower_ops;
tower_ops my_build_towers(fl_graph *g, tower_loss_fn loss_fn, fl_node *x, fl_node *y,
                          const char *const *devices, int ntowers, const char *controller,
                          fl_optimizer *opt);

#endif
