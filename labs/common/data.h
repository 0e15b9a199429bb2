/* data.h: the labs' training and test data, read from MNIST-format files.
 * load_data reads the first --max_examples of both splits, images kept as
 * bytes, so every lab starts from the same four tensors. */
#ifndef LABS_COMMON_DATA_H
#define LABS_COMMON_DATA_H

#include "flowlab.h"

typedef struct {
    fl_tensor *train_images, *train_labels; /* uint8 [N,28,28,1] (fl_dataset makes float32 batches), int32 [N] */
    fl_tensor *test_images, *test_labels;
} lab_data;

static inline void free_data(lab_data *d)
{
    fl_tensor_free(d->train_images);
    fl_tensor_free(d->train_labels);
    fl_tensor_free(d->test_images);
    fl_tensor_free(d->test_labels);
    *d = (lab_data){0};
}

/* Reads data_dir's "train" and "t10k" splits, only the first max_examples of
 * each (all when 0). Returns -1, with fl_last_error() naming the missing file and
 * the package that installs it, when they cannot be read. */
static inline int load_data(const char *data_dir, int max_examples, lab_data *d)
{
    // [book:data]
    *d = (lab_data){0};
    if (fl_mnist_load_bytes(data_dir, "train", max_examples, &d->train_images, &d->train_labels) != 0 ||
        fl_mnist_load_bytes(data_dir, "t10k", max_examples, &d->test_images, &d->test_labels) != 0) {
        free_data(d);
        return -1;
    }
    return 0;
    // [end:data]
}

#endif
