/* exercises.h: the three functions chapter 3's exercises ask you to write.
 * Each lives in its own file in this folder (round_robin.c, ps_load.c,
 * waiting_log.c); edit that file, then run `make exercises` from the top of
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

/* Exercise waiting-log: log is the whole output of one worker task, lines
 * ending in '\n'. While a ps task is not up yet, the worker retries and says
 * so every few seconds, the seconds counted from its first try:
 *   worker 1: waiting for /job:ps/task:1 at 127.0.0.1:2223 for 5 s (Connection refused)
 *   worker 1: waiting for /job:ps/task:1 at 127.0.0.1:2223 for 10 s (Connection refused)
 *   worker 1: reached /job:ps/task:1 at 127.0.0.1:2223 after 12 s
 * A line may start with something else before "worker" (the launcher puts
 * the task's name first), and most lines are about other things (steps,
 * losses). The worker waited for a task as long as its "reached" line says,
 * or, if it was never reached, as long as its last "waiting" line says.
 * Fill *out with the task waited for longest (the one named first in the log
 * on a tie) and return 1; return 0, leaving *out alone, when the log shows
 * no wait. */
typedef struct {
    char task[64];  /* "/job:ps/task:1" */
    double seconds; /* how long the worker waited for it */
    bool reached;   /* whether the log says the worker reached it in the end */
} wait_report;
int my_longest_wait(const char *log, wait_report *out);

#endif
