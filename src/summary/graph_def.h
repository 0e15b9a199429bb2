/* graph_def.h: a graph as TensorFlow's GraphDef, written by one writer
 * (graph_def.c) for TensorBoard's graph dashboard and for a task's
 * partition (the distributed runtime's partition_def.c), and fl_attrs as a
 * NodeDef's attrs both ways (node_attrs.c). */
#ifndef FLOWLAB_SUMMARY_GRAPH_DEF_H
#define FLOWLAB_SUMMARY_GRAPH_DEF_H

#include <stdbool.h>

#include "graph.pb-c.h" /* generated into build/gen/summary/ from graph.proto */
#include "runtime.h"
#include "status.h"

/* g as a GraphDef, every NodeDef with its op, inputs ("^name": a control
 * input), device and attrs: "dtype", "_output_shapes" (what the dashboard
 * labels edges with), each fl_attrs field the node sets, a variable's
 * "_trainable" and "_initializer" (its Assign's name). with_values: a
 * Const's "value" too, which a partition needs and the dashboard does not.
 * Every part malloc'd: free with fl_graph_def_free. */
Tensorflow__GraphDef *fl_graph_def_new(const fl_graph *g, bool with_values);
void fl_graph_def_free(Tensorflow__GraphDef *def);

/* ---- node_attrs.c ---- */
/* DataType and fl_dtype: DT_FLOAT, DT_INT32; anything else is refused (-1). */
Tensorflow__DataType fl_graph_def_dtype(fl_dtype dtype);
int fl_graph_def_read_dtype(Tensorflow__DataType type, fl_dtype *out);
/* The shape as a TensorShapeProto (malloc'd, as fl_graph_def_free expects);
 * back: 0, or -1 with why in st (rank over FL_MAX_RANK, a dim below -1 or 0). */
Tensorflow__TensorShapeProto *fl_graph_def_shape(fl_shape shape);
int fl_graph_def_read_shape(const Tensorflow__TensorShapeProto *proto, fl_shape *out, fl_status *st);
/* Adds an entry to def->attr for each field of a that is not zero (the
 * reader's default), by the field's name (TensorFlow's where it has one). */
void fl_graph_def_write_attrs(const fl_attrs *a, Tensorflow__NodeDef *def);
void fl_graph_def_add_attr(Tensorflow__NodeDef *def, const char *key, Tensorflow__AttrValue *value);
/* One entry into its field of *a: 1 when the key is an fl_attrs field's,
 * 0 when it is no field's, -1 with why in st when the value is not of the
 * field's kind or out of its range (INVALID_ARGUMENT, naming the attr). */
int fl_graph_def_read_attr(const Tensorflow__AttrEntry *entry, fl_attrs *a, fl_status *st);

#endif
