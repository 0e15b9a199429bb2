/* rendezvous.h: where a value sent from one task to another waits for the
 * run that needs it, keyed by step and edge (TensorFlow's rendezvous). The
 * server's loop thread puts what SEND_TENSOR frames bring; a partition's
 * run, on its own thread, takes what its recvs need, waiting up to the
 * task deadline. A step's entries go when it finishes or is aborted. */
#ifndef FLOWLAB_DIST_RENDEZVOUS_H
#define FLOWLAB_DIST_RENDEZVOUS_H

#include <stdint.h>
#include <stdio.h>

#include "runtime.h"

typedef struct fl_rendezvous fl_rendezvous;

fl_rendezvous *fl_rendezvous_new(void);
void fl_rendezvous_free(fl_rendezvous *r);
/* Bounds what waits for a run that has not taken it (0: no bound): a put
 * that would hold more than max_bytes is refused, and a value that has
 * waited max_age_s (a run that needed it would have given up) is dropped. */
void fl_rendezvous_set_limits(fl_rendezvous *r, size_t max_bytes, double max_age_s);
/* Keeps a copy of value for (step, key); dropped when the step is over.
 * 0, or -1 (nothing kept) when it would pass max_bytes, with the bytes
 * held now in *held. */
int fl_rendezvous_put(fl_rendezvous *r, uint64_t step, const char *key, const fl_tensor *value, size_t *held);

typedef struct {
    const char *from;   /* the sending task, for messages: "/job:ps/task:0" */
    double deadline_s;  /* fl_task_deadline_s() */
    FILE *log;          /* a line every few seconds while waiting */
    const char *prefix; /* "worker 1" */
} fl_rendezvous_wait_options;
/* Takes the value for (step, key), waiting for it. 0 and *out (the
 * caller's to free), or -1 after fl_set_error_code: ABORTED when the step
 * was aborted, DEADLINE_EXCEEDED at the deadline, naming key and sender. */
int fl_rendezvous_take(fl_rendezvous *r, uint64_t step, const char *key, const fl_rendezvous_wait_options *o,
                       fl_tensor **out);
/* ABORT_STEP: waits for the step end now with ABORTED, later values drop. */
void fl_rendezvous_abort(fl_rendezvous *r, uint64_t step);
/* Every step, at server stop. */
void fl_rendezvous_abort_all(fl_rendezvous *r);
/* The step's run has ended here: what is left of it goes, later values drop. */
void fl_rendezvous_finish(fl_rendezvous *r, uint64_t step);
/* Values held now (for tests). */
int fl_rendezvous_count(fl_rendezvous *r);

#endif
