/* exercises.h: the three functions chapter 4's exercises ask you to write.
 * Each lives in its own file in this folder (accumulator.c, steps_lost.c,
 * fault_log.c); edit that file, then run `make exercises` from the top of
 * the repository. None needs a server: the checks run offline. Reference
 * answers are in solutions/, but try first. */
#ifndef LAB04_EXERCISES_H
#define LAB04_EXERCISES_H

#include <stdbool.h>
#include <stdint.h>

/* Exercise accumulator: what a ps does with one gradient for one variable
 * under synchronous training. The accumulator starts all zero. A gradient
 * arrives, computed by a worker against global step `step`:
 *   - once a step has been applied (has_run), a gradient for that step or an
 *     older one is stale: GRADIENT_STALE, and nothing changes;
 *   - while gradients are held (count > 0), one for an older step than
 *     theirs is stale too; one for a newer step means the held step will
 *     never complete (its workers moved on or died): the held gradients are
 *     thrown away (count back to 0) and the new one is held in their place;
 *   - otherwise it is held: the first one held sets `step`, each adds one to
 *     count. When count reaches replicas_to_aggregate the mean is applied:
 *     GRADIENT_APPLIED, has_run becomes true, last_run the step, count 0.
 *     Before that: GRADIENT_HELD.
 * Return what became of the gradient and leave *a as the rules say. */
typedef enum { GRADIENT_HELD, GRADIENT_APPLIED, GRADIENT_STALE } gradient_fate;
typedef struct {
    uint64_t step;     /* the step the held gradients are for (when count > 0) */
    int count;         /* gradients held */
    bool has_run;      /* whether a step has been applied */
    uint64_t last_run; /* the step applied last (when has_run) */
} accumulator;
gradient_fate my_gradient_arrives(accumulator *a, uint64_t step, int replicas_to_aggregate);

/* Exercise steps-lost: a ps dies and comes back empty; the chief restores
 * the latest checkpoint. Training started at global step started_at (0: from
 * initial values; more: restored from a checkpoint of that step, which
 * exists). The chief saves a checkpoint each time the global step reaches
 * started_at + k * save_every (k = 1, 2, ...; save_every 0: never), and the
 * checkpoint holds that step. The ps dies when the global step is died_at,
 * after any checkpoint of that very step was saved. Write to *restored_to
 * the global step training goes on from (the latest checkpoint at or before
 * died_at, or 0 when there is none: the chief initialises again) and return
 * the steps lost, died_at - *restored_to. Return -1, writing nothing, when
 * started_at < 0, save_every < 0 or died_at < started_at. */
long my_steps_lost(long started_at, long save_every, long died_at, long *restored_to);

/* Exercise fault-log: log is the whole output of a cluster's run (every
 * task's lines, each line starting with the task's name, as the launcher and
 * labs/04-synchronous-training/ps_dies.sh write them). When a worker loses
 * a task it says
 *   worker0: worker 0: the step failed (... lost the connection to /job:ps/task:0: ...); connecting again
 * and, when the chief has restored an older model, each worker says
 *   worker0: worker 0: global step 19 -> 11: 8 steps lost since the last checkpoint
 * Fill *out and return 1 when the log shows a lost task; return 0, leaving
 * *out alone, when it shows none. lost_task is the task named in the first
 * "lost the connection to" line; workers_affected counts the different
 * workers that said "the step failed"; died_at, restored_to and steps_lost
 * come from the chief's (worker 0's) "steps lost" line, or are all -1 when
 * it wrote none. Lines may end without '\n' at the end of the log. */
typedef struct {
    char lost_task[64];   /* "/job:ps/task:0" */
    int workers_affected; /* workers whose step failed */
    long died_at;         /* the global step the chief had reached */
    long restored_to;     /* the global step it went on from */
    long steps_lost;      /* died_at - restored_to */
} fault_report;
int my_read_fault_log(const char *log, fault_report *out);

#endif
