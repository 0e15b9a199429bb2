/* node.c: what a program may ask a node: its name, op type, dtype, shape,
 * requested device and inputs (the fields live in runtime.h's struct
 * fl_node; graph.c makes nodes). */
#include "runtime.h"

/* A node a builder refused is NULL: asking about it gives a harmless
 * answer (NULL, 0, an unknown shape), so a program can print its way to
 * the graph's error instead of crashing first. */
const char *fl_node_name(const fl_node *n) { return n ? n->name : NULL; }
const char *fl_node_op_type(const fl_node *n) { return n ? fl_op_def_of(n->op)->type : NULL; }
fl_dtype fl_node_dtype(const fl_node *n) { return n ? n->dtype : FL_FLOAT32; }
fl_shape fl_node_shape(const fl_node *n) { return n ? n->shape : (fl_shape){.rank = -1}; }
const char *fl_node_device(const fl_node *n) { return n ? n->device : NULL; }
int fl_node_input_count(const fl_node *n) { return n ? n->ninputs : 0; }

fl_node *fl_node_input(const fl_node *n, int index)
{
    return n && index >= 0 && index < n->ninputs ? n->inputs[index] : NULL;
}
