/* flowlab_pictures.h: pictures of a graph and of a run: the graph as
 * Graphviz DOT, coloured by device, and a run's timeline as a Chrome trace.
 * Included by flowlab.h; include that, not this. */
#ifndef FLOWLAB_PICTURES_H
#define FLOWLAB_PICTURES_H

#include "flowlab.h"

/* Every node, coloured by requested device, variables drawn as cylinders. */
int fl_graph_write_dot(const fl_graph *g, const char *path);
/* The same, coloured by the device each node actually ran on in s. */
int fl_session_write_dot(const fl_session *s, const char *path);
/* How much of the graph a picture shows. FL_DOT_SCOPES draws it as
 * TensorBoard's graph view does (TensorFlow: tf.summary.FileWriter(logdir,
 * sess.graph), then TensorBoard's Graphs tab): one box per name scope,
 * scope_depth levels deep (0 counts as 1; a box's outer scopes are drawn
 * around it), coloured by its nodes' device (striped when they are several);
 * an edge between two boxes is labelled with the tensor's shape, or how
 * many tensors cross it, and is red where they are copied between devices.
 * A "gradients" scope and an optimizer's scope stay one box at any depth.
 * FL_DOT_NODES draws every node, as fl_graph_write_dot does. */
typedef enum { FL_DOT_SCOPES, FL_DOT_NODES } fl_dot_detail;
typedef struct {
    fl_dot_detail detail;
    int scope_depth;
} fl_dot_options;
/* NULL options: scopes, one level deep. */
int fl_graph_write_dot_with(const fl_graph *g, const char *path, const fl_dot_options *options);
int fl_session_write_dot_with(const fl_session *s, const char *path, const fl_dot_options *options);
/* While tracing is on, every run records each op's start and duration. */
void fl_session_set_tracing(fl_session *s, bool on);
/* Adds an event the session cannot see (a lab's communication thread's
 * collective) to its timeline, on a lane of its own named lane, after the
 * devices' lanes: name from start_us to end_us, in microseconds of
 * CLOCK_MONOTONIC (the clock the devices' events are on). Recorded only
 * while tracing is on. Safe from any thread, during a run too. */
void fl_session_trace_event(fl_session *s, const char *lane, const char *name, double start_us,
                            double end_us);
/* The same, with the event's kind (the trace's "cat"): the op another
 * task ran ("MatMul"), so a drawing colours it as the op it was, or what
 * the lane shows ("request"). fl_session_trace_event's kind is "external". */
void fl_session_trace_span(fl_session *s, const char *lane, const char *name, const char *kind,
                           double start_us, double end_us);
/* A task device's peak bytes in a traced step, as the task sent them back
 * with its timings: fl_session_memory lists it (a device listed already
 * takes the new peak). */
void fl_session_note_task_memory(fl_session *s, const char *device, size_t peak_bytes);
/* One op of the traced runs as the executor recorded it, as TensorFlow's
 * RunMetadata step_stats gives it: the node's name, its op ("Copy" for a
 * copy between devices, named after the value it moved), its device, and
 * its start on CLOCK_MONOTONIC (microseconds, fl_session_trace_event's
 * clock). The strings live as long as the session and its devices. */
typedef struct {
    const char *name, *op, *device;
    double start_us, duration_us;
} fl_step_event;
/* The executor's events since tracing was last turned on: copies the first
 * max of them into out and returns how many there are. */
int fl_session_step_events(const fl_session *s, fl_step_event *out, int max);
/* Chrome trace JSON (chrome://tracing, Perfetto): one lane per device,
 * then one per lane of fl_session_trace_event. */
int fl_session_write_trace(const fl_session *s, const char *path);

#endif
