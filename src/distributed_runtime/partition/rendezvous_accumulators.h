/* rendezvous_accumulators.h: the accumulator ops' kernels (TensorFlow's
 * ConditionalAccumulator) as a task's partition runs them on its
 * rendezvous device, on the task's container (rendezvous_accumulators.c). */
#ifndef FLOWLAB_DIST_RENDEZVOUS_ACCUMULATORS_H
#define FLOWLAB_DIST_RENDEZVOUS_ACCUMULATORS_H

#include "runtime.h"
#include "variable_container.h"

/* AccumulatorApplyGradient (step in in[0], gradient in in[1]),
 * AccumulatorSetGlobalStep or AccumulatorClose (the step in in[0]), on host values: 0, or -1
 * after fl_set_error_code naming the node. A stale gradient is 0: dropped
 * and counted by its accumulator, and *dropped (an apply's output) is 1. */
int fl_accumulator_kernel_run(fl_variable_container *c, const fl_node *n, const fl_tensor *in0, const fl_tensor *in1,
                              int32_t *dropped);
/* AccumulatorWaitStep without waiting: 1 with the accumulator's global
 * step in *step once it passed local_step, 0 before, -1 as above; once it
 * is closed (the chief ended training), -1 with FL_OUT_OF_RANGE. */
int fl_accumulator_kernel_try_wait(fl_variable_container *c, const fl_node *n, int32_t local_step, int32_t *step);
/* AccumulatorTakeGradient without waiting: 1 with the average in out (host
 * memory of its shape), 0 when too few gradients came yet, -1 as above. */
int fl_accumulator_kernel_try_take(fl_variable_container *c, const fl_node *n, int num_required, fl_tensor *out);

#endif
