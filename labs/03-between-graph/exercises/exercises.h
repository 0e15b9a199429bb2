/* exercises.h: the five functions chapter 3's exercises ask you to write.
 * Each lives in its own file in this folder (partition_edges.c,
 * cross_task_bytes.c, round_robin.c, ps_load.c, staleness.c); edit that file, then run `make exercises` from the top of
 * the repository. None needs a server: the checks run offline. Reference
 * answers are in solutions/, but try first. */
#ifndef LAB03_EXERCISES_H
#define LAB03_EXERCISES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"

/* Exercise round-robin: a device function (see fl_device_function_push) for
 * one worker, a replica device setter of your own. `user` points to a
 * ps_placement. The i-th variable it is asked about (op type "VariableV2",
 * counting from 0) goes to "/job:ps/task:K/cpu:0" with K = i mod num_ps; any
 * other node goes to worker_device. The graph copies the string you return
 * at once, so you may write it into `chosen` and return that. */
typedef struct {
    const char *worker_device; /* "/job:worker/task:1/cpu:0" */
    int num_ps;                /* ps tasks in the cluster, at least 1 */
    int variables_placed;      /* variables placed so far; starts at 0 */
    char chosen[64];           /* room for the device you return */
} ps_placement;
const char *my_round_robin(const fl_node *node, void *user);

/* Exercise ps-load: predict, before anything runs, how many bytes of
 * variables each ps task will hold. shapes[v] is variable v's shape, in the
 * order the model creates them; every variable is float32, so it takes
 * 4 x (number of elements) bytes. Write to bytes[k], k = 0 .. num_ps-1, the
 * bytes the replica device setter puts on ps task k with this strategy:
 *   FL_PS_ROUND_ROBIN: variable v to task v mod num_ps;
 *   FL_PS_GREEDY_BY_BYTES: each variable, in order, to the task holding the
 *     fewest bytes so far, the lowest index on a tie.
 * Return 0, or -1 (writing nothing) when num_ps < 1 or the strategy is
 * neither. Then answer the question in ps_load.c. */
int my_ps_load(const fl_shape *shapes, int nvars, int num_ps, fl_ps_strategy strategy,
               int64_t *bytes);

/* Exercise staleness: asynchronous training as chapter 3 runs it, with
 * `workers` workers, worker w taking step_ms[w] milliseconds for each step
 * (pull, compute, push). At time 0 every worker reads the variables at
 * global step 0. When a worker finishes a step, the ps applies its gradient
 * at once: the gradient's staleness is the global step just before it is
 * applied minus the global step the worker read (the updates of others that
 * landed while it computed); then the global step goes up by one, and the
 * worker reads the variables again, at the new global step, and starts its
 * next step. Workers that finish at the same time are applied lowest index
 * first. Simulate the first `updates` updates: set histogram[0 ..
 * max_staleness] to zero, add one to histogram[s] for each gradient s
 * steps stale (histogram[max_staleness] for any s >= max_staleness), and
 * return the mean staleness. Return -1, writing nothing, when workers < 1,
 * updates < 1, max_staleness < 0 or a step_ms is below 1. Then answer the
 * questions in staleness.c. */
double my_async_staleness(const int *step_ms, int workers, int updates, long *histogram, int max_staleness);

/* Exercise partition-edges: what the master cuts when one graph spans tasks.
 * A node's task is the "/job:NAME/task:N" its device starts with
 * ("/job:worker/task:1/gpu:0" -> "/job:worker/task:1"); every node of the
 * graphs the check gives you has one. The graph gets one partition per task
 * that holds a node. Where a node reads (fl_node_input) a value computed on
 * another task, the master adds a send/receive pair: one per (value,
 * receiving task), however many nodes of that task read the value. Write one
 * partition_edge per pair into out[0 .. max), in any order, and the number
 * of partitions into *partitions; return the number of pairs, or -1 when
 * there are more than max. A node with no device (ex_task_of gives "") is
 * the initial value of a variable of another task: the client computes it
 * once, when it initializes; leave such nodes and their inputs out. */
#define EX_TASK_LEN 48
typedef struct {
    const fl_node *value;              /* the node whose output crosses */
    char from[EX_TASK_LEN], to[EX_TASK_LEN]; /* "/job:ps/task:0", "/job:worker/task:1" */
} partition_edge;
int my_partition_edges(const fl_graph *g, partition_edge *out, int max, int *partitions);

/* Given, for both exercises: writes a node's task into task[EX_TASK_LEN]
 * ("/job:worker/task:1/gpu:0" -> "/job:worker/task:1"; no device -> ""). */
static inline void ex_task_of(const fl_node *n, char *task)
{
    const char *device = fl_node_device(n);
    const char *job_end = strchr(device + 1, '/');                    /* at "/task:1" */
    const char *task_end = job_end ? strchr(job_end + 1, '/') : NULL; /* at "/gpu:0" */
    int len = task_end ? (int)(task_end - device) : (int)strlen(device);
    snprintf(task, EX_TASK_LEN, "%.*s", len, device);
}

/* Exercise cross-task-bytes: the bytes one task receives and sends per step
 * through the pairs of exercise partition-edges (one per value and receiving
 * task). A value is float32 or int32, 4 bytes an element; its shape is
 * fl_node_shape, where a dimension of -1 (the batch) counts as `batch`, the
 * rows of one tower's slice; a scalar is one element. Write the bytes `task`
 * ("/job:worker/task:1") receives from other tasks into *received and the
 * bytes it sends into *sent (a value sent to two tasks counts twice). Leave
 * out the nodes with no device, as in partition-edges. Return 0, or -1 when
 * a value's shape is unknown (rank -1). */
int my_cross_task_bytes(const fl_graph *g, const char *task, int batch, int64_t *received, int64_t *sent);

#endif
