/* test_data.c: IDX reading (plain and gzip), fl_mnist_load's messages, and
 * the dataset pipeline: batching, epochs, shuffling, prefetch. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "flowlab.h"
#include "tap.h"

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void write_bytes(const char *path, bool gzip, const void *data, size_t len)
{
    if (gzip) {
        gzFile file = gzopen(path, "wb");
        if (!file || gzwrite(file, data, (unsigned)len) != (int)len || gzclose(file) != Z_OK) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(2);
        }
        return;
    }
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(data, 1, len, file) != len || fclose(file) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

/* Writes magic, dims and then payload_len bytes where byte i is (i * 7 + 3) % 256. */
static void write_idx(const char *name, bool gzip, uint32_t magic, const uint32_t *dims,
                      int rank, size_t payload_len)
{
    size_t header_len = 4 + 4 * (size_t)rank;
    unsigned char *buf = malloc(header_len + payload_len);
    put_u32(buf, magic);
    for (int i = 0; i < rank; i++)
        put_u32(buf + 4 + 4 * i, dims[i]);
    for (size_t i = 0; i < payload_len; i++)
        buf[header_len + i] = (unsigned char)((i * 7 + 3) % 256);
    write_bytes(tmp_path(name), gzip, buf, header_len + payload_len);
    free(buf);
}

static unsigned char *read_whole_file(const char *path, size_t *len)
{
    FILE *file = fopen(path, "rb");
    fseek(file, 0, SEEK_END);
    *len = (size_t)ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *buf = malloc(*len);
    if (fread(buf, 1, *len, file) != *len)
        exit(2);
    fclose(file);
    return buf;
}

static bool payload_matches(const uint8_t *bytes, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (bytes[i] != (uint8_t)((i * 7 + 3) % 256))
            return false;
    return true;
}

static void remove_tmpdir(void)
{
    DIR *dir = opendir(tmpdir);
    if (!dir)
        return;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL)
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0)
            unlink(tmp_path(entry->d_name));
    closedir(dir);
    rmdir(tmpdir);
}

/* Expected message for path + suffix, built the way fl_set_error would. */
static const char *message(const char *name, const char *suffix)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s%s", tmp_path(name), suffix);
    return buf;
}

static void test_idx_read(void)
{
    uint32_t image_dims[3] = {3, 2, 2};
    write_idx("plain-images", false, 0x00000803, image_dims, 3, 12);
    fl_shape shape;
    uint8_t *bytes = NULL;
    ok(fl_idx_read(tmp_path("plain-images"), &shape, &bytes) == 0, "plain rank-3 IDX file reads");
    ok(shape.rank == 3 && shape.dims[0] == 3 && shape.dims[1] == 2 && shape.dims[2] == 2,
       "its shape is [3,2,2]");
    ok(bytes && payload_matches(bytes, 12), "its bytes are the ones written");
    free(bytes);

    uint32_t label_dims[1] = {5};
    write_idx("gz-labels.gz", true, 0x00000801, label_dims, 1, 5);
    bytes = NULL;
    ok(fl_idx_read(tmp_path("gz-labels.gz"), &shape, &bytes) == 0, "gzipped rank-1 IDX file reads");
    ok(shape.rank == 1 && shape.dims[0] == 5, "its shape is [5]");
    ok(bytes && payload_matches(bytes, 5), "its bytes are the ones written");
    free(bytes);

    uint32_t big_dims[3] = {300, 28, 28};
    write_idx("big.gz", true, 0x00000803, big_dims, 3, 300 * 28 * 28);
    bytes = NULL;
    ok(fl_idx_read(tmp_path("big.gz"), &shape, &bytes) == 0 && payload_matches(bytes, 300 * 784),
       "a larger gzipped file reads back byte for byte");
    free(bytes);
}

