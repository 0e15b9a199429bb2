/* controller.c: exercise controller. Write my_build_towers (see
 * exercises.h): chapter 2's create_parallel_optimization for any model,
 * with the controller as an argument. It uses your my_assign_to_device and
 * my_average_gradients; solve those two exercises first.
 *
 * Hints: a tower_placement that a device function points to must live until
 * you pop the device function. fl_variable_scope_push(g, "model",
 * t == 0 ? FL_REUSE_INHERIT : FL_REUSE) makes tower 0 create the variables
 * and the others reuse them. fl_get_or_create_global_step inside the
 * controller's device scope puts the step counter there too.
 *
 * Then run the lab both ways and compare (the book asks why they differ):
 *   in_graph_towers --num_gpus 2 --controller /cpu:0
 *   in_graph_towers --num_gpus 2 --controller /gpu:0
 *
 * Check your work: make exercises */
#include "exercises.h"

tower_ops my_build_towers(fl_graph *g, tower_loss_fn loss_fn, fl_node *x, fl_node *y,
                          const char *const *devices, int ntowers, const char *controller,
                          fl_optimizer *opt)
{
    (void)g, (void)loss_fn, (void)x, (void)y, (void)devices, (void)ntowers, (void)controller;
    (void)opt;
    return (tower_ops){NULL, NULL}; /* TODO: your code here */
}
