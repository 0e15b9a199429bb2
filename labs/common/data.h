/* data.h: the labs' training and test data, read from MNIST-format files.
 * load_data reads both splits and keeps the first --max_examples of each, so
 * every lab starts from the same four tensors. */
#ifndef LABS_COMMON_DATA_H
#define LABS_COMMON_DATA_H

#include <string.h>

#include "flowlab.h"

typedef struct {
    fl_tensor *train_images, *train_labels; /* float32 [N,28,28,1], int32 [N] */
    fl_tensor *test_images, *test_labels;
} lab_data;

/* The first n examples of a split (or all of it): a new tensor. */
static inline fl_tensor *first_examples(const fl_tensor *t, int n)
{
    fl_shape shape = t->shape;
    if (n > 0 && n < shape.dims[0])
        shape.dims[0] = n;
    fl_tensor *out = fl_tensor_new(t->dtype, shape);
    memcpy(out->data, t->data, (size_t)fl_shape_size(shape) * 4); /* float32 and int32: 4 bytes */
    return out;
}

static inline void free_data(lab_data *d)
{
    fl_tensor_free(d->train_images);
    fl_tensor_free(d->train_labels);
    fl_tensor_free(d->test_images);
    fl_tensor_free(d->test_labels);
    *d = (lab_data){0};
}

/* Reads data_dir's "train" and "t10k" splits, keeping max_examples of each
 * (all when 0). Returns -1, with fl_last_error() naming the missing file and
 * the package that installs it, when they cannot be read. */
static inline int load_data(const char *data_dir, int max_examples, lab_data *d)
{
    // [book:data]
    lab_data all = {0};
    if (fl_mnist_load(data_dir, "train", &all.train_images, &all.train_labels) != 0 ||
        fl_mnist_load(data_dir, "t10k", &all.test_images, &all.test_labels) != 0) {
        free_data(&all);
        return -1;
    }
    d->train_images = first_examples(all.train_images, max_examples);
    d->train_labels = first_examples(all.train_labels, max_examples);
    d->test_images = first_examples(all.test_images, max_examples);
    d->test_labels = first_examples(all.test_labels, max_examples);
    free_data(&all);
    return 0;
    // [end:data]
}

#endif