static void test_idx_errors(void)
{
    fl_shape shape;
    uint8_t *bytes = (uint8_t *)&shape;

    ok(fl_idx_read(tmp_path("absent"), &shape, &bytes) == -1 && bytes == NULL,
       "a missing file fails and leaves bytes NULL");
    is_string(fl_last_error(),
              message("absent", ": no such file; install Debian's dataset-fashion-mnist "
                                "(apt-get install dataset-fashion-mnist) or pass --data_dir"),
              "missing file message");

    write_bytes(tmp_path("empty"), false, "", 0);
    ok(fl_idx_read(tmp_path("empty"), &shape, &bytes) == -1, "an empty file fails");
    is_string(fl_last_error(),
              message("empty", ": not an IDX file (only 0 bytes, too short for the 4-byte magic); "
                               "is it an MNIST-format file?"),
              "empty file message");

    write_bytes(tmp_path("hello"), false, "hello world", 11);
    ok(fl_idx_read(tmp_path("hello"), &shape, &bytes) == -1, "a text file fails");
    is_string(fl_last_error(),
              message("hello", ": not an IDX file (magic 0x68656c6c, expected 0x00000801 or "
                               "0x00000803); is it an MNIST-format file?"),
              "wrong magic message");

    uint32_t dims[3] = {2, 2, 2};
    write_idx("floats", false, 0x00000d03, dims, 3, 8);
    ok(fl_idx_read(tmp_path("floats"), &shape, &bytes) == -1, "an IDX file of floats fails");
    is_string(fl_last_error(),
              message("floats", ": IDX data type 0x0d (magic 0x00000d03) is not unsigned bytes "
                                "(0x08); flowlab reads only byte IDX files such as MNIST's"),
              "wrong data type message");

    write_idx("rank2", false, 0x00000802, dims, 2, 4);
    ok(fl_idx_read(tmp_path("rank2"), &shape, &bytes) == -1, "a rank-2 IDX file fails");
    contains(fl_last_error(), "IDX file of rank 2 (magic 0x00000802", "rank 2 is named");

    write_bytes(tmp_path("short-header"), false, "\0\0\x08\x03\0\0\0\x02\0\0", 10);
    ok(fl_idx_read(tmp_path("short-header"), &shape, &bytes) == -1, "a cut header fails");
    is_string(fl_last_error(),
              message("short-header", ": truncated: the header ends after 10 of its 16 bytes; "
                                      "the file is incomplete, fetch it again"),
              "cut header message");

    uint32_t four_images[3] = {4, 2, 3};
    write_idx("cut-images.gz", true, 0x00000803, four_images, 3, 6 * 2 + 5);
    ok(fl_idx_read(tmp_path("cut-images.gz"), &shape, &bytes) == -1, "missing pixels fail");
    is_string(fl_last_error(),
              message("cut-images.gz", ": truncated: header says 4 images of 2x3 but the file "
                                       "ends after 2 of them; the file is incomplete, fetch it "
                                       "again"),
              "truncated images message");

    uint32_t six_labels[1] = {6};
    write_idx("cut-labels", false, 0x00000801, six_labels, 1, 5);
    ok(fl_idx_read(tmp_path("cut-labels"), &shape, &bytes) == -1, "missing labels fail");
    contains(fl_last_error(), "truncated: header says 6 labels but the file ends after 5 of them",
             "truncated labels message");

    write_idx("long-labels", false, 0x00000801, six_labels, 1, 7);
    ok(fl_idx_read(tmp_path("long-labels"), &shape, &bytes) == -1, "extra bytes fail");
    is_string(fl_last_error(),
              message("long-labels", ": more bytes follow the 6 labels its header describes; "
                                     "is it the right file?"),
              "trailing bytes message");

    /* A header claiming far more than the file holds must not try to allocate it. */
    uint32_t huge[3] = {2000000000, 2000000000, 2};
    write_idx("huge", false, 0x00000803, huge, 3, 10);
    ok(fl_idx_read(tmp_path("huge"), &shape, &bytes) == -1, "an absurd header fails quietly");
    contains(fl_last_error(), "the header describes more than", "absurd header message");

    uint32_t many[3] = {1000000, 100, 100};
    write_idx("many", false, 0x00000803, many, 3, 10);
    ok(fl_idx_read(tmp_path("many"), &shape, &bytes) == -1, "a large header on a tiny file fails");
    contains(fl_last_error(), "truncated: header says 1000000 images of 100x100 but the file ends "
                              "after 0 of them",
             "large header message");

    /* A gzip stream cut short: zlib notices, and so must we. */
    uint32_t ten_images[3] = {10, 28, 28};
    write_idx("whole.gz", true, 0x00000803, ten_images, 3, 10 * 784);
    size_t len;
    unsigned char *gz = read_whole_file(tmp_path("whole.gz"), &len);
    write_bytes(tmp_path("cut-stream.gz"), false, gz, len - 6);
    ok(fl_idx_read(tmp_path("cut-stream.gz"), &shape, &bytes) == -1,
       "a gzip stream without its trailer fails");
    is_string(fl_last_error(),
              message("cut-stream.gz", ": the compressed data ends early (unexpected end of "
                                       "file); fetch the file again"),
              "missing trailer message");
    write_bytes(tmp_path("half-stream.gz"), false, gz, len / 2);
    ok(fl_idx_read(tmp_path("half-stream.gz"), &shape, &bytes) == -1,
       "half a gzip stream fails");
    contains(fl_last_error(), "truncated: header says 10 images of 28x28 but the file ends after",
             "half stream message");

    /* A corrupted byte in the middle: the CRC (or inflate) catches it. */
    gz[len / 2] ^= 0x55;
    write_bytes(tmp_path("corrupt.gz"), false, gz, len);
    ok(fl_idx_read(tmp_path("corrupt.gz"), &shape, &bytes) == -1, "a corrupt gzip stream fails");
    /* zlib's own words depend on which byte broke, so check only ours. */
    contains(fl_last_error(), message("corrupt.gz", ": cannot read: "), "corrupt gzip message");
    gz[len / 2] ^= 0x55;

    /* The same gzip bytes gzipped again, as some downloads arrive. */
    write_bytes(tmp_path("twice.gz"), true, gz, len);
    free(gz);
    ok(fl_idx_read(tmp_path("twice.gz"), &shape, &bytes) == -1, "a doubly gzipped file fails");
    contains(fl_last_error(), "gzip-compressed twice; gunzip it once", "and says how to fix it");

    ok(fl_idx_read(tmpdir, &shape, &bytes) == -1, "a directory fails");
    char want[256];
    snprintf(want, sizeof want, "%s: cannot read: ", tmpdir);
    contains(fl_last_error(), want, "directory message names it, without blaming the data");
    ok(strstr(fl_last_error(), "damaged") == NULL, "and does not call it damaged");
}

