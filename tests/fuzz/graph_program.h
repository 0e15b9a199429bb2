/* graph_program.h: bytes read as a program that builds a partition, for
 * fuzz_graph_run: each node an op, a dtype, inputs among the nodes before
 * it and small attrs, added with fl_add_node as the partition decoder adds
 * them (the node is simply left out when its shape rule refuses it), then
 * encoded. Every op but the fused ones, any axis the wire takes (-4 to 4). */
#ifndef FLOWLAB_TESTS_GRAPH_PROGRAM_H
#define FLOWLAB_TESTS_GRAPH_PROGRAM_H

#include <stdio.h>
#include <stdlib.h>

#include "distributed_runtime/partition/partition_def.h"
#include "runtime.h"

#define PROGRAM_MAX_NODES 24

typedef struct {
    const unsigned char *at;
    size_t left;
} program_bytes;

static inline unsigned program_byte(program_bytes *b)
{
    if (b->left == 0)
        return 0;
    b->left--;
    return *b->at++;
}

/* A small shape: rank 0-4, dims 1-4 (or -1 when unknown may be). */
static inline fl_shape program_shape(program_bytes *b, bool unknown_ok)
{
    fl_shape s = {.rank = (int)(program_byte(b) % 5)};
    for (int i = 0; i < s.rank; i++) {
        unsigned d = program_byte(b) % 6;
        s.dims[i] = d == 5 && unknown_ok ? -1 : (int)(d % 4) + 1;
    }
    return s;
}

static inline fl_attrs program_attrs(program_bytes *b, fl_op_kind op)
{
    fl_attrs a = {0};
    unsigned flags = program_byte(b);
    a.transpose_a = flags & 1;
    a.transpose_b = flags & 2;
    a.keep_dims = flags & 4;
    a.mean = flags & 8;
    a.use_nesterov = flags & 16;
    a.padding = flags & 32 ? FL_VALID : FL_SAME;
    a.dtype = flags & 64 ? FL_INT32 : FL_FLOAT32;
    a.axis = (int)(program_byte(b) % 9) - 4; /* the wire takes -4..4; the shape rule bounds it by rank */
    a.begin = (int)(program_byte(b) % 5);
    a.size = (int)(program_byte(b) % 5);
    a.num_parts = (int)(program_byte(b) % 4);
    a.part = a.num_parts ? (int)(program_byte(b) % (unsigned)a.num_parts) : 0;
    unsigned axes = program_byte(b);
    for (int i = 0; i < FL_MAX_RANK; i++)
        a.reduce_axis[i] = axes & (1u << i);
    a.shape = program_shape(b, op == FL_OP_PLACEHOLDER || op == FL_OP_RESHAPE);
    int *window[] = {&a.stride_h, &a.stride_w, &a.ksize_h, &a.ksize_w};
    for (int i = 0; i < 4; i++) { /* now and then the wire's largest, 65536 */
        unsigned v = program_byte(b);
        *window[i] = v >= 250 ? 65536 : (int)(v % (i < 2 ? 3u : 4u)) + 1;
    }
    a.value = (float)(program_byte(b) % 7) - 3.0f;
    a.maxval = 1.0f;
    a.stddev = 1.0f;
    a.learning_rate = 0.1f;
    a.momentum = 0.9f;
    a.beta1 = 0.9f;
    a.beta2 = 0.999f;
    a.epsilon = 1e-7f;
    return a;
}

/* One node from the bytes, or none when the op may not have these inputs
 * or its shape rule refuses them. */
static inline void program_node(program_bytes *b, fl_graph *g, int index)
{
    fl_op_kind op = (fl_op_kind)(program_byte(b) % FL_OP_COUNT);
    if (op == FL_OP_CONST || fl_op_def_of(op)->sig.fused)
        op = FL_OP_PLACEHOLDER; /* a Const needs a value; fused ops never come from the wire */
    unsigned head = program_byte(b);
    int count = fl_graph_node_count(g), ninputs = 0;
    fl_node *inputs[6];
    for (int i = 0; i < 6; i++) {
        inputs[i] = count ? fl_graph_node(g, (int)(program_byte(b) % (unsigned)count)) : NULL;
        if (!inputs[i] || !inputs[i]->has_output)
            break;
        ninputs = i + 1;
    }
    char name[16];
    fl_status why = {0};
    /* The first count from head's that the op takes (the decoder's own rule). */
    int tries = 0, k = (int)(head % 7) % (ninputs + 2);
    while (tries++ <= ninputs && fl_partition_def_check_inputs(op, inputs, k, &why) != 0)
        k = (k + 1) % (ninputs + 2);
    if (k > ninputs || fl_partition_def_check_inputs(op, inputs, k, &why) != 0)
        return;
    snprintf(name, sizeof name, "n%d", index);
    fl_node_spec spec = {.op = op, .name = name, .inputs = inputs, .ninputs = k,
                         .dtype = head & 8 ? FL_INT32 : FL_FLOAT32, .attrs = program_attrs(b, op),
                         .exact_name = true};
    fl_node *n = fl_add_node(g, &spec);
    if (n && op == FL_OP_VARIABLE)
        fl_graph_register_variable(g, n);
}

/* The program's partition, encoded into out: 0, or -1 when it has no node. */
static inline int fl_graph_program_encode(const unsigned char *data, size_t size, fl_wire_buf *out)
{
    program_bytes b = {data, size};
    fl_graph_partition p = {.job = "worker", .graph = fl_graph_new()};
    for (int i = 0; i < PROGRAM_MAX_NODES && b.left > 0; i++)
        program_node(&b, p.graph, i);
    int n = fl_graph_node_count(p.graph);
    int rc = n > 0 && fl_partition_def_encode(&p, out) == 0 ? 0 : -1;
    fl_graph_partition_free(&p);
    return rc;
}

#endif
