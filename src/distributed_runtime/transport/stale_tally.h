/* stale_tally.h: synchronous updates (chapter 4) the ps tasks dropped as
 * stale, counted in a worker's two units: its steps that lost at least one
 * update, and the updates lost (one per variable a step updates). One per
 * cluster, shared by its connections to every ps task (stale_tally.c). */
#ifndef FLOWLAB_DIST_STALE_TALLY_H
#define FLOWLAB_DIST_STALE_TALLY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct fl_stale_tally {
    pthread_mutex_t lock; /* everything below: each connection's reader counts here */
    uint64_t steps, variable_updates;
    uint64_t last_step; /* the step of the latest drop, while any */
    bool any;
} fl_stale_tally;

void fl_stale_tally_init(fl_stale_tally *t);
void fl_stale_tally_destroy(fl_stale_tally *t);
/* One update sent for `step` was dropped. A worker's steps follow one
 * another and all of a step's replies come before the next step's, so a
 * drop for another step than the last one's starts a new step (NULL: none). */
void fl_stale_tally_count(fl_stale_tally *t, uint64_t step);
void fl_stale_tally_read(fl_stale_tally *t, uint64_t *steps, uint64_t *variable_updates);

#endif
