/* solutions/cross_task_bytes.c: a reference answer to exercise cross-task-bytes. */
#include <stdio.h>
#include <string.h>

#include "exercises.h"

/* 4 bytes an element, the batch dimension (-1) counted as `batch` rows. */
static int64_t value_bytes(const fl_node *value, int batch)
{
    fl_shape shape = fl_node_shape(value);
    if (shape.rank < 0)
        return -1;
    int64_t elements = 1;
    for (int d = 0; d < shape.rank; d++)
        elements *= shape.dims[d] < 0 ? batch : shape.dims[d];
    return 4 * elements;
}

/* True when an earlier input (reader i, input k in creation order) already
 * carried value to task `to`: one pair per value and receiving task. */
static int sent_before(const fl_graph *g, const fl_node *value, const char *to, int i, int k)
{
    for (int j = 0; j <= i; j++) {
        const fl_node *reader = fl_graph_node(g, j);
        char task[EX_TASK_LEN];
        ex_task_of(reader, task);
        int inputs = j < i ? fl_node_input_count(reader) : k;
        for (int m = 0; m < inputs; m++)
            if (fl_node_input(reader, m) == value && strcmp(task, to) == 0)
                return 1;
    }
    return 0;
}

int my_cross_task_bytes(const fl_graph *g, const char *task, int batch, int64_t *received, int64_t *sent)
{
    *received = *sent = 0;
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        const fl_node *reader = fl_graph_node(g, i);
        char to[EX_TASK_LEN], from[EX_TASK_LEN];
        ex_task_of(reader, to);
        for (int k = 0; k < fl_node_input_count(reader); k++) {
            const fl_node *value = fl_node_input(reader, k);
            ex_task_of(value, from);
            if (!from[0] || !to[0] || strcmp(from, to) == 0 || sent_before(g, value, to, i, k))
                continue;
            int64_t bytes = value_bytes(value, batch);
            if (bytes < 0)
                return -1;
            if (strcmp(to, task) == 0)
                *received += bytes;
            if (strcmp(from, task) == 0)
                *sent += bytes;
        }
    }
    return 0;
}
