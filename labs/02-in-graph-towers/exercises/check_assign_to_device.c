/* check_assign_to_device.c: checks my_assign_to_device (exercise
 * assign-to-device). It builds a small layer under the device function for
 * two placements and reads each node's requested device (fl_node_device). */
#include "exercises.h"
#include "../../common/check.h"

static void check_placement(const char *device, const char *controller)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    tower_placement placement = {device, controller};
    fl_name_scope_push(g, "tower_1");
    fl_device_function_push(g, my_assign_to_device, &placement);
    fl_node *w = fl_get_variable(g, "kernel", fl_shape_make(2, 3, 2),
                                 fl_glorot_uniform_initializer(0));
    fl_node *y = fl_matmul(g, x, w, false, false, NULL);
    fl_node *z = fl_relu(g, y, NULL);
    fl_device_pop(g);
    fl_name_scope_pop(g);
    check_graph(g);
    if (!fl_node_device(w)[0] && !fl_node_device(y)[0])
        fail("not implemented yet (my_assign_to_device chose no device)");
    if (strcmp(fl_node_device(w), controller) != 0)
        fail("the variable %s asks for '%s'; variables belong on the controller, %s",
             fl_node_name(w), fl_node_device(w), controller);
    const fl_node *ops[2] = {y, z};
    for (int i = 0; i < 2; i++)
        if (strcmp(fl_node_device(ops[i]), device) != 0)
            fail("%s (%s) asks for '%s'; a tower's computation belongs on its device, %s",
                 fl_node_name(ops[i]), fl_node_op_type(ops[i]), fl_node_device(ops[i]), device);
    if (strcmp(fl_node_device(x), "") != 0)
        fail("x, built outside the device function, asks for '%s'", fl_node_device(x));
    fl_graph_free(g);
}

int main(void)
{
    check_start("assign-to-device", "labs/02-in-graph-towers/exercises/assign_to_device.c");
    check_placement("/gpu:1", "/cpu:0");
    check_placement("/gpu:0", "/gpu:1");
    pass();
}