static void write_split(const char *split, int images, int labels, bool gzip_images,
                        bool gzip_labels)
{
    char name[128];
    uint32_t image_dims[3] = {(uint32_t)images, 2, 3};
    uint32_t label_dims[1] = {(uint32_t)labels};
    snprintf(name, sizeof name, "%s-images-idx3-ubyte%s", split, gzip_images ? ".gz" : "");
    write_idx(name, gzip_images, 0x00000803, image_dims, 3, (size_t)images * 6);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte%s", split, gzip_labels ? ".gz" : "");
    write_idx(name, gzip_labels, 0x00000801, label_dims, 1, (size_t)labels);
}

static void test_mnist_load(void)
{
    fl_tensor *images = NULL, *labels = NULL;
    write_split("mini", 4, 4, false, true);
    ok(fl_mnist_load(tmpdir, "mini", &images, &labels) == 0,
       "loads plain images beside gzipped labels");
    char buf[64];
    is_string(fl_shape_format(images->shape, buf, sizeof buf), "[4,2,3,1]", "images are [N,rows,cols,1]");
    is_string(fl_shape_format(labels->shape, buf, sizeof buf), "[4]", "labels are [N]");
    ok(images->dtype == FL_FLOAT32 && labels->dtype == FL_INT32, "float32 images, int32 labels");
    bool pixels_right = true;
    for (int i = 0; i < 24; i++)
        pixels_right &= fl_tensor_floats(images)[i] == (float)((i * 7 + 3) % 256) / 255.0f;
    ok(pixels_right, "pixels are bytes / 255");
    ok(fl_tensor_ints(labels)[3] == (3 * 7 + 3), "labels are the bytes");
    fl_tensor_free(images);
    fl_tensor_free(labels);

    ok(fl_mnist_load(tmpdir, "train", &images, &labels) == -1 && !images && !labels,
       "a missing split fails and leaves the outputs NULL");
    is_string(fl_last_error(),
              message("train-images-idx3-ubyte.gz",
                      ": no such file; install Debian's dataset-fashion-mnist (apt-get install "
                      "dataset-fashion-mnist) or pass --data_dir"),
              "missing split message");

    write_split("odd", 3, 4, true, true);
    ok(fl_mnist_load(tmpdir, "odd", &images, &labels) == -1, "mismatched counts fail");
    char want[2048];
    snprintf(want, sizeof want,
             "%s/odd-images-idx3-ubyte.gz has 3 images but %s/odd-labels-idx1-ubyte.gz has 4 "
             "labels; both files must come from the same split",
             tmpdir, tmpdir);
    is_string(fl_last_error(), want, "mismatched counts message");

    /* Labels where the images should be. */
    uint32_t label_dims[1] = {3};
    write_idx("swap-images-idx3-ubyte.gz", true, 0x00000801, label_dims, 1, 3);
    write_idx("swap-labels-idx1-ubyte.gz", true, 0x00000801, label_dims, 1, 3);
    ok(fl_mnist_load(tmpdir, "swap", &images, &labels) == -1, "a labels file as images fails");
    is_string(fl_last_error(),
              message("swap-images-idx3-ubyte.gz",
                      ": IDX file of rank 1 (magic 0x00000801, expected 0x00000803); are the "
                      "images and labels files swapped?"),
              "swapped files message");

    write_bytes(tmp_path("junk-images-idx3-ubyte.gz"), true, "\x1f\x8b\x08\x08junk", 8);
    ok(fl_mnist_load(tmpdir, "junk", &images, &labels) == -1, "a junk images file fails");
    contains(fl_last_error(), "junk-images-idx3-ubyte.gz: not an IDX file (magic 0x1f8b0808, "
                              "expected 0x00000803)",
             "junk images message names the expected magic");
}

