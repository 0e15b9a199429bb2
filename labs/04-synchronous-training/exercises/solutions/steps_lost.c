/* solutions/steps_lost.c: a reference answer to exercise steps-lost. */
#include "exercises.h"

long my_steps_lost(long started_at, long save_every, long died_at, long *restored_to)
{
    if (started_at < 0 || save_every < 0 || died_at < started_at)
        return -1;
    long latest = started_at; /* a checkpoint when started_at > 0; else the initial values, step 0 */
    if (save_every > 0)
        latest += (died_at - started_at) / save_every * save_every;
    *restored_to = latest;
    return died_at - latest;
}
