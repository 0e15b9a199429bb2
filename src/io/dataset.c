/* dataset.c: the input pipeline: shuffle with a seed, batch, repeat, and
 * optionally make batches ahead on a thread. One producer function makes
 * every batch, with or without the thread, so both give the same batches.
 * uint8 images (bytes, a quarter of the memory) become float32 per batch. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* A batch buffer sized for a full batch; a last partial batch has a smaller
 * first dimension in its shapes. */
typedef struct {
    fl_tensor images;
    fl_tensor labels;
} batch_slot;

struct fl_dataset {
    const fl_tensor *images; /* borrowed */
    const fl_tensor *labels; /* borrowed */
    fl_dataset_options options;
    int examples;
    size_t image_bytes; /* one example's image */
    size_t label_bytes; /* one example's label */

    /* Producer state: touched only by whoever makes batches (the caller, or
     * the prefetch thread when there is one). */
    int *order;     /* the current epoch's permutation of example indices */
    uint64_t rng;   /* splitmix64 state */
    int epoch;      /* index of the epoch being handed out */
    int position;   /* next index into order */
    bool exhausted; /* every epoch has been handed out */

    /* The ring: `capacity` slots; `ready` batches wait from `head` on, and
     * the batch the caller holds, if any, sits just before head. */
    batch_slot *slots;
    int capacity;
    int head;
    int ready;
    bool held;
    bool finished; /* the producer has made its last batch */
    bool stop;     /* fl_dataset_free asks the producer to quit */

    bool threaded;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t batch_ready;
    pthread_cond_t slot_free;
};

/* splitmix64: tiny, seedable with any value (0 included), and good enough
 * for shuffling; the same seed gives the same sequence on every platform. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, bound): rejecting the low values that would make a plain
 * modulo favour small results. */
static uint64_t random_below(uint64_t *state, uint64_t bound)
{
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        uint64_t r = next_random(state);
        if (r >= threshold)
            return r % bound;
    }
}

/* Fisher-Yates over the previous epoch's order: still a uniform permutation. */
static void shuffle_order(fl_dataset *ds)
{
    for (int i = ds->examples - 1; i > 0; i--) {
        int j = (int)random_below(&ds->rng, (uint64_t)i + 1);
        int swap = ds->order[i];
        ds->order[i] = ds->order[j];
        ds->order[j] = swap;
    }
}

static void start_epoch(fl_dataset *ds)
{
    ds->position = 0;
    if (ds->options.shuffle)
        shuffle_order(ds);
}

/* Moves on to the next epoch when this one has no batch left; false when
 * every epoch is done. */
static bool advance_epoch_if_needed(fl_dataset *ds)
{
    int remaining = ds->examples - ds->position;
    bool epoch_over = remaining == 0 ||
                      (ds->options.drop_remainder && remaining < ds->options.batch_size);
    if (!epoch_over)
        return true;
    ds->epoch++;
    if (ds->options.epochs > 0 && ds->epoch >= ds->options.epochs)
        return false;
    start_epoch(ds);
    return true;
}

/* One example's image into a batch: copied, or from bytes to [0,1]. */
static void copy_image(const fl_dataset *ds, void *batch, size_t example, int i)
{
    const char *src = (const char *)ds->images->data + example * ds->image_bytes;
    if (ds->images->dtype != FL_UINT8) {
        memcpy((char *)batch + i * ds->image_bytes, src, ds->image_bytes);
        return;
    }
    const uint8_t *pixels = (const uint8_t *)src;
    float *out = (float *)batch + (size_t)i * ds->image_bytes; /* one pixel per byte */
    for (size_t p = 0; p < ds->image_bytes; p++)
        out[p] = (float)pixels[p] / 255.0f;
}

/* Fills slot with the next batch; 0 when there is none. Batches never span
 * two epochs, as with TensorFlow's shuffle().batch().repeat(). */