/* ------------------------------------------------------------------------
 * Dataset. Example i has label i and pixels i*4 .. i*4+3.
 * ------------------------------------------------------------------------ */
static fl_tensor *example_images, *example_labels;

static void make_examples(int n)
{
    fl_tensor_free(example_images);
    fl_tensor_free(example_labels);
    example_images = fl_tensor_new(FL_FLOAT32, fl_shape_make(4, n, 2, 2, 1));
    example_labels = fl_tensor_new(FL_INT32, fl_shape_make(1, n));
    for (int i = 0; i < n; i++) {
        fl_tensor_ints(example_labels)[i] = i;
        for (int k = 0; k < 4; k++)
            fl_tensor_floats(example_images)[i * 4 + k] = (float)(i * 4 + k);
    }
}

static fl_dataset_options options_of(int batch_size, int epochs, bool shuffle, uint64_t seed,
                                     bool drop_remainder, int prefetch)
{
    fl_dataset_options options = {batch_size, epochs, shuffle, seed, drop_remainder, prefetch};
    return options;
}

static bool batch_consistent(const fl_tensor *images, const fl_tensor *labels)
{
    int n = labels->shape.dims[0];
    if (images->shape.rank != 4 || images->shape.dims[0] != n || images->shape.dims[1] != 2)
        return false;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            if (fl_tensor_floats(images)[i * 4 + k] != (float)(fl_tensor_ints(labels)[i] * 4 + k))
                return false;
    return true;
}

/* Runs a dataset to the end (or max_batches), recording batch sizes and labels. */
typedef struct {
    int batches;
    int sizes[256];
    int labels[4096];
    int label_count;
    bool consistent;
} run_record;

static run_record run_dataset(fl_dataset_options options, int max_batches)
{
    run_record record = {.consistent = true};
    fl_dataset *ds = fl_dataset_new(example_images, example_labels, &options);
    if (!ds) {
        record.consistent = false;
        return record;
    }
    const fl_tensor *images, *labels;
    while (record.batches < max_batches && fl_dataset_next(ds, &images, &labels) == 1) {
        int n = labels->shape.dims[0];
        if (record.batches < 256)
            record.sizes[record.batches] = n;
        for (int i = 0; i < n && record.label_count < 4096; i++)
            record.labels[record.label_count++] = fl_tensor_ints(labels)[i];
        record.consistent &= batch_consistent(images, labels);
        record.batches++;
    }
    fl_dataset_free(ds);
    return record;
}

