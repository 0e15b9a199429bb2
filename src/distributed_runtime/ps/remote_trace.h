/* remote_trace.h: a remote device's requests in a traced run (a between-
 * graph worker's PULL, APPLY, ASSIGN_ADD to a ps task): each op from when
 * its request was sent to when its reply came, for the worker's trace. */
#ifndef FLOWLAB_DIST_REMOTE_TRACE_H
#define FLOWLAB_DIST_REMOTE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"

typedef struct fl_remote_trace fl_remote_trace;

fl_remote_trace *fl_remote_trace_new(void);
void fl_remote_trace_free(fl_remote_trace *t); /* after its connection's reader has stopped */
/* On: a fresh log of requests; off: the log is dropped. */
void fl_remote_trace_set(fl_remote_trace *t, bool on);
/* While on: node's op sent its requests, the last with id last_id, at sent_us. */
void fl_remote_trace_sent(fl_remote_trace *t, int node, uint32_t last_id, double sent_us);
/* The connection's reply clock (connect.h's reply_clock, on its reader
 * thread): the reply to request id came at at_us, so did those before it. */
void fl_remote_trace_replied(void *trace, uint32_t id, double at_us);
/* Moves up to max ops, in the order sent, into out: from send to reply (an
 * op still unanswered ends now). Returns how many. */
int fl_remote_trace_take(fl_remote_trace *t, fl_op_timing *out, int max);

#endif
