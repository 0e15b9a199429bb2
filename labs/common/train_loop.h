/* train_loop.h: the training loop every lab runs: resume from the latest
 * checkpoint, batches from a shuffled dataset, one session run per step, a
 * progress line with images/sec, checkpoints and an optional Chrome trace;
 * then the test accuracy and the --graph file. A lab gives it its own
 * graph's nodes; train() is its steps in order, each a function below. */
#ifndef LABS_COMMON_TRAIN_LOOP_H
#define LABS_COMMON_TRAIN_LOOP_H

#include <stdio.h>

#include "flowlab.h"
#include "data.h"
#include "evaluate.h"
#include "flags.h"
#include "loss_check.h"
#include "summaries.h"
#include "run_stats.h"
#include "timing.h"

/* The nodes the loop runs: placeholders for one (global) batch, the loss it
 * prints, the train op and the global step that counts updates; and the
 * optimizer, for --warmup_steps (NULL in a lab that does not offer it). */
typedef struct {
    fl_node *image, *label, *loss, *train_op, *global_step;
    fl_optimizer *optimizer;
} train_nodes;

/* Where a run of the loop is: the global step, and what the progress line
 * and the trace count from. */
typedef struct {
    long step;             /* the global step: updates made so far, across restarts */
    long first_step;       /* the global step this run started at */
    long last_saved;       /* the step of this run's latest checkpoint */
    long images_since_log; /* examples trained on since the last progress line */
    double last_log_time;  /* seconds (now_seconds) of the last progress line */
    float loss;            /* the loss of the latest step */
} train_progress;

/* Restores the latest checkpoint of --checkpoint_dir, if there is one, and
 * sets *step to its global step. Returns 0, or 1 after printing why not. */
static inline int restore_latest(fl_session *s, const training_flags *o, const train_nodes *t,
                                 long *step)
{
    // [book:restore]
    *step = 0; /* the global step: updates made so far, across restarts */
    if (!o->checkpoint_dir)
        return 0;
    int restored = fl_session_restore_latest(s, o->checkpoint_dir);
    if (restored < 0) {
        fprintf(stderr, "%s: --checkpoint_dir %s: %s\n", o->program, o->checkpoint_dir,
                fl_last_error());
        return 1;
    }
    fl_tensor *value = NULL;
    if (restored == 1 && fl_session_run(s, NULL, 0, &t->global_step, 1, &value, NULL, 0) == 0) {
        *step = (long)fl_tensor_scalar(value);
        printf("Restored from model.ckpt-%ld, resuming at step %ld\n", *step, *step);
    }
    fl_tensor_free(value);
    return 0;
    // [end:restore]
}

/* The shuffled training batches; NULL after printing why not. With
 * drop_remainder, every batch has exactly o->batch_size examples. */
static inline fl_dataset *open_train_set(const training_flags *o, const lab_data *d,
                                         bool drop_remainder)
{
    // [book:dataset]
    fl_dataset_options train_options = {.batch_size = o->batch_size,
                                        .epochs = o->train_steps > 0 ? 0 : o->epochs,
                                        .shuffle = true, .seed = o->seed, .prefetch = 2,
                                        .drop_remainder = drop_remainder};
    fl_dataset *train_set = fl_dataset_new(d->train_images, d->train_labels, &train_options);
    if (!train_set)
        fprintf(stderr, "%s: %s\n", o->program, fl_last_error());
    return train_set;
    // [end:dataset]
}

/* After a restart, skip the batches the earlier run already trained on, so
 * a resumed run sees the same data in the same order as an unbroken one. */
static inline void skip_trained_batches(fl_dataset *train_set, long step)
{
    const fl_tensor *images = NULL, *labels = NULL;
    for (long skipped = 0; skipped < step; skipped++)
        if (fl_dataset_next(train_set, &images, &labels) != 1)
            return;
}

/* --trace records steps 2 to 4 of this run (the first is slower while
 * buffers are allocated): on before the second step, written after the
 * fourth, or at the end of a shorter run. --print_stats measures from the
 * second step on too. */
static inline void trace_before_step(fl_session *s, const training_flags *o, long steps_done)
{
    if (o->trace_path && steps_done == 1)
        fl_session_set_tracing(s, true);
    if (o->print_stats && steps_done == 1)
        run_stats_steps_started();
}

static inline void write_trace(fl_session *s, const training_flags *o)
{
    fl_session_set_tracing(s, false);
    if (fl_session_write_trace(s, o->trace_path) != 0)
        fprintf(stderr, "%s: --trace: %s\n", o->program, fl_last_error());
}

/* "Step N with loss X (Y images/sec)": the speed counts the examples the
 * batches really held since the last line, so a batch larger than the data
 * (or a short last batch of an epoch) is not counted as a full one. */
static inline void log_progress(train_progress *p, float loss)
{
    double now = now_seconds(), images_per_sec = (double)p->images_since_log / (now - p->last_log_time);
    printf("Step %ld with loss %.6f (%.1f images/sec)\n", p->step, loss, images_per_sec);
    fflush(stdout);
    summarize_rates(p->step, images_per_sec);
    p->last_log_time = now;
    p->images_since_log = 0;
}

/* --warmup_steps: the rate of global step `step` rises linearly from
 * LR/N to LR over the first N steps, then stays at LR (Goyal et al. 2017).
 * Only a lab with training_flags.offers_warmup accepts the flag. */