static void test_batching(void)
{
    make_examples(10);
    fl_dataset *ds = fl_dataset_new(example_images, example_labels, &(fl_dataset_options){.batch_size = 4, .epochs = 1});
    const fl_tensor *images, *labels;
    char buf[64];
    ok(fl_dataset_next(ds, &images, &labels) == 1, "first batch");
    is_string(fl_shape_format(images->shape, buf, sizeof buf), "[4,2,2,1]", "image batch shape");
    is_string(fl_shape_format(labels->shape, buf, sizeof buf), "[4]", "label batch shape");
    ok(fl_tensor_ints(labels)[0] == 0 && fl_tensor_ints(labels)[3] == 3 &&
           batch_consistent(images, labels),
       "unshuffled: examples 0..3 in order, images beside their labels");
    fl_dataset_next(ds, &images, &labels);
    ok(fl_dataset_next(ds, &images, &labels) == 1, "third batch");
    is_string(fl_shape_format(images->shape, buf, sizeof buf), "[2,2,2,1]",
              "the last partial batch is kept");
    ok(fl_tensor_ints(labels)[1] == 9, "and ends with example 9");
    ok(fl_dataset_next(ds, &images, &labels) == 0 && images == NULL, "then the data is done");
    ok(fl_dataset_next(ds, &images, &labels) == 0, "and stays done");
    fl_dataset_free(ds);

    run_record r = run_dataset(options_of(4, 1, false, 0, true, 0), 1000);
    ok(r.batches == 2 && r.sizes[1] == 4, "drop_remainder drops the partial batch");
    r = run_dataset(options_of(4, 3, false, 0, false, 0), 1000);
    ok(r.batches == 9 && r.sizes[2] == 2 && r.sizes[5] == 2 && r.label_count == 30,
       "3 epochs of 10 in batches of 4: 9 batches, each epoch ending partial");
    r = run_dataset(options_of(4, 3, false, 0, true, 0), 1000);
    ok(r.batches == 6, "3 epochs with drop_remainder: 6 batches");
    r = run_dataset(options_of(5, 2, false, 0, false, 0), 1000);
    ok(r.batches == 4 && r.sizes[1] == 5, "an exact multiple has no partial batch");
    r = run_dataset(options_of(3, 0, true, 7, false, 0), 500);
    ok(r.batches == 500 && r.consistent, "epochs 0 repeats forever");
    r = run_dataset(options_of(3, -1, false, 0, false, 2), 300);
    ok(r.batches == 300 && r.consistent, "negative epochs repeat forever, prefetched too");
}

static bool each_once_per_epoch(const run_record *r, int n, int epochs)
{
    if (r->label_count != n * epochs)
        return false;
    for (int e = 0; e < epochs; e++) {
        int seen[1000] = {0};
        for (int i = 0; i < n; i++) {
            int label = r->labels[e * n + i];
            if (label < 0 || label >= n || seen[label]++)
                return false;
        }
    }
    return true;
}

static void test_shuffle(void)
{
    make_examples(100);
    run_record a = run_dataset(options_of(7, 3, true, 42, false, 0), 1000);
    ok(a.consistent, "shuffled batches keep images beside their labels");
    ok(each_once_per_epoch(&a, 100, 3), "every example appears exactly once per epoch");
    bool in_order = true;
    for (int i = 0; i < 100; i++)
        in_order &= a.labels[i] == i;
    ok(!in_order, "the first epoch is shuffled");
    ok(memcmp(a.labels, a.labels + 100, 100 * sizeof(int)) != 0, "each epoch is reshuffled");

    run_record b = run_dataset(options_of(7, 3, true, 42, false, 0), 1000);
    ok(memcmp(a.labels, b.labels, sizeof a.labels) == 0, "the same seed gives the same order");
    run_record c = run_dataset(options_of(7, 3, true, 43, false, 0), 1000);
    ok(memcmp(a.labels, c.labels, 300 * sizeof(int)) != 0, "another seed another order");
    run_record d = run_dataset(options_of(7, 3, true, 0, false, 0), 1000);
    ok(each_once_per_epoch(&d, 100, 3), "seed 0 shuffles too");
}

