/* summary.c: the values a FileWriter records, TensorFlow's Summary protos:
 * a scalar (simple_value) and a histogram (HistogramProto), each one Event
 * at a step. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "summary_internal.h"

#define HISTOGRAM_BUCKETS 30 /* as tf.summary.histogram's default */

/* Wraps one Summary.Value into an Event at step and writes it. */
static int write_value(fl_summary_file_writer *w, Tensorflow__Summary__Value *value, long step)
{
    Tensorflow__Summary summary = TENSORFLOW__SUMMARY__INIT;
    Tensorflow__Summary__Value *values[] = {value};
    summary.n_value = 1;
    summary.value = values;
    Tensorflow__Event event = TENSORFLOW__EVENT__INIT;
    event.step = step;
    event.what_case = TENSORFLOW__EVENT__WHAT_SUMMARY;
    event.summary = &summary;
    return fl_summary_write_event(w, &event);
}

static int check_args(const fl_summary_file_writer *w, const char *tag, const char *who)
{
    if (w && tag && *tag)
        return 0;
    fl_set_error_code(FL_INVALID_ARGUMENT, "%s: %s", who, w ? "no tag given" : "no writer (was --log_dir given?)");
    return -1;
}

int fl_summary_add_scalar(fl_summary_file_writer *w, const char *tag, double value, long step)
{
    if (check_args(w, tag, "fl_summary_add_scalar") != 0)
        return -1;
    Tensorflow__Summary__Value v = TENSORFLOW__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
    v.simple_value = (float)value;
    return write_value(w, &v, step);
}

/* Counts, sum and sum of squares of the values, and their range. */
static void fill_moments(Tensorflow__HistogramProto *h, const float *x, size_t n)
{
    h->min = DBL_MAX;
    h->max = -DBL_MAX;
    h->num = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            continue; /* a diverged weight: counted nowhere rather than breaking the buckets */
        h->num += 1;
        h->min = fmin(h->min, x[i]);
        h->max = fmax(h->max, x[i]);
        h->sum += x[i];
        h->sum_squares += (double)x[i] * x[i];
    }
}

/* Bucket i holds the values up to limit[i]; every bucket has the same
 * width, and one bucket serves a tensor whose values are all equal. */
static void fill_buckets(Tensorflow__HistogramProto *h, const float *x, size_t n, double *limits, double *counts)
{
    double width = (h->max - h->min) / HISTOGRAM_BUCKETS;
    size_t buckets = width > 0 ? HISTOGRAM_BUCKETS : 1;
    for (size_t b = 0; b < buckets; b++)
        limits[b] = b + 1 == buckets ? h->max : h->min + width * (double)(b + 1);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            continue;
        size_t b = width > 0 ? (size_t)((x[i] - h->min) / width) : 0;
        counts[b < buckets ? b : buckets - 1] += 1;
    }
    h->n_bucket_limit = h->n_bucket = buckets;
    h->bucket_limit = limits;
    h->bucket = counts;
}

int fl_summary_add_histogram(fl_summary_file_writer *w, const char *tag, const fl_tensor *values, long step)
{
    if (check_args(w, tag, "fl_summary_add_histogram") != 0)
        return -1;
    const float *x = fl_tensor_floats(values);
    size_t n = values ? (size_t)fl_shape_size(values->shape) : 0;
    if (!x || n == 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_summary_add_histogram: %s: needs a float32 tensor with values",
                          tag);
        return -1;
    }
    Tensorflow__HistogramProto h = TENSORFLOW__HISTOGRAM_PROTO__INIT;
    double limits[HISTOGRAM_BUCKETS] = {0}, counts[HISTOGRAM_BUCKETS] = {0};
    fill_moments(&h, x, n);
    if (h.num == 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_summary_add_histogram: %s: no finite value (did training diverge?)",
                          tag);
        return -1;
    }
    fill_buckets(&h, x, n, limits, counts);
    Tensorflow__Summary__Value v = TENSORFLOW__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_HISTO;
    v.histo = &h;
    return write_value(w, &v, step);
}
