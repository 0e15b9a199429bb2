/* exercises.h: the three functions chapter 3's exercises ask you to write.
 * Each lives in its own file in this folder (round_robin.c, ps_load.c,
 * staleness.c); edit that file, then run `make exercises` from the top of
 * the repository. None needs a server: the checks run offline. Reference
 * answers are in solutions/, but try first. */
#ifndef LAB03_EXERCISES_H
#define LAB03_EXERCISES_H

#include <stdbool.h>
#include <stdint.h>

#include "flowlab.h"

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

#endif