/* Compares every batch, byte for byte, of two option sets. */
static bool same_batches(fl_dataset_options x, fl_dataset_options y, int max_batches)
{
    fl_dataset *a = fl_dataset_new(example_images, example_labels, &x);
    fl_dataset *b = fl_dataset_new(example_images, example_labels, &y);
    bool same = a && b;
    for (int i = 0; same && i < max_batches; i++) {
        const fl_tensor *ai, *al, *bi, *bl;
        int ra = fl_dataset_next(a, &ai, &al);
        int rb = fl_dataset_next(b, &bi, &bl);
        same = ra == rb;
        if (!same || ra != 1)
            break;
        same = fl_shape_equal(ai->shape, bi->shape) && fl_shape_equal(al->shape, bl->shape) &&
               memcmp(ai->data, bi->data, (size_t)fl_shape_size(ai->shape) * 4) == 0 &&
               memcmp(al->data, bl->data, (size_t)fl_shape_size(al->shape) * 4) == 0;
    }
    fl_dataset_free(a);
    fl_dataset_free(b);
    return same;
}

static void test_prefetch(void)
{
    make_examples(100);
    ok(same_batches(options_of(7, 3, true, 9, false, 0), options_of(7, 3, true, 9, false, 2), 1000),
       "prefetch 2 gives byte-identical batches to prefetch 0");
    ok(same_batches(options_of(16, 2, true, 5, true, 0), options_of(16, 2, true, 5, true, 1), 1000),
       "prefetch 1 with drop_remainder too");
    ok(same_batches(options_of(32, 0, true, 5, false, 0), options_of(32, 0, true, 5, false, 8), 200),
       "prefetch 8 repeating forever too");

    /* The held batch must not change while the thread works ahead. */
    fl_dataset *ds = fl_dataset_new(example_images, example_labels,
                                    &(fl_dataset_options){.batch_size = 10, .epochs = 1, .prefetch = 2});
    const fl_tensor *images, *labels;
    fl_dataset_next(ds, &images, &labels);
    int32_t first[10];
    memcpy(first, labels->data, sizeof first);
    usleep(20000); /* give the thread time to fill every free slot */
    ok(memcmp(first, labels->data, sizeof first) == 0, "a held batch stays put while prefetching");
    int batches = 1;
    while (fl_dataset_next(ds, &images, &labels) == 1)
        batches++;
    ok(batches == 10, "prefetched: 10 batches in one epoch of 100");
    fl_dataset_free(ds);

    /* A hang here would stall prove; the alarm turns it into a failure. */
    alarm(30);
    ds = fl_dataset_new(example_images, example_labels,
                        &(fl_dataset_options){.batch_size = 3, .epochs = 0, .shuffle = true, .prefetch = 3});
    fl_dataset_next(ds, &images, &labels);
    fl_dataset_next(ds, &images, &labels);
    usleep(10000); /* let the producer block on a full ring */
    fl_dataset_free(ds);
    ok(true, "freeing mid-epoch with prefetch on returns");
    ds = fl_dataset_new(example_images, example_labels,
                        &(fl_dataset_options){.batch_size = 3, .prefetch = 2});
    fl_dataset_free(ds);
    ok(true, "freeing before the first batch returns");
    for (int i = 0; i < 50; i++) {
        ds = fl_dataset_new(example_images, example_labels,
                            &(fl_dataset_options){.batch_size = 1, .prefetch = 1 + i % 4});
        for (int k = 0; k < i % 5; k++)
            fl_dataset_next(ds, &images, &labels);
        fl_dataset_free(ds);
    }
    ok(true, "50 quick create/next/free rounds return");
    alarm(0);
}