static int make_batch(fl_dataset *ds, batch_slot *slot)
{
    if (ds->exhausted || !advance_epoch_if_needed(ds)) {
        ds->exhausted = true;
        return 0;
    }
    int remaining = ds->examples - ds->position;
    int count = remaining < ds->options.batch_size ? remaining : ds->options.batch_size;
    const char *label_src = ds->labels->data;
    char *label_dst = slot->labels.data;
    for (int i = 0; i < count; i++) {
        size_t example = (size_t)ds->order[ds->position + i];
        copy_image(ds, slot->images.data, example, i);
        memcpy(label_dst + i * ds->label_bytes, label_src + example * ds->label_bytes,
               ds->label_bytes);
    }
    slot->images.shape.dims[0] = count;
    slot->labels.shape.dims[0] = count;
    ds->position += count;
    return 1;
}

static void *prefetch_main(void *arg)
{
    fl_dataset *ds = arg;
    for (;;) {
        pthread_mutex_lock(&ds->lock);
        while (!ds->stop && ds->ready + (ds->held ? 1 : 0) >= ds->capacity)
            pthread_cond_wait(&ds->slot_free, &ds->lock);
        if (ds->stop) {
            pthread_mutex_unlock(&ds->lock);
            return NULL;
        }
        /* The consumer only moves head and ready together, so this slot
         * stays ours while we fill it without the lock. */
        batch_slot *slot = &ds->slots[(ds->head + ds->ready) % ds->capacity];
        pthread_mutex_unlock(&ds->lock);

        int made = make_batch(ds, slot);

        pthread_mutex_lock(&ds->lock);
        if (made)
            ds->ready++;
        else
            ds->finished = true;
        pthread_cond_signal(&ds->batch_ready);
        pthread_mutex_unlock(&ds->lock);
        if (!made)
            return NULL;
    }
}

static bool same_first_axis(const fl_tensor *images, const fl_tensor *labels)
{
    return images->shape.rank >= 1 && labels->shape.rank >= 1 &&
           images->shape.dims[0] == labels->shape.dims[0];
}

static int check_arguments(const fl_tensor *images, const fl_tensor *labels,
                           const fl_dataset_options *options)
{
    char ibuf[64], lbuf[64];
    if (!images || !labels || !options) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_dataset_new: images, labels and options must all be given");
        return -1;
    }
    if (options->batch_size < 1) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_dataset_new: batch_size is %d; it must be at least 1",
                          options->batch_size);
        return -1;
    }
    if (options->prefetch < 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_dataset_new: prefetch is %d; use 0 for none or a count of batches",
                          options->prefetch);
        return -1;
    }
    if (images->shape.rank < 1 || !fl_shape_known(images->shape)) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_dataset_new: images shape %s needs a known first axis of examples",
                          fl_shape_format(images->shape, ibuf, sizeof ibuf));
        return -1;
    }
    if (labels->shape.rank != 1 || !fl_shape_known(labels->shape)) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "fl_dataset_new: labels must be rank 1 [N], one class per example; got %s",
                          fl_shape_format(labels->shape, lbuf, sizeof lbuf));
        return -1;
    }
    if (!same_first_axis(images, labels)) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "fl_dataset_new: images %s has %d examples but labels %s has %d; the first "
                          "axis is the example and must agree",
                          fl_shape_format(images->shape, ibuf, sizeof ibuf), images->shape.dims[0],
                          fl_shape_format(labels->shape, lbuf, sizeof lbuf), labels->shape.dims[0]);
        return -1;
    }
    if (images->shape.dims[0] == 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_dataset_new: there are no examples to make batches from");
        return -1;
    }
    /* Otherwise a dataset that repeats forever would loop without a batch. */
    if (options->drop_remainder && options->batch_size > images->shape.dims[0]) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_dataset_new: batch_size %d is more than the %d examples and "
                          "drop_remainder is set, so there would be no batch; lower batch_size",
                          options->batch_size, images->shape.dims[0]);
        return -1;
    }
    return 0;
}

static void batch_tensor_init(fl_tensor *out, const fl_tensor *like, fl_dtype dtype, int batch_size)
{
    out->dtype = dtype;
    out->shape = like->shape;
    out->shape.dims[0] = batch_size;
    out->data = fl_xcalloc((size_t)fl_shape_size(out->shape), fl_dtype_size(out->dtype));
}

