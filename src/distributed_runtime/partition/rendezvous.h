/* rendezvous.h: where a value sent from one task to another waits for the
 * run that needs it, keyed by step and edge (TensorFlow's rendezvous). The
 * server's loop thread puts what SEND_TENSOR frames bring; a partition's
 * run, on its own thread, takes what its recvs need, waiting up to the
 * task deadline. A step's entries go when it finishes or is aborted. */
#ifndef FLOWLAB_DIST_RENDEZVOUS_H
#define FLOWLAB_DIST_RENDEZVOUS_H

#include <stdint.h>
#include <stdio.h>

#include "distributed_runtime/transport/wire.h"
#include "runtime.h"

typedef struct fl_rendezvous fl_rendezvous;

fl_rendezvous *fl_rendezvous_new(void);
void fl_rendezvous_free(fl_rendezvous *r);
/* Who sent a value (a task server's connection): its values are counted,
 * and go when it closes. */
typedef struct fl_rendezvous_sender fl_rendezvous_sender;

/* What a value waiting here is charged besides its data: the table's own
 * memory for it (its entry, its key up to 255 bytes, its tensor). */
#define FL_RENDEZVOUS_VALUE_OVERHEAD 512

/* Bounds what waits for a run that has not taken it (0: no bound): each
 * sender's values to per_sender bytes and everyone's to in_all (each value
 * charged its data and FL_RENDEZVOUS_VALUE_OVERHEAD), and a value that has
 * waited max_age_s (a run that needed it would have given up) is dropped. */
void fl_rendezvous_set_limits(fl_rendezvous *r, size_t per_sender, size_t in_all, double max_age_s);
fl_rendezvous_sender *fl_rendezvous_sender_new(void);
/* The sender has gone (its connection closed): its values go, except
 * those of the steps running now (running[0..nrunning)), which stay,
 * charged to nobody, for their runs; sender is freed. NULL: nothing. */
void fl_rendezvous_sender_gone(fl_rendezvous *r, fl_rendezvous_sender *sender, const uint64_t *running,
                               int nrunning);

typedef enum { FL_RENDEZVOUS_KEPT = 0, FL_RENDEZVOUS_SENDER_FULL, FL_RENDEZVOUS_ALL_FULL } fl_rendezvous_put_result;
typedef struct {
    size_t sender_bytes, all_bytes; /* held before the put */
    size_t charge;                  /* what the value would add */
} fl_rendezvous_held;
/* Keeps a copy of value for (step, key), in memory a past value left when
 * it fits (see fl_rendezvous_recycle), charged to sender (NULL: to
 * nobody); dropped when the step is over. KEPT (also for a value dropped
 * because its step is over), or which bound it would pass (nothing kept),
 * with what is held in *held. */
fl_rendezvous_put_result fl_rendezvous_put(fl_rendezvous *r, fl_rendezvous_sender *sender, uint64_t step,
                                           const char *key, const fl_tensor *value, fl_rendezvous_held *held);
/* The same for a value as a SEND_TENSOR frame brings it, read straight
 * from the frame (in host order): its one copy. */
fl_rendezvous_put_result fl_rendezvous_put_wire(fl_rendezvous *r, fl_rendezvous_sender *sender, uint64_t step,
                                                const char *key, const fl_wire_tensor *value, fl_rendezvous_held *held);

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
/* The value for (step, key) if it is here, without waiting: 1 and *out
 * (the caller's), 0 when it has not come yet, or -1 after fl_set_error_code
 * when the step is over (ABORTED when it was aborted), naming key and from. */
int fl_rendezvous_poll(fl_rendezvous *r, uint64_t step, const char *key, const char *from, fl_tensor **out);
/* A value taken here (take, poll) given back once its reader is done with
 * it, with its data's capacity in bytes: the next values' memory. The
 * caller may instead fl_tensor_free it. */
void fl_rendezvous_recycle(fl_rendezvous *r, fl_tensor *value, size_t capacity);
/* A count that grows with each value kept and each step ended: an executor
 * with nothing to run reads it, looks at its recvs, then waits for it to
 * move (up to timeout_s), so that an arrival between the two is not missed. */
uint64_t fl_rendezvous_arrivals(fl_rendezvous *r);
void fl_rendezvous_wait_arrival(fl_rendezvous *r, uint64_t seen, double timeout_s);
/* Moves the count without a value: a gradient went into one of the task's
 * accumulators, so a partition waiting on a take there looks again. */
void fl_rendezvous_nudge(fl_rendezvous *r);
/* ABORT_STEP: waits for the step end now with ABORTED, later values drop. */
void fl_rendezvous_abort(fl_rendezvous *r, uint64_t step);
/* Whether step was aborted (or every step, at server stop): what a take or
 * a wait, which the accumulators answer, checks while it waits. */
bool fl_rendezvous_step_aborted(fl_rendezvous *r, uint64_t step);
/* Every step, at server stop. */
void fl_rendezvous_abort_all(fl_rendezvous *r);
/* The step's run has ended here: what is left of it goes, later values drop. */
void fl_rendezvous_finish(fl_rendezvous *r, uint64_t step);
/* Values held now, and the bytes charged for them (for stats and tests). */
int fl_rendezvous_count(fl_rendezvous *r);
size_t fl_rendezvous_bytes(fl_rendezvous *r);

#endif
