/* graph_wire.h: a partition of a graph (graph_partition.h) as bytes, the
 * payload of a REGISTER_PARTITION frame, and back. The decoder trusts
 * nothing: it rebuilds the graph with the runtime's own fl_add_node, so a
 * node the runtime would refuse is refused, naming the node. The format,
 * byte by byte, is in book/appendix-wire-protocol.md. */
#ifndef FLOWLAB_DIST_GRAPH_WIRE_H
#define FLOWLAB_DIST_GRAPH_WIRE_H

#include "graph_partition.h"

/* 3: Send and Recv nodes, no waves, no edge lists. Only 3 is read: an
 * older partition's receive Placeholders would need converting, and a
 * task only ever runs partitions of its own build's clients. */
#define FL_GRAPH_WIRE_VERSION 3u
#define FL_GRAPH_WIRE_MAX_NODES 100000 /* a partition with more is refused as oversized */
#define FL_GRAPH_WIRE_NO_NODE 0xffffffffu /* a variable without an initializer */

/* Appends p's bytes to out (no frame header). 0, or -1 after fl_set_error. */
int fl_graph_wire_encode(const fl_graph_partition *p, fl_wire_buf *out);
/* Fills *p (free with fl_graph_partition_free). 0, or -1 after
 * fl_set_error_code(FL_INVALID_ARGUMENT, "node NAME: why"), *p left empty. */
int fl_graph_wire_decode(const void *bytes, size_t len, fl_graph_partition *p);

/* graph_wire_ops.c, for the decoder: whether these inputs fit op's
 * signature (0, or -1 and INVALID_ARGUMENT in st, without the node's name). */
int fl_graph_wire_check_inputs(fl_op_kind op, fl_node *const *inputs, int ninputs, fl_status *st);

#endif