static void test_dataset_errors(void)
{
    make_examples(10);
    fl_dataset_options options = options_of(0, 1, false, 0, false, 0);
    ok(fl_dataset_new(example_images, example_labels, &options) == NULL, "batch_size 0 fails");
    is_string(fl_last_error(), "fl_dataset_new: batch_size is 0; it must be at least 1",
              "batch_size message");

    options = options_of(4, 1, false, 0, false, -1);
    ok(fl_dataset_new(example_images, example_labels, &options) == NULL, "prefetch -1 fails");
    contains(fl_last_error(), "prefetch is -1", "prefetch message");

    ok(fl_dataset_new(example_images, example_labels, NULL) == NULL, "NULL options fail");
    contains(fl_last_error(), "must all be given", "NULL options message");

    options = options_of(4, 1, false, 0, false, 0);
    fl_tensor *two_d = fl_tensor_new(FL_INT32, fl_shape_make(2, 10, 1));
    ok(fl_dataset_new(example_images, two_d, &options) == NULL, "rank-2 labels fail");
    is_string(fl_last_error(),
              "fl_dataset_new: labels must be rank 1 [N], one class per example; got [10,1]",
              "labels rank message");
    fl_tensor_free(two_d);

    fl_tensor *nine = fl_tensor_new(FL_INT32, fl_shape_make(1, 9));
    ok(fl_dataset_new(example_images, nine, &options) == NULL, "mismatched first axes fail");
    is_string(fl_last_error(),
              "fl_dataset_new: images [10,2,2,1] has 10 examples but labels [9] has 9; the first "
              "axis is the example and must agree",
              "first axis message");
    fl_tensor_free(nine);

    options = options_of(11, 0, false, 0, true, 0);
    ok(fl_dataset_new(example_images, example_labels, &options) == NULL,
       "drop_remainder with a batch larger than the data fails");
    contains(fl_last_error(), "so there would be no batch", "and says why");

    fl_dataset *ds = fl_dataset_new(example_images, example_labels,
                                    &(fl_dataset_options){.batch_size = 4});
    ok(fl_dataset_next(ds, NULL, NULL) == -1, "next without outputs fails");
    fl_dataset_free(ds);
    fl_dataset_free(NULL);
    ok(true, "fl_dataset_free(NULL) is a no-op");
}

static void test_fashion_mnist(void)
{
    const char *dir = FL_DEFAULT_DATA_DIR;
    if (access(dir, R_OK) != 0) {
        for (int i = 0; i < 2; i++)
            ok(true, "fashion-mnist %s # SKIP %s not installed (apt-get install "
                     "dataset-fashion-mnist)", i ? "t10k" : "train", dir);
        return;
    }
    const char *splits[2] = {"train", "t10k"};
    int counts[2] = {60000, 10000};
    for (int s = 0; s < 2; s++) {
        fl_tensor *images = NULL, *labels = NULL;
        if (!ok(fl_mnist_load(NULL, splits[s], &images, &labels) == 0, "fashion-mnist %s loads",
                splits[s])) {
            diag("%s", fl_last_error());
            continue;
        }
        ok(images->shape.dims[0] == counts[s] && labels->shape.dims[0] == counts[s] &&
               images->shape.dims[1] == 28 && images->shape.dims[2] == 28,
           "%s has %d examples of 28x28", splits[s], counts[s]);
        float low = 1, high = 0;
        for (int64_t i = 0; i < fl_shape_size(images->shape); i++) {
            float p = fl_tensor_floats(images)[i];
            low = p < low ? p : low;
            high = p > high ? p : high;
        }
        ok(low >= 0 && high <= 1 && high > 0.5f, "%s pixels lie in [0,1]", splits[s]);
        int per_class[10] = {0};
        bool in_range = true;
        for (int i = 0; i < counts[s]; i++) {
            int label = fl_tensor_ints(labels)[i];
            in_range &= label >= 0 && label <= 9;
            if (label >= 0 && label <= 9)
                per_class[label]++;
        }
        ok(in_range && per_class[0] == counts[s] / 10, "%s labels lie in 0..9, balanced",
           splits[s]);
        fl_tensor_free(images);
        fl_tensor_free(labels);
    }
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/flowlab-data-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    test_idx_read();
    test_idx_errors();
    test_mnist_load();
    test_batching();
    test_shuffle();
    test_prefetch();
    test_dataset_errors();
    test_fashion_mnist();
    fl_tensor_free(example_images);
    fl_tensor_free(example_labels);
    remove_tmpdir();
    return done_testing();
}
