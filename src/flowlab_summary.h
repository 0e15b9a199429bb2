/* flowlab_summary.h: the part of flowlab's public API that writes
 * TensorBoard's event files, TensorFlow's tf.summary.FileWriter.
 * Included by flowlab.h; include that, not this. */
#ifndef FLOWLAB_SUMMARY_H
#define FLOWLAB_SUMMARY_H

#include "flowlab.h"

/* ------------------------------------------------------------------------
 * Summaries for TensorBoard (src/summary/). A writer owns one event file,
 * LOG_DIR/events.out.tfevents.<seconds>.<host>.<pid>, created with LOG_DIR
 * (not its parents). Each call appends one record; the writer's thread
 * writes them every FLOWLAB_SUMMARY_FLUSH_SECS (2 s; 0: at once, no thread),
 * as do a flush and close, and only whole, so a killed run leaves a file
 * TensorBoard reads to its last record. Threads may share a writer.
 * Open it with `tensorboard --logdir LOG_DIR`. Every call returns 0, or -1
 * with fl_last_error() naming the file.
 * ------------------------------------------------------------------------ */
typedef struct fl_summary_file_writer fl_summary_file_writer;

fl_summary_file_writer *fl_summary_file_writer_new(const char *log_dir);
const char *fl_summary_file_writer_path(const fl_summary_file_writer *w);
/* A point of the curve tag at step ("loss", "accuracy", "global_step/sec"). */
int fl_summary_add_scalar(fl_summary_file_writer *w, const char *tag, double value, long step);
/* The distribution of a float32 tensor's values (a variable's weights), in
 * 30 buckets of equal width between its smallest and largest value. */
int fl_summary_add_histogram(fl_summary_file_writer *w, const char *tag, const fl_tensor *values, long step);
/* The graph, for TensorBoard's graph dashboard: every node with its op,
 * inputs, device, dtype and shape; the dashboard folds the nodes into their
 * name scopes ("tower_0/conv1"), as it does for TensorFlow's graphs. */
int fl_summary_add_graph(fl_summary_file_writer *w, const fl_graph *g);
int fl_summary_file_writer_flush(fl_summary_file_writer *w);
int fl_summary_file_writer_close(fl_summary_file_writer *w); /* flushes; NULL is fine */

#endif
