/* stale_tally.c: a worker's stale updates counted per step and per
 * variable: what it sent too late, in the units a user counts training in
 * (a step of 7 variables dropped whole is 1 step and 7 variable updates). */
#include "stale_tally.h"

void fl_stale_tally_init(fl_stale_tally *t)
{
    *t = (fl_stale_tally){.any = false};
    pthread_mutex_init(&t->lock, NULL);
}

void fl_stale_tally_destroy(fl_stale_tally *t) { pthread_mutex_destroy(&t->lock); }

void fl_stale_tally_count(fl_stale_tally *t, uint64_t step)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->variable_updates++;
    if (!t->any || t->last_step != step)
        t->steps++;
    t->last_step = step;
    t->any = true;
    pthread_mutex_unlock(&t->lock);
}

void fl_stale_tally_read(fl_stale_tally *t, uint64_t *steps, uint64_t *variable_updates)
{
    pthread_mutex_lock(&t->lock);
    *steps = t->steps;
    *variable_updates = t->variable_updates;
    pthread_mutex_unlock(&t->lock);
}
