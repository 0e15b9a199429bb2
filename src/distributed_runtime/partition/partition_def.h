/* partition_def.h: a partition of a graph (graph_partition.h) as the
 * protobuf message a REGISTER_PARTITION frame carries (partition.proto:
 * TensorFlow's GraphDef, written by src/summary's one GraphDef writer, and
 * the task it is for), and back. The decoder trusts nothing: protobuf-c
 * unpacks it within the frame's size limit and a memory budget, and each
 * node is rebuilt with the runtime's own fl_add_node, so a node the runtime
 * would refuse is refused, naming the node. book/appendix-wire-protocol.md
 * describes it. */
#ifndef FLOWLAB_DIST_PARTITION_DEF_H
#define FLOWLAB_DIST_PARTITION_DEF_H

#include "graph_partition.h"

/* 4: a protobuf message around a GraphDef (3 was a byte layout of our own,
 * refused by name). Only 4 is read: a task only ever runs partitions of its
 * own build's clients. */
#define FL_PARTITION_FORMAT 4u
#define FL_PARTITION_MAX_NODES 100000 /* a partition with more is refused as oversized */

/* Appends p's message to out (no frame header). 0, or -1 after fl_set_error. */
int fl_partition_def_encode(const fl_graph_partition *p, fl_wire_buf *out);
/* Fills *p (free with fl_graph_partition_free). 0, or -1 after
 * fl_set_error_code(FL_INVALID_ARGUMENT, "... node NAME: why"), *p left empty. */
int fl_partition_def_decode(const void *bytes, size_t len, fl_graph_partition *p);

/* partition_def_nodes.c, for the decoder (and the fuzzers' programs):
 * whether these inputs fit op's signature (0, or -1 and INVALID_ARGUMENT in
 * st, without the node's name). */
int fl_partition_def_check_inputs(fl_op_kind op, fl_node *const *inputs, int ninputs, fl_status *st);
/* partition_def_nodes.c, for partition_def.c: the message's nodes into g, in
 * order (an input names an earlier node). 0, or -1 with "node NAME: why" in st. */
typedef struct Tensorflow__GraphDef Tensorflow__GraphDef; /* graph.pb-c.h's */
int fl_partition_def_read_nodes(const Tensorflow__GraphDef *def, fl_graph *g, fl_status *st);

#endif
