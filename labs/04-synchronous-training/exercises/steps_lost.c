/* steps_lost.c: exercise steps-lost. Write my_steps_lost (see exercises.h):
 * how far training goes back when a ps dies and the chief restores the
 * latest checkpoint.
 *
 * Hints: the checkpoints are at started_at + k * save_every; the latest one
 * at or before died_at has k = (died_at - started_at) / save_every, in
 * integer division. When k is 0 the latest is started_at itself, which is a
 * checkpoint only when training was restored from one (started_at > 0).
 *
 * The question the check cannot ask: what is the most a ps failure can
 * cost with save_every N? Every checkpoint pulls every variable and Adam
 * slot from the ps (39.3 MB for chapter 1's model, against 26.2 MB for a
 * whole training step): what does saving every step cost, and how would
 * you choose N for a job whose ps fails about once a day?
 *
 * Check your work: make exercises */
#include "exercises.h"

long my_steps_lost(long started_at, long save_every, long died_at, long *restored_to)
{
    (void)started_at, (void)save_every, (void)died_at, (void)restored_to;
    return -2; /* TODO: your code here */
}
