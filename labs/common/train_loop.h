/* train_loop.h: the training loop every lab runs: resume from the latest
 * checkpoint, batches from a shuffled dataset, one session run per step, a
 * progress line with images/sec, checkpoints and an optional Chrome trace;
 * then the test accuracy and the --graph file. Define PROGRAM before
 * including it; a lab gives it its own graph's nodes. */
#ifndef LABS_COMMON_TRAIN_LOOP_H
#define LABS_COMMON_TRAIN_LOOP_H

#include <stdio.h>

#include "flowlab.h"
#include "data.h"
#include "evaluate.h"
#include "flags.h"
#include "timing.h"

/* The nodes the loop runs: placeholders for one (global) batch, the loss it
 * prints, the train op and the global step that counts updates. */
typedef struct {
    fl_node *image, *label, *loss, *train_op, *global_step;
} train_nodes;

/* Trains until total_steps updates have been made in all (or the epochs are
 * over). With drop_remainder, every batch has exactly o->batch_size examples.
 * Returns 0, or 1 after printing what went wrong. */
static inline int train(fl_session *s, const training_flags *o, const train_nodes *t,
                        const lab_data *d, long total_steps, bool drop_remainder)
{
    // [book:restore]
    long step = 0; /* the global step: updates made so far, across restarts */
    if (o->checkpoint_dir) {
        int restored = fl_session_restore_latest(s, o->checkpoint_dir);
        if (restored < 0) {
            fprintf(stderr, PROGRAM ": --checkpoint_dir %s: %s\n", o->checkpoint_dir,
                    fl_last_error());
            return 1;
        }
        fl_tensor *value = NULL;
        if (restored == 1 && fl_session_run(s, NULL, 0, &t->global_step, 1, &value, NULL, 0) == 0) {
            step = (long)fl_tensor_scalar(value);
            printf("Restored from model.ckpt-%ld, resuming at step %ld\n", step, step);
        }
        fl_tensor_free(value);
    }
    // [end:restore]

    // [book:dataset]
    fl_dataset_options train_options = {.batch_size = o->batch_size,
                                        .epochs = o->train_steps > 0 ? 0 : o->epochs,
                                        .shuffle = true, .seed = o->seed, .prefetch = 2,
                                        .drop_remainder = drop_remainder};
    fl_dataset *train_set = fl_dataset_new(d->train_images, d->train_labels, &train_options);
    if (!train_set) {
        fprintf(stderr, PROGRAM ": %s\n", fl_last_error());
        return 1;
    }
    // [end:dataset]
    /* After a restart, skip the batches the earlier run already trained on, so
     * a resumed run sees the same data in the same order as an unbroken one. */
    const fl_tensor *batch_images = NULL, *batch_labels = NULL;
    for (long skipped = 0; skipped < step; skipped++)
        if (fl_dataset_next(train_set, &batch_images, &batch_labels) != 1)
            break;

    // [book:loop]
    int rc = 0;
    long first_step = step, last_logged = step, last_saved = step;
    double last_time = now_seconds();
    while (rc == 0 && step < total_steps) {
        int got = fl_dataset_next(train_set, &batch_images, &batch_labels);
        if (got != 1) {
            rc = got; /* 0: the epochs are over; -1: an error */
            break;
        }
        if (o->trace_path && step - first_step == 1)
            fl_session_set_tracing(s, true); /* trace steps 2 to 4 of this run */
        fl_feed feeds[2] = {{t->image, batch_images}, {t->label, batch_labels}};
        fl_tensor *loss_value = NULL;
        rc = fl_session_run(s, feeds, 2, &t->loss, 1, &loss_value, &t->train_op, 1);
        if (rc != 0)
            break;
        if (step % o->log_every == 0 || step == first_step) {
            double t = now_seconds();
            long images = (step + 1 - last_logged) * (long)o->batch_size;
            printf("Step %ld with loss %.6f (%.1f images/sec)\n", step,
                   fl_tensor_scalar(loss_value), (double)images / (t - last_time));
            fflush(stdout);
            last_time = t;
            last_logged = step + 1;
        }
        fl_tensor_free(loss_value);
        step++;
        if (o->trace_path && step - first_step == 4) {
            fl_session_set_tracing(s, false);
            if (fl_session_write_trace(s, o->trace_path) != 0)
                fprintf(stderr, PROGRAM ": --trace: %s\n", fl_last_error());
        }
        if (o->checkpoint_dir && step % o->save_every == 0) {
            rc = fl_session_save(s, o->checkpoint_dir, step);
            last_saved = step;
        }
    }
    // [end:loop]
    if (rc < 0) {
        fprintf(stderr, PROGRAM ": step %ld: %s\n", step,
                fl_session_error(s)[0] ? fl_session_error(s) : fl_last_error());
        fl_dataset_free(train_set);
        return 1;
    }
    if (o->checkpoint_dir && step != last_saved && fl_session_save(s, o->checkpoint_dir, step) != 0) {
        fprintf(stderr, PROGRAM ": saving: %s\n", fl_last_error());
        fl_dataset_free(train_set);
        return 1;
    }
    if (o->trace_path && step - first_step > 0 && step - first_step < 4) {
        fl_session_set_tracing(s, false); /* a run shorter than 4 steps */
        if (fl_session_write_trace(s, o->trace_path) != 0)
            fprintf(stderr, PROGRAM ": --trace: %s\n", fl_last_error());
    }
    fl_dataset_free(train_set);
    return 0;
}

/* What every lab does after training: the test accuracy (of `accuracy`,
 * fed through the image and label placeholders) and the --graph file.
 * Returns 0, or 1 after printing what went wrong. */
static inline int report_test_accuracy(fl_session *s, const training_flags *o, fl_node *image, fl_node *label,
                                       fl_node *accuracy, const lab_data *d)
{
    double test_accuracy = 0;
    if (evaluate(s, image, label, accuracy, d->test_images, d->test_labels, o->batch_size, &test_accuracy) != 0) {
        fprintf(stderr, PROGRAM ": evaluating: %s\n", fl_session_error(s));
        return 1;
    }
    printf("Test accuracy: %.4f\n", test_accuracy);
    if (o->graph_path && fl_session_write_dot(s, o->graph_path) != 0) {
        fprintf(stderr, PROGRAM ": --graph: %s\n", fl_last_error());
        return 1;
    }
    return 0;
}

#endif
