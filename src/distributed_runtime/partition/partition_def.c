/* partition_def.c: a partition as REGISTER_PARTITION's protobuf message
 * (partition.proto) and back. The encoder wraps src/summary's GraphDef; the
 * decoder unpacks with protobuf-c into the wire's arena, under its budget, refuses content it
 * does not know (an unknown field, an older format) and hands the nodes to
 * partition_def_nodes.c, which rebuilds them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition.pb-c.h" /* generated into build/gen/distributed_runtime/ */
#include "partition_def.h"
#include "summary/graph_def.h"
#include "distributed_runtime/transport/wire_internal.h"

int fl_partition_def_encode(const fl_graph_partition *p, fl_wire_buf *out)
{
    Flowlab__RegisterPartition msg = FLOWLAB__REGISTER_PARTITION__INIT;
    msg.format = FL_PARTITION_FORMAT;
    msg.job = (char *)p->job;
    msg.task = (uint32_t)p->task;
    msg.graph_def = fl_graph_def_new(p->graph, true);
    msg.graph_seed = fl_graph_seed(p->graph);
    msg.reuse_memory = p->reuse_memory;
    size_t len = flowlab__register_partition__get_packed_size(&msg);
    unsigned char *bytes = len <= FL_WIRE_MAX_PAYLOAD ? malloc(len) : NULL;
    if (bytes)
        flowlab__register_partition__pack(&msg, bytes);
    fl_graph_def_free(msg.graph_def);
    int rc = bytes ? wire_append(out, bytes, len) : -1;
    free(bytes);
    if (rc != 0)
        fl_set_error_code(FL_INVALID_ARGUMENT, "partition of /job:%s/task:%d: %zu bytes, over the frame's %u-byte limit "
                          "(or out of memory)", p->job, p->task, len, FL_WIRE_MAX_PAYLOAD);
    return rc;
}

/* ---- decoding ---- */

/* The message's own fields: format, which task it is for, a graph of a
 * bounded size; fields this build does not know are refused (a node's, by
 * partition_def_nodes.c, naming the node). */
static int check_head(const Flowlab__RegisterPartition *msg, fl_graph_partition *p, fl_status *st)
{
    fl_status name = {0};
    const Tensorflow__GraphDef *graph = msg->graph_def;
    if (msg->format != FL_PARTITION_FORMAT)
        return fl_status_set(st, FL_INVALID_ARGUMENT, "partition format %u; this task reads format %u only (client and task of one build)",
                   msg->format, FL_PARTITION_FORMAT);
    const ProtobufCMessage *parts[] = {&msg->base, graph ? &graph->base : NULL,
                                       graph && graph->versions ? &graph->versions->base : NULL};
    for (int i = 0; i < 3; i++)
        if (parts[i] && parts[i]->n_unknown_fields)
            return fl_status_set(st, FL_INVALID_ARGUMENT, "(message): field %u of a %s is not one this task knows",
                       parts[i]->unknown_fields[0].tag, parts[i]->descriptor->name);
    size_t job_len = strlen(msg->job);
    if (wire_check_name((const unsigned char *)msg->job, job_len, &name) != 0 || job_len >= sizeof p->job ||
        msg->task > FL_WIRE_MAX_TASK)
        return fl_status_set(st, FL_INVALID_ARGUMENT, "(message): /job:%.40s/task:%u is no task name", msg->job, msg->task);
    snprintf(p->job, sizeof p->job, "%s", msg->job); /* from here on, refusals name the task */
    p->task = (int)msg->task;
    if (!graph)
        return fl_status_set(st, FL_INVALID_ARGUMENT, "(message): it has no graph_def");
    if (graph->n_node > FL_PARTITION_MAX_NODES)
        return fl_status_set(st, FL_INVALID_ARGUMENT, "(message): %zu nodes, over the %d a partition may have", graph->n_node,
                   FL_PARTITION_MAX_NODES);
    return 0;
}

static int read_message(const void *bytes, size_t len, fl_graph_partition *p, fl_status *st)
{
    const unsigned char *first = bytes;
    if (len > FL_WIRE_MAX_PAYLOAD)
        return fl_status_set(st, FL_INVALID_ARGUMENT, "(message): %zu bytes, over the frame's %u-byte limit", len, FL_WIRE_MAX_PAYLOAD);
    if (len == 0 || first[0] < 8) /* a byte layout's version: a protobuf message starts with field 1 or later */
        return fl_status_set(st, FL_INVALID_ARGUMENT, "partition format %u; this task reads format %u only (client and task of one build)",
                   len ? first[0] : 0u, FL_PARTITION_FORMAT);
    /* A node's parts take some 10 times their bytes once unpacked, tiny ones more;
     * the 256 MiB cap keeps a frame at the size limit to a few hundred MiB. */
    size_t structure = 64 * len < 256u << 20 ? 64 * len : 256u << 20;
    fl_wire_arena *arena = fl_wire_arena_new(); /* freed whole: the nodes are rebuilt from it */
    wire_arena_reset(arena, len + structure + (1u << 20));
    Flowlab__RegisterPartition *msg = flowlab__register_partition__unpack(&arena->allocator, len, bytes);
    int rc = msg ? check_head(msg, p, st)
                 : fl_status_set(st, FL_INVALID_ARGUMENT, "(message): protobuf-c could not unpack its %zu bytes as a "
                                 "RegisterPartition (within a memory budget of %zu bytes)", len, arena->budget);
    if (rc == 0) {
        p->graph = fl_graph_new();
        rc = fl_partition_def_read_nodes(msg->graph_def, p->graph, st);
        fl_graph_set_random_seed(p->graph, msg->graph_seed); /* last, as the client's graph had it */
        p->reuse_memory = msg->reuse_memory;
    }
    fl_wire_arena_free(arena);
    return rc;
}

int fl_partition_def_decode(const void *bytes, size_t len, fl_graph_partition *p)
{
    fl_status why = {0};
    memset(p, 0, sizeof *p);
    if (read_message(bytes, len, p, &why) == 0)
        return 0;
    fl_set_error_code(FL_INVALID_ARGUMENT, "partition for /job:%s/task:%d refused: %s", p->job[0] ? p->job : "?", p->task,
                      why.message);
    fl_graph_partition_free(p);
    memset(p, 0, sizeof *p);
    return -1;
}
