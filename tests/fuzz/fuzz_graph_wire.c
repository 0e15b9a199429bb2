/* fuzz_graph_wire.c: a libFuzzer target for the decoder of a partition's
 * message (partition_def.c: protobuf-c's unpack, then partition_def_nodes.c),
 * the payload of REGISTER_PARTITION (`make fuzz`).
 * Any bytes: refused with INVALID_ARGUMENT and a message, or a graph that
 * encodes again and decodes to as many nodes and Sends and Recvs; ASan and
 * UBSan catch the rest, abort() marks a broken promise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/partition/partition_def.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void check(bool promise, const char *what)
{
    if (!promise) {
        fprintf(stderr, "fuzz_graph_wire: broken promise: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fl_graph_partition p, q;
    if (fl_partition_def_decode(data, size, &p) != 0) {
        check(fl_last_error_code() == FL_INVALID_ARGUMENT, "a refusal is INVALID_ARGUMENT");
        check(strncmp(fl_last_error(), "partition for ", 14) == 0, "a refusal says whose partition");
        check(p.graph == NULL, "a refused partition leaves nothing behind");
        return 0;
    }
    fl_wire_buf again = {0};
    check(fl_partition_def_encode(&p, &again) == 0, "an accepted partition encodes");
    check(fl_partition_def_decode(again.data, again.len, &q) == 0, "and decodes again");
    bool same = fl_graph_node_count(q.graph) == fl_graph_node_count(p.graph);
    for (int i = 0; same && i < fl_graph_node_count(p.graph); i++)
        same = fl_graph_node(q.graph, i)->op == fl_graph_node(p.graph, i)->op;
    check(same, "to the same nodes, Sends and Recvs among them");
    fl_graph_partition_free(&q);
    fl_graph_partition_free(&p);
    fl_wire_buf_free(&again);
    return 0;
}
