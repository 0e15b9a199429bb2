/* evaluate.h: test-set accuracy, the number every lab ends with.
 * It runs an accuracy node over the test split in batches and weights each
 * batch by its size, so a smaller last batch counts for what it holds. */
#ifndef LABS_COMMON_EVALUATE_H
#define LABS_COMMON_EVALUATE_H

#include <stdio.h>

#include "flowlab.h"

/* The fraction of (images, labels) that `accuracy` (fed through the image
 * and label placeholders) gets right, in *out; -1 if a run fails. */
static inline int evaluate(fl_session *s, fl_node *image, fl_node *label, fl_node *accuracy,
                    const fl_tensor *images, const fl_tensor *labels, int batch_size, double *out)
{
    // [book:evaluate]
    fl_dataset_options test_options = {.batch_size = batch_size, .epochs = 1, .prefetch = 2};
    fl_dataset *test_set = fl_dataset_new(images, labels, &test_options);
    const fl_tensor *batch_images = NULL, *batch_labels = NULL;
    double correct_total = 0;
    long seen = 0;
    int rc = test_set ? 0 : -1;
    while (rc == 0 && fl_dataset_next(test_set, &batch_images, &batch_labels) == 1) {
        fl_feed feeds[2] = {{image, batch_images}, {label, batch_labels}};
        fl_tensor *value = NULL;
        rc = fl_session_run(s, feeds, 2, &accuracy, 1, &value, NULL, 0);
        int n = batch_labels->shape.dims[0]; /* the last batch may be smaller */
        correct_total += rc == 0 ? (double)fl_tensor_scalar(value) * n : 0.0;
        seen += n;
        fl_tensor_free(value);
    }
    fl_dataset_free(test_set);
    *out = seen ? correct_total / (double)seen : 0.0;
    return rc;
    // [end:evaluate]
}

#endif
