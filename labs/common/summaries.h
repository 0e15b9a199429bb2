/* summaries.h: what every lab writes for TensorBoard under --log_dir: the
 * graph once, `loss` at every step, `images_per_sec` and `global_step/sec`
 * at each progress line, the test `accuracy` at the end, and a histogram
 * of each trainable variable every --histogram_every steps. One writer per
 * process, the lab's default writer (as TensorFlow 2's default summary
 * writer): functions called without --log_dir do nothing, so a lab calls
 * them unconditionally. Between graphs only the chief opens it. */
#ifndef LABS_COMMON_SUMMARIES_H
#define LABS_COMMON_SUMMARIES_H

#include <stdio.h>
#include <stdlib.h>

#include "flowlab.h"
#include "checkpoint_dir.h"
#include "timing.h"

#define SUMMARY_MAX_VARIABLES 256

typedef struct {
    fl_summary_file_writer *writer; /* NULL: no --log_dir, nothing is written */
    const char *program;
    int histogram_every;
    fl_node *variables[SUMMARY_MAX_VARIABLES];
    int nvariables;
    long last_step;        /* of the latest summary: the test accuracy's step */
    long histogram_step;   /* of the latest histograms; -1: none yet */
    long rate_step;        /* the step and time of the last progress line, */
    double rate_time;      /* for global_step/sec */
    bool have_rate;
} lab_summaries;

static inline lab_summaries *default_summaries(void)
{
    static lab_summaries summaries;
    return &summaries;
}

/* A write that fails says so once and stops the summaries; training goes on. */
static inline void summaries_failed(lab_summaries *m)
{
    fprintf(stderr, "%s: --log_dir: %s; no more summaries are written\n", m->program, fl_last_error());
    fl_summary_file_writer_close(m->writer);
    m->writer = NULL;
}

static inline void close_summaries(void)
{
    lab_summaries *m = default_summaries();
    if (m->writer && fl_summary_file_writer_close(m->writer) != 0)
        fprintf(stderr, "%s: --log_dir: %s\n", m->program, fl_last_error());
    m->writer = NULL;
}

// [book:open_summaries]
/* Opens the writer in log_dir (made with its parents) and writes the graph;
 * closed at exit, so every way out of the lab flushes it. Exits 2 when
 * log_dir cannot be made; does nothing when log_dir is NULL. */
static inline void open_summaries(const char *program, const char *log_dir, int histogram_every, fl_graph *g)
{
    lab_summaries *m = default_summaries();
    char why[512];
    if (!log_dir)
        return;
    if (make_checkpoint_dir(log_dir, why, sizeof why) != 0) {
        fprintf(stderr, "%s: --log_dir %s: %s; give a directory you can write to (see --help)\n", program,
                log_dir, why);
        exit(2);
    }
    *m = (lab_summaries){.program = program, .histogram_every = histogram_every, .histogram_step = -1};
    m->writer = fl_summary_file_writer_new(log_dir);
    if (!m->writer) {
        fprintf(stderr, "%s: --log_dir %s: %s\n", program, log_dir, fl_last_error());
        exit(2);
    }
    m->nvariables = fl_trainable_variables(g, m->variables, SUMMARY_MAX_VARIABLES);
    if (fl_summary_add_graph(m->writer, g) != 0)
        summaries_failed(m);
    atexit(close_summaries);
    printf("Summaries for TensorBoard in %s (tensorboard --logdir %s)\n", log_dir, log_dir);
}
// [end:open_summaries]

/* A histogram of each trainable variable's values, read by one session run. */
static inline void summarize_variables(lab_summaries *m, fl_session *s, long step)
{
    fl_tensor *values[SUMMARY_MAX_VARIABLES] = {0};
    if (fl_session_run(s, NULL, 0, m->variables, m->nvariables, values, NULL, 0) != 0) {
        fprintf(stderr, "%s: --histogram_every: reading the variables: %s\n", m->program, fl_session_error(s));
        m->histogram_every = 0;
        return;
    }
    for (int i = 0; i < m->nvariables; i++) {
        if (m->writer && fl_summary_add_histogram(m->writer, fl_node_name(m->variables[i]), values[i], step) != 0)
            summaries_failed(m);
        fl_tensor_free(values[i]);
    }
}

// [book:summarize_step]
/* After each step: its loss, and every --histogram_every steps the variables
 * (counted from the last histograms: a chief that sees the global step jump
 * past a multiple of N still writes them). */
static inline void summarize_step(fl_session *s, long step, float loss)
{
    lab_summaries *m = default_summaries();
    if (!m->writer)
        return;
    m->last_step = step;
    if (fl_summary_add_scalar(m->writer, "loss", loss, step) != 0)
        summaries_failed(m);
    if (m->histogram_every > 0 && m->nvariables > 0 &&
        (m->histogram_step < 0 || step - m->histogram_step >= m->histogram_every)) {
        m->histogram_step = step;
        summarize_variables(m, s, step);
    }
}
// [end:summarize_step]

/* At a progress line: the images per second it printed, and the global
 * steps per second since the previous line (TensorFlow's StepCounterHook). */
static inline void summarize_rates(long step, double images_per_sec)
{
    lab_summaries *m = default_summaries();
    double now = now_seconds();
    if (!m->writer)
        return;
    if (fl_summary_add_scalar(m->writer, "images_per_sec", images_per_sec, step) != 0)
        summaries_failed(m);
    if (m->writer && m->have_rate && now > m->rate_time &&
        fl_summary_add_scalar(m->writer, "global_step/sec", (step - m->rate_step) / (now - m->rate_time), step) != 0)
        summaries_failed(m);
    m->rate_step = step;
    m->rate_time = now;
    m->have_rate = true;
}

/* The test accuracy, at the last step summarized. */
static inline void summarize_accuracy(double accuracy)
{
    lab_summaries *m = default_summaries();
    if (m->writer && fl_summary_add_scalar(m->writer, "accuracy", accuracy, m->last_step) != 0)
        summaries_failed(m);
}

#endif
