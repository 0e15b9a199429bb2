/* accumulator.h: TensorFlow's ConditionalAccumulator, the state behind the
 * accumulator ops of synchronous training (issue 36 item 2, stage B): a
 * float32 sum of gradients of one shape, kept in a task's variable
 * container by name so every partition on a ps shares it (accumulator.c). */
#ifndef FLOWLAB_ACCUMULATOR_H
#define FLOWLAB_ACCUMULATOR_H

#include <stdint.h>

#include "runtime.h"

typedef struct fl_accumulator fl_accumulator;
/* The accumulators of one task by name (the container owns one set). */
typedef struct fl_accumulator_set fl_accumulator_set;

fl_accumulator_set *fl_accumulator_set_new(void);
void fl_accumulator_set_free(fl_accumulator_set *set);
/* How many workers (and chiefs) of the task's cluster have not said
 * goodbye, which its server notes at each goodbye; -1 until the first. A
 * take that needs more gradients than they can bring is ended
 * (rendezvous_accumulators.c). */
void fl_accumulator_set_note_remaining(fl_accumulator_set *set, int workers);
int fl_accumulator_set_remaining(fl_accumulator_set *set);

/* The accumulator `name` for gradients of shape, made the first time it is
 * asked for (global step 0); NULL after fl_set_error_code when one of that
 * name lives here with another shape. */
fl_accumulator *fl_accumulator_find(fl_accumulator_set *set, const char *name, fl_shape shape);

/* AccumulatorApplyGradient: adds gradient (float32, the accumulator's
 * shape) when local_step >= the global step and returns 0; drops it and
 * counts it stale when older, returning 1; -1 after fl_set_error_code
 * naming op when its dtype or shape is not the accumulator's. */
int fl_accumulator_apply(fl_accumulator *a, int64_t local_step, const fl_tensor *gradient, const char *op);

/* AccumulatorTakeGradient: waits until num_required gradients came (or
 * until deadline_s on fl_now_s's clock), writes their average into out
 * (float32, the accumulator's shape, its data the caller's), resets the
 * sum and advances the global step by one. -1 after fl_set_error_code
 * naming op and the accumulator when the deadline passes (DEADLINE_EXCEEDED)
 * or num_required < 1 or out is not the accumulator's shape. */
int fl_accumulator_take(fl_accumulator *a, int num_required, double deadline_s, fl_tensor *out, const char *op);

/* The same without waiting (a task's partition runs a take this way, as
 * an asynchronous op: rendezvous_accumulators.c): 1 when it took, 0 when
 * fewer than num_required gradients are here, -1 as above. */
int fl_accumulator_try_take(fl_accumulator *a, int num_required, fl_tensor *out, const char *op);

/* AccumulatorSetGlobalStep: the step below which gradients are stale (the
 * chief sets it after an update, as TensorFlow's SyncReplicasOptimizer).
 * It reopens a closed accumulator: a chief trains again. */
void fl_accumulator_set_step(fl_accumulator *a, int64_t step);
/* AccumulatorClose: the chief ended training at global step `step`, so a
 * wait for a later step never ends (TensorFlow closes its sync token queue). */
void fl_accumulator_close_at(fl_accumulator *a, int64_t step);

/* A snapshot: the global step, the gradients dropped as stale since it was
 * made (fl_remote_stale_steps), those summed since the last take
 * (TensorFlow's num_accumulated), and whether it was closed, at which step. */
typedef struct {
    int64_t global_step, stale;
    int accumulated;
    bool closed;
    int64_t closed_at;
} fl_accumulator_state;
fl_accumulator_state fl_accumulator_read(fl_accumulator *a);

#endif
