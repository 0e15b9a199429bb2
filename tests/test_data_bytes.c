/* test_data_bytes.c: images kept as bytes (issue 29's memory): fl_mnist_load_bytes
 * reads only the first examples asked for and keeps the images uint8, and
 * fl_dataset turns uint8 images into the same float32 batches fl_mnist_load's
 * floats give. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowlab.h"
#include "tap.h"

static char dir[64];

/* A tensor's bytes: one per uint8 element, four per float32 or int32. */
static size_t bytes_of(const fl_tensor *t)
{
    return (size_t)fl_shape_size(t->shape) * (t->dtype == FL_UINT8 ? 1 : 4);
}

static void put_u32(FILE *f, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    fwrite(b, 1, 4, f);
}

/* A split of n 2x3 images (pixel i of the file is i % 251) and n labels
 * (i % 10); `garbage` bytes of junk after each file's last example, which a
 * reader that stops at the first examples never sees. */
static void write_split(const char *split, int n, int garbage)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, split);
    FILE *f = fopen(path, "wb");
    put_u32(f, 0x803);
    put_u32(f, (uint32_t)n);
    put_u32(f, 2);
    put_u32(f, 3);
    for (int i = 0; i < n * 6 + garbage; i++)
        fputc(i < n * 6 ? i % 251 : 0xee, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, split);
    f = fopen(path, "wb");
    put_u32(f, 0x801);
    put_u32(f, (uint32_t)n);
    for (int i = 0; i < n + garbage; i++)
        fputc(i < n ? i % 10 : 0xee, f);
    fclose(f);
}

static void test_load_bytes(void)
{
    fl_tensor *images = NULL, *labels = NULL;
    write_split("whole", 50, 0);
    ok(fl_mnist_load_bytes(dir, "whole", 0, &images, &labels) == 0, "max_examples 0 loads the whole split");
    ok(images && images->dtype == FL_UINT8 && images->shape.dims[0] == 50 && images->shape.rank == 4 &&
           images->shape.dims[3] == 1,
       "images are uint8 [N,rows,cols,1]");
    ok(images && ((uint8_t *)images->data)[299] == 299 % 251, "the pixels are the file's bytes");
    fl_tensor_free(images);
    fl_tensor_free(labels);

    /* Junk after the first 20 examples and a header that says 50: a reader
     * that went past the 20 would fail on the extra bytes at the end. */
    write_split("head", 50, 1000);
    if (!ok(fl_mnist_load_bytes(dir, "head", 20, &images, &labels) == 0, "the first 20 of a longer file load"))
        diag("%s", fl_last_error());
    ok(images && images->shape.dims[0] == 20 && labels->shape.dims[0] == 20, "20 images and 20 labels");
    ok(labels && fl_tensor_ints(labels)[19] == 9, "labels are int32 classes");
    fl_tensor_free(images);
    fl_tensor_free(labels);
    ok(fl_mnist_load(dir, "head", &images, &labels) == -1, "reading the whole file still checks its end");
    contains(fl_last_error(), "more bytes follow", "and says bytes follow what the header describes");
    ok(fl_mnist_load_bytes(dir, "missing", 5, &images, &labels) == -1 && !images && !labels,
       "a missing split fails and leaves the outputs NULL");
}

/* The dataset's batches from uint8 images equal those from float32 ones. */
static void test_dataset_from_bytes(void)
{
    write_split("pair", 30, 0);
    fl_tensor *bytes = NULL, *byte_labels = NULL, *floats = NULL, *float_labels = NULL;
    if (fl_mnist_load_bytes(dir, "pair", 0, &bytes, &byte_labels) != 0 ||
        fl_mnist_load(dir, "pair", &floats, &float_labels) != 0) {
        ok(false, "the split loads both ways: %s", fl_last_error());
        return;
    }
    fl_dataset_options options = {.batch_size = 8, .epochs = 2, .shuffle = true, .seed = 7, .prefetch = 2};
    fl_dataset *a = fl_dataset_new(bytes, byte_labels, &options);
    fl_dataset *b = fl_dataset_new(floats, float_labels, &options);
    const fl_tensor *ai, *al, *bi, *bl;
    int batches = 0;
    bool same = a && b, all_float = true;
    while (same && fl_dataset_next(a, &ai, &al) == 1 && fl_dataset_next(b, &bi, &bl) == 1) {
        all_float &= ai->dtype == FL_FLOAT32;
        same = bytes_of(ai) == bytes_of(bi) && memcmp(ai->data, bi->data, bytes_of(ai)) == 0 &&
               memcmp(al->data, bl->data, bytes_of(al)) == 0;
        batches++;
    }
    ok(same && batches == 8, "uint8 images give the float32 images' batches (%d of 8 batches compared)", batches);
    ok(all_float, "the batches are float32");
    fl_dataset_free(a);
    fl_dataset_free(b);
    fl_tensor_free(bytes);
    fl_tensor_free(byte_labels);
    fl_tensor_free(floats);
    fl_tensor_free(float_labels);
}

static void test_uint8_placeholder(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_UINT8, fl_shape_make(2, -1, 6), "pixels");
    ok(!x && fl_graph_error(g), "a uint8 placeholder is refused");
    contains(fl_graph_error(g) ? fl_graph_error(g) : "", "through fl_dataset", "the message says how to feed bytes");
    fl_graph_free(g);
}

static void remove_dir(void)
{
    const char *names[] = {"whole", "head", "pair"};
    char path[160];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, names[i]);
        unlink(path);
        snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/flowlab-bytes-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    test_load_bytes();
    test_dataset_from_bytes();
    test_uint8_placeholder();
    remove_dir();
    return done_testing();
}