static inline void warm_up(const training_flags *o, const train_nodes *t, long step)
{
    if (o->warmup_steps <= 0 || step > o->warmup_steps)
        return;
    float fraction = step < o->warmup_steps ? (float)(step + 1) / (float)o->warmup_steps : 1.0f;
    fl_optimizer_set_learning_rate(t->optimizer, o->learning_rate * fraction);
}

/* One update: feeds the batch, runs the train op and fetches the loss for
 * the progress line. Returns 0, or -1 with the session's error set. */
static inline int run_step(fl_session *s, const training_flags *o, const train_nodes *t,
                           const fl_tensor *images, const fl_tensor *labels, train_progress *p)
{
    // [book:step]
    fl_feed feeds[2] = {{t->image, images}, {t->label, labels}};
    fl_tensor *loss_value = NULL;
    if (fl_session_run(s, feeds, 2, &t->loss, 1, &loss_value, &t->train_op, 1) != 0)
        return -1;
    p->images_since_log += images->shape.dims[0];
    p->loss = fl_tensor_scalar(loss_value);
    fl_tensor_free(loss_value);
    summarize_step(s, p->step, p->loss);
    if (p->step % o->log_every == 0 || p->step == p->first_step)
        log_progress(p, p->loss);
    return 0;
    // [end:step]
}

/* The message of a step that failed in the session, the dataset or a save. */
static inline int step_failed(fl_session *s, const training_flags *o, long step)
{
    fprintf(stderr, "%s: step %ld: %s\n", o->program, step,
            fl_session_error(s)[0] ? fl_session_error(s) : fl_last_error());
    return 1;
}

/* Runs steps until total_steps updates have been made in all, or the
 * dataset's epochs are over; saves every --save_every steps. Returns 0, or
 * 1 after printing what went wrong. */
static inline int run_steps(fl_session *s, const training_flags *o, const train_nodes *t,
                            fl_dataset *train_set, long total_steps, train_progress *p)
{
    // [book:loop]
    const fl_tensor *images = NULL, *labels = NULL;
    while (p->step < total_steps) {
        int got = fl_dataset_next(train_set, &images, &labels);
        if (got == 0)
            return 0; /* the epochs are over */
        if (got < 0)
            return step_failed(s, o, p->step);
        trace_before_step(s, o, p->step - p->first_step);
        warm_up(o, t, p->step);
        if (run_step(s, o, t, images, labels, p) != 0)
            return step_failed(s, o, p->step);
        if (loss_not_finite(o->program, "", p->step, p->loss))
            return 1;
        p->step++;
        if (o->trace_path && p->step - p->first_step == 4)
            write_trace(s, o);
        if (o->checkpoint_dir && p->step % o->save_every == 0) {
            if (fl_session_save(s, o->checkpoint_dir, p->step) != 0)
                return step_failed(s, o, p->step);
            p->last_saved = p->step;
        }
    }
    return 0;
    // [end:loop]
}

/* After the last step: a checkpoint of it, unless one was just saved, and
 * the trace of a run shorter than 4 steps. Returns 0, or 1 after a message. */
static inline int finish_training(fl_session *s, const training_flags *o, const train_progress *p)
{
    if (o->checkpoint_dir && p->step != p->last_saved &&
        fl_session_save(s, o->checkpoint_dir, p->step) != 0) {
        fprintf(stderr, "%s: saving: %s\n", o->program, fl_last_error());
        return 1;
    }
    long steps_done = p->step - p->first_step;
    if (o->trace_path && steps_done > 0 && steps_done < 4)
        write_trace(s, o);
    return 0;
}

/* Trains until total_steps updates have been made in all (or the epochs are
 * over): resume, skip the batches already seen, run the steps, save the
 * last one. With drop_remainder, every batch has exactly o->batch_size
 * examples. Returns 0, or 1 after printing what went wrong. */
static inline int train(fl_session *s, const training_flags *o, const train_nodes *t,
                        const lab_data *d, long total_steps, bool drop_remainder)
{
    long step = 0;
    if (restore_latest(s, o, t, &step) != 0)
        return 1;
    fl_dataset *train_set = open_train_set(o, d, drop_remainder);
    if (!train_set)
        return 1;
    skip_trained_batches(train_set, step);
    train_progress p = {.step = step, .first_step = step, .last_saved = step,
                        .last_log_time = now_seconds()};
    int rc = run_steps(s, o, t, train_set, total_steps, &p);
    long measured = p.step - p.first_step - 1; /* from the second step on */
    if (rc == 0 && o->print_stats)
        print_run_stats(measured, measured * o->batch_size);
    if (rc == 0)
        rc = finish_training(s, o, &p);
    fl_dataset_free(train_set);
    return rc;
}

/* What every lab does after training: the test accuracy (of `accuracy`,
 * fed through the image and label placeholders) and the --graph file.
 * Returns 0, or 1 after printing what went wrong. */
static inline int report_test_accuracy(fl_session *s, const training_flags *o, fl_node *image, fl_node *label,
                                       fl_node *accuracy, const lab_data *d)
{
    double test_accuracy = 0;
    if (evaluate(s, image, label, accuracy, d->test_images, d->test_labels, o->batch_size, &test_accuracy) != 0) {
        fprintf(stderr, "%s: evaluating: %s\n", o->program, fl_session_error(s));
        return 1;
    }
    printf("Test accuracy: %.4f\n", test_accuracy);
    summarize_accuracy(test_accuracy);
    if (o->graph_path && fl_session_write_dot_with(s, o->graph_path, &o->graph) != 0) {
        fprintf(stderr, "%s: --graph: %s\n", o->program, fl_last_error());
        return 1;
    }
    return 0;
}

#endif
