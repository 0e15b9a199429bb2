/* cross_task_bytes.c: exercise cross-task-bytes. Write my_cross_task_bytes
 * (see exercises.h): the bytes a task receives and sends per step when one
 * graph spans tasks.
 *
 * Hints: this is exercise partition-edges again, adding up bytes instead of
 * listing pairs; fl_node_shape gives a value's shape. Count a value once per
 * receiving task, however many nodes there read it. Work chapter 1's model
 * by hand first: 3,274,634 float32 parameters are 13,098,536 bytes.
 *
 * The questions the check cannot ask: with 2 workers and 32 images per
 * tower, what does each worker receive and send per step, and what passes
 * through the client (it feeds the global batch and fetches the loss)? How
 * do the worker's numbers compare with the "MB moved per step" that
 * between_graph prints for the same model, and why? Then measure: run
 * in_graph_towers in cluster mode against two flowlab_server workers
 * (chapter 3, "In-graph replication across tasks") with --print_stats, and
 * compare the client's bytes per step with your prediction.
 *
 * Check your work: make exercises */
#include "exercises.h"

int my_cross_task_bytes(const fl_graph *g, const char *task, int batch, int64_t *received, int64_t *sent)
{
    (void)g, (void)task, (void)batch, (void)received, (void)sent;
    return -1; /* TODO: your code here */
}
