/* rendezvous_device.h: a task's rendezvous as a device behind the backend
 * seam (backend_rendezvous.c), where a partition's Send and Recv nodes run
 * (TensorFlow runs _Send and _Recv as kernels of the one executor). A Recv
 * is an asynchronous source: it registers interest in (step, key) and its
 * mark is reached when the value has arrived. A Send hands its input to the
 * step's send function (the peer task's connection) at once. */
#ifndef FLOWLAB_DIST_RENDEZVOUS_DEVICE_H
#define FLOWLAB_DIST_RENDEZVOUS_DEVICE_H

#include <stdatomic.h>

#include "device.h"
#include "rendezvous.h"
#include "variable_container.h"

/* Where a Send's value goes: the peer task's connection (partition_exec.c),
 * or in a test straight into another task's rendezvous. 0, or -1 after
 * fl_set_error_code naming the peer. value is valid during the call only. */
typedef int (*fl_send_fn)(void *user, const char *to_task, uint64_t step, const char *key, const fl_tensor *value);

/* What one step of a partition gives its rendezvous device. */
typedef struct {
    uint64_t step_id;
    FILE *log;                  /* a line every few seconds while a step waits */
    const char *log_prefix;     /* "worker 1" */
    const atomic_bool *cancelled; /* set when the run's client has gone: the wait ends, ABORTED */
    fl_send_fn send;
    void *send_user;
    int *stale_dropped; /* += 1 for each gradient an accumulator dropped as stale (NULL: not counted) */
} fl_rendezvous_step;

typedef struct fl_rendezvous_device fl_rendezvous_device;

fl_rendezvous_device *fl_rendezvous_device_new(fl_rendezvous *r);
void fl_rendezvous_device_free(fl_rendezvous_device *d);
/* The task's container, where the accumulator ops it runs find their
 * accumulators (rendezvous_accumulators.c). */
void fl_rendezvous_device_set_container(fl_rendezvous_device *d, fl_variable_container *c);
/* The device a session runs Send and Recv on (fl_session_set_rendezvous). */
fl_device *fl_rendezvous_device_of(fl_rendezvous_device *d);
/* Before each step: its id and send function; the last step's recvs go. */
void fl_rendezvous_device_begin_step(fl_rendezvous_device *d, const fl_rendezvous_step *step);

#endif