static void allocate_slots(fl_dataset *ds)
{
    /* One slot for the batch the caller holds, `prefetch` more made ahead. */
    ds->capacity = ds->options.prefetch + 1;
    ds->slots = fl_xcalloc((size_t)ds->capacity, sizeof *ds->slots);
    for (int i = 0; i < ds->capacity; i++) {
        batch_slot *slot = &ds->slots[i];
        /* batches of bytes are made float32, what the graph's ops take */
        fl_dtype image_dtype = ds->images->dtype == FL_UINT8 ? FL_FLOAT32 : ds->images->dtype;
        batch_tensor_init(&slot->images, ds->images, image_dtype, ds->options.batch_size);
        batch_tensor_init(&slot->labels, ds->labels, ds->labels->dtype, ds->options.batch_size);
    }
}

static void free_slots(fl_dataset *ds)
{
    for (int i = 0; i < ds->capacity; i++) {
        free(ds->slots[i].images.data);
        free(ds->slots[i].labels.data);
    }
    free(ds->slots);
}

static int start_prefetch(fl_dataset *ds)
{
    pthread_mutex_init(&ds->lock, NULL);
    pthread_cond_init(&ds->batch_ready, NULL);
    pthread_cond_init(&ds->slot_free, NULL);
    if (pthread_create(&ds->thread, NULL, prefetch_main, ds) != 0) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "fl_dataset_new: cannot start the prefetch thread; try prefetch 0");
        return -1;
    }
    ds->threaded = true;
    return 0;
}

static void free_dataset_memory(fl_dataset *ds)
{
    if (ds->options.prefetch > 0) {
        pthread_cond_destroy(&ds->slot_free);
        pthread_cond_destroy(&ds->batch_ready);
        pthread_mutex_destroy(&ds->lock);
    }
    free_slots(ds);
    free(ds->order);
    free(ds);
}

fl_dataset *fl_dataset_new(const fl_tensor *images, const fl_tensor *labels,
                           const fl_dataset_options *options)
{
    if (check_arguments(images, labels, options) != 0)
        return NULL;
    fl_dataset *ds = fl_xcalloc(1, sizeof *ds);
    ds->images = images;
    ds->labels = labels;
    ds->options = *options;
    ds->examples = images->shape.dims[0];
    ds->image_bytes = fl_tensor_bytes(images) / (size_t)ds->examples;
    ds->label_bytes = fl_dtype_size(labels->dtype);
    ds->rng = options->seed;
    ds->order = fl_xmalloc((size_t)ds->examples * sizeof *ds->order);
    for (int i = 0; i < ds->examples; i++)
        ds->order[i] = i;
    start_epoch(ds);
    allocate_slots(ds);
    if (options->prefetch > 0 && start_prefetch(ds) != 0) {
        free_dataset_memory(ds);
        return NULL;
    }
    return ds;
}

static batch_slot *next_prefetched(fl_dataset *ds)
{
    pthread_mutex_lock(&ds->lock);
    if (ds->held) {
        ds->held = false; /* the caller's previous batch may now be overwritten */
        pthread_cond_signal(&ds->slot_free);
    }
    while (ds->ready == 0 && !ds->finished)
        pthread_cond_wait(&ds->batch_ready, &ds->lock);
    batch_slot *slot = NULL;
    if (ds->ready > 0) {
        slot = &ds->slots[ds->head];
        ds->head = (ds->head + 1) % ds->capacity;
        ds->ready--;
        ds->held = true;
    }
    pthread_mutex_unlock(&ds->lock);
    return slot;
}

int fl_dataset_next(fl_dataset *ds, const fl_tensor **images, const fl_tensor **labels)
{
    if (images)
        *images = NULL;
    if (labels)
        *labels = NULL;
    if (!ds || !images || !labels) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_dataset_next: the dataset, images and labels must all be given");
        return -1;
    }
    batch_slot *slot = NULL;
    if (ds->threaded)
        slot = next_prefetched(ds);
    else if (make_batch(ds, &ds->slots[0]))
        slot = &ds->slots[0];
    if (!slot)
        return 0;
    *images = &slot->images;
    *labels = &slot->labels;
    return 1;
}

void fl_dataset_free(fl_dataset *ds)
{
    if (!ds)
        return;
    if (ds->threaded) {
        pthread_mutex_lock(&ds->lock);
        ds->stop = true;
        pthread_cond_signal(&ds->slot_free);
        pthread_mutex_unlock(&ds->lock);
        pthread_join(ds->thread, NULL);
    }
    free_dataset_memory(ds);
}
