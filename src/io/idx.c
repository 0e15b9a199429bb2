/* idx.c: reads MNIST-format IDX files of unsigned bytes, plain or gzip'd
 * (zlib's gzread handles both), and turns a split's images and labels into
 * float32 [N,rows,cols,1] tensors in [0,1] and int32 [N] tensors, or keeps
 * the images as their bytes and reads only the first examples asked for. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime.h"

#define IDX_UNSIGNED_BYTE 0x08
#define INSTALL_HINT                                                                              \
    "install Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or pass "      \
    "--data_dir"

/* A header may claim any size; we grow the buffer as bytes actually arrive,
 * so a corrupt header yields a "truncated" message instead of a huge malloc. */
#define FIRST_READ_BYTES ((size_t)16 << 20)
#define MAX_READ_CALL ((size_t)1 << 30) /* gzread takes an unsigned int length */
/* Four bytes per element once converted to float32 must still fit in
 * int64 (shape sizes) and size_t (allocations). */
#define MAX_PAYLOAD_BYTES ((uint64_t)(SIZE_MAX < INT64_MAX ? SIZE_MAX : INT64_MAX) / 4)

static uint32_t big_endian_u32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads until len bytes or end of file; returns the count, or -1 on a read error. */
static int64_t read_up_to(gzFile file, void *buf, size_t len)
{
    size_t have = 0;
    while (have < len) {
        size_t want = len - have < MAX_READ_CALL ? len - have : MAX_READ_CALL;
        int got = gzread(file, (char *)buf + have, (unsigned)want);
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        have += (size_t)got;
    }
    return (int64_t)have;
}

/* zlib's message, without the "PATH: " it puts in front, since ours has it. */
static const char *zlib_reason(const char *path, gzFile file)
{
    int errnum = Z_OK;
    const char *why = gzerror(file, &errnum);
    size_t path_len = strlen(path);
    if (strncmp(why, path, path_len) == 0 && strncmp(why + path_len, ": ", 2) == 0)
        why += path_len + 2;
    return why;
}

static void set_read_error(const char *path, gzFile file)
{
    int errnum = Z_OK;
    gzerror(file, &errnum);
    /* Z_ERRNO is the system refusing (a directory, an I/O error), not bad data. */
    if (errnum == Z_ERRNO)
        fl_set_error_code(fl_errno_code(errno), "%s: cannot read: %s", path, zlib_reason(path, file));
    else
        fl_set_error_code(FL_DATA_LOSS, "%s: cannot read: %s; the file may be damaged, fetch it again", path,
                          zlib_reason(path, file));
}

static gzFile open_idx(const char *path)
{
    errno = 0;
    gzFile file = gzopen(path, "rb");
    if (file) {
        gzbuffer(file, 1 << 17); /* fewer system calls on the 26 MB training images */
        return file;
    }
    if (errno == ENOENT)
        fl_set_error_code(FL_NOT_FOUND, "%s: no such file; " INSTALL_HINT, path);
    else
        fl_set_error_code(fl_errno_code(errno), "%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
    return NULL;
}

static const char *expected_magic_text(int want_rank)
{
    if (want_rank == 1)
        return "0x00000801";
    if (want_rank == 3)
        return "0x00000803";
    return "0x00000801 or 0x00000803";
}

/* Returns the rank the magic announces, or -1 with a message. want_rank 0 takes 1 or 3. */
static int check_magic(const char *path, uint32_t magic, int want_rank)
{
    unsigned type = (magic >> 8) & 0xff;
    int rank = (int)(magic & 0xff);
    if (magic >> 16 != 0) {
        const char *hint = magic >> 16 == 0x1f8b ? "it is gzip-compressed twice; gunzip it once"
                                                 : "is it an MNIST-format file?";
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: not an IDX file (magic 0x%08x, expected %s); %s", path, magic,
                          expected_magic_text(want_rank), hint);
        return -1;
    }
    if (type != IDX_UNSIGNED_BYTE) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: IDX data type 0x%02x (magic 0x%08x) is not unsigned bytes (0x08); "
                          "flowlab reads only byte IDX files such as MNIST's",
                          path, type, magic);
        return -1;
    }
    if (want_rank != 0 && rank != want_rank) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: IDX file of rank %d (magic 0x%08x, expected %s); are the images and "
                          "labels files swapped?",
                          path, rank, magic, expected_magic_text(want_rank));
        return -1;
    }
    if (rank != 1 && rank != 3) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: IDX file of rank %d (magic 0x%08x, expected %s); flowlab reads "
                          "labels (rank 1) and images (rank 3)",
                          path, rank, magic, expected_magic_text(want_rank));
        return -1;
    }
    return rank;
}

/* Reads the magic and dimension sizes; fills shape and the payload size in bytes. */
static int read_header(const char *path, gzFile file, int want_rank, fl_shape *shape,
                       uint64_t *payload_bytes)
{
    unsigned char header[4 + 4 * FL_MAX_RANK];
    int64_t got = read_up_to(file, header, 4);
    if (got < 0) {
        set_read_error(path, file);
        return -1;
    }
    if (got < 4) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: not an IDX file (only %lld bytes, too short for the 4-byte magic); "
                          "is it an MNIST-format file?",
                          path, (long long)got);
        return -1;
    }
    int rank = check_magic(path, big_endian_u32(header), want_rank);
    if (rank < 0)
        return -1;

    int header_bytes = 4 + 4 * rank;
    got = read_up_to(file, header + 4, (size_t)(4 * rank));
    if (got < 0) {
        set_read_error(path, file);
        return -1;
    }
    if (got < 4 * rank) {
        fl_set_error_code(FL_DATA_LOSS, "%s: truncated: the header ends after %lld of its %d bytes; the file is "
                          "incomplete, fetch it again",
                          path, (long long)(4 + got), header_bytes);
        return -1;
    }

    uint64_t total = 1;
    shape->rank = rank;
    for (int i = 0; i < rank; i++) {
        uint32_t size = big_endian_u32(header + 4 + 4 * i);
        if (size > INT_MAX) {
            fl_set_error_code(FL_INVALID_ARGUMENT,
                              "%s: dimension %d of the header is %u, beyond flowlab's limit of %d; "
                              "the header is probably damaged",
                              path, i, size, INT_MAX);
            return -1;
        }
        if (size != 0 && total > MAX_PAYLOAD_BYTES / size) {
            fl_set_error_code(FL_INVALID_ARGUMENT, "%s: the header describes more than %llu bytes of data; "
                              "the header is probably damaged",
                              path, (unsigned long long)MAX_PAYLOAD_BYTES);
            return -1;
        }
        total *= size;
        shape->dims[i] = (int)size;
    }
    *payload_bytes = total;
    return 0;
}

/* "60000 images of 28x28" or "60000 labels", for messages. */
static const char *describe_items(fl_shape shape, int64_t count, char *buf, size_t len)
{
    if (shape.rank == 3)
        snprintf(buf, len, "%lld images of %dx%d", (long long)count, shape.dims[1], shape.dims[2]);
    else
        snprintf(buf, len, "%lld labels", (long long)count);
    return buf;
}

static void set_truncated_error(const char *path, fl_shape shape, uint64_t have)
{
    uint64_t item_bytes = 1;
    for (int i = 1; i < shape.rank; i++)
        item_bytes *= (uint64_t)shape.dims[i];
    char described[96];
    /* item_bytes is 0 only for 0x0 images; then no byte can be missing. */
    int64_t whole_items = item_bytes ? (int64_t)(have / item_bytes) : 0;
    fl_set_error_code(FL_DATA_LOSS, "%s: truncated: header says %s but the file ends after %lld of them; the file "
                      "is incomplete, fetch it again",
                      path, describe_items(shape, shape.dims[0], described, sizeof described),
                      (long long)whole_items);
}

/* Reads exactly `expected` bytes; *out is malloc'd. */
static int read_payload(const char *path, gzFile file, fl_shape shape, uint64_t expected,
                        uint8_t **out)
{
    size_t capacity = expected < FIRST_READ_BYTES ? (size_t)expected : FIRST_READ_BYTES;
    uint8_t *buf = fl_xmalloc(capacity);
    uint64_t have = 0;
    while (have < expected) {
        if (have == capacity) {
            capacity = expected - capacity < capacity ? (size_t)expected : capacity * 2;
            buf = fl_xrealloc(buf, capacity);
        }
        int64_t got = read_up_to(file, buf + have, capacity - (size_t)have);
        if (got < 0) {
            set_read_error(path, file);
            free(buf);
            return -1;
        }
        if (got == 0)
            break;
        have += (uint64_t)got;
    }
    if (have < expected) {
        set_truncated_error(path, shape, have);
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}

/* After the payload there must be nothing; this read also makes zlib check
 * the gzip trailer's CRC, which it only does on reaching the end. */
static int check_end(const char *path, gzFile file, fl_shape shape)
{
    unsigned char extra;
    int got = gzread(file, &extra, 1);
    if (got < 0) {
        set_read_error(path, file);
        return -1;
    }
    if (got > 0) {
        char described[96];
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: more bytes follow the %s its header describes; is it the right file?",
                          path, describe_items(shape, shape.dims[0], described, sizeof described));
        return -1;
    }
    int errnum = Z_OK;
    gzerror(file, &errnum);
    if (errnum != Z_OK) {
        fl_set_error_code(FL_DATA_LOSS, "%s: the compressed data ends early (%s); fetch the file again", path,
                          zlib_reason(path, file));
        return -1;
    }
    return 0;
}

/* Keeps the header's first max_items items (all when 0 or more than there
 * are); true when that leaves some unread. */
static bool keep_first_items(fl_shape *shape, uint64_t *payload_bytes, int max_items)
{
    if (max_items <= 0 || max_items >= shape->dims[0])
        return false;
    *payload_bytes = *payload_bytes / (uint64_t)shape->dims[0] * (uint64_t)max_items;
    shape->dims[0] = max_items;
    return true;
}

/* Reads the file's first max_items items (all when 0); when some are left
 * unread, so are the end checks: the point is not to read the rest. */
static int idx_read(const char *path, int want_rank, int max_items, fl_shape *shape, uint8_t **bytes)
{
    gzFile file = open_idx(path);
    if (!file)
        return -1;
    fl_shape read_shape = {0};
    uint64_t payload_bytes = 0;
    uint8_t *payload = NULL;
    int status = read_header(path, file, want_rank, &read_shape, &payload_bytes);
    bool partial = status == 0 && keep_first_items(&read_shape, &payload_bytes, max_items);
    if (status == 0)
        status = read_payload(path, file, read_shape, payload_bytes, &payload);
    if (status == 0 && !partial)
        status = check_end(path, file, read_shape);
    gzclose(file);
    if (status != 0) {
        free(payload);
        return -1;
    }
    *shape = read_shape;
    *bytes = payload;
    return 0;
}

int fl_idx_read(const char *path, fl_shape *shape, uint8_t **bytes)
{
    if (!path || !shape || !bytes) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_idx_read: path, shape and bytes must all be given");
        return -1;
    }
    *bytes = NULL;
    return idx_read(path, 0, 0, shape, bytes);
}

static char *split_file_name(const char *dir, const char *split, const char *stem,
                             const char *suffix)
{
    size_t len = strlen(dir) + strlen(split) + strlen(stem) + strlen(suffix) + sizeof "/-";
    char *path = fl_xmalloc(len);
    snprintf(path, len, "%s/%s-%s%s", dir, split, stem, suffix);
    return path;
}

/* DIR/SPLIT-STEM.gz if it exists, else DIR/SPLIT-STEM if that exists, else
 * the .gz name so that the "no such file" message names the usual file. */
static char *find_split_file(const char *dir, const char *split, const char *stem)
{
    char *compressed = split_file_name(dir, split, stem, ".gz");
    if (access(compressed, F_OK) == 0)
        return compressed;
    char *plain = split_file_name(dir, split, stem, "");
    if (access(plain, F_OK) == 0) {
        free(compressed);
        return plain;
    }
    free(plain);
    return compressed;
}

/* The images as float32 in [0,1]: a new tensor (the bytes stay the caller's). */
static fl_tensor *images_from_bytes(fl_shape idx_shape, const uint8_t *bytes)
{
    fl_shape shape = fl_shape_make(4, idx_shape.dims[0], idx_shape.dims[1], idx_shape.dims[2], 1);
    fl_tensor *images = fl_tensor_new(FL_FLOAT32, shape);
    float *pixels = fl_tensor_floats(images);
    int64_t count = fl_shape_size(shape);
    for (int64_t i = 0; i < count; i++)
        pixels[i] = (float)bytes[i] / 255.0f;
    return images;
}

/* The images as they are, uint8 [N,rows,cols,1]: the tensor takes the bytes. */
static fl_tensor *images_keeping_bytes(fl_shape idx_shape, uint8_t *bytes)
{
    fl_tensor *images = fl_xcalloc(1, sizeof *images);
    images->dtype = FL_UINT8;
    images->shape = fl_shape_make(4, idx_shape.dims[0], idx_shape.dims[1], idx_shape.dims[2], 1);
    images->data = bytes;
    return images;
}

static fl_tensor *labels_from_bytes(fl_shape idx_shape, const uint8_t *bytes)
{
    fl_tensor *labels = fl_tensor_new(FL_INT32, fl_shape_make(1, idx_shape.dims[0]));
    int32_t *values = fl_tensor_ints(labels);
    for (int i = 0; i < idx_shape.dims[0]; i++)
        values[i] = bytes[i];
    return labels;
}

/* How a split is loaded: how many examples, and whether images stay bytes. */
typedef struct {
    int max_examples; /* 0: all */
    bool keep_bytes;
} split_loading;

static int load_split(const char *image_path, const char *label_path, split_loading how, fl_tensor **images,
                      fl_tensor **labels)
{
    fl_shape image_shape, label_shape;
    uint8_t *image_bytes = NULL, *label_bytes = NULL;
    if (idx_read(image_path, 3, how.max_examples, &image_shape, &image_bytes) != 0)
        return -1;
    if (idx_read(label_path, 1, how.max_examples, &label_shape, &label_bytes) != 0) {
        free(image_bytes);
        return -1;
    }
    int status = 0;
    if (image_shape.dims[0] != label_shape.dims[0]) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s has %d images but %s has %d labels; both files must come from the "
                          "same split",
                          image_path, image_shape.dims[0], label_path, label_shape.dims[0]);
        status = -1;
    } else if (how.keep_bytes) {
        *images = images_keeping_bytes(image_shape, image_bytes);
        image_bytes = NULL; /* the tensor owns them now */
        *labels = labels_from_bytes(label_shape, label_bytes);
    } else {
        *images = images_from_bytes(image_shape, image_bytes);
        *labels = labels_from_bytes(label_shape, label_bytes);
    }
    free(image_bytes);
    free(label_bytes);
    return status;
}

static int load_mnist(const char *caller, const char *data_dir, const char *split, split_loading how,
                      fl_tensor **images, fl_tensor **labels)
{
    if (!images || !labels) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: images and labels must both be given", caller);
        return -1;
    }
    *images = NULL;
    *labels = NULL;
    if (!split || !*split) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: no split given; use \"train\" or \"t10k\"", caller);
        return -1;
    }
    const char *dir = data_dir && *data_dir ? data_dir : FL_DEFAULT_DATA_DIR;
    char *image_path = find_split_file(dir, split, "images-idx3-ubyte");
    char *label_path = find_split_file(dir, split, "labels-idx1-ubyte");
    int status = load_split(image_path, label_path, how, images, labels);
    free(image_path);
    free(label_path);
    return status;
}

int fl_mnist_load(const char *data_dir, const char *split, fl_tensor **images,
                  fl_tensor **labels)
{
    return load_mnist("fl_mnist_load", data_dir, split, (split_loading){0, false}, images, labels);
}

/* The images as the file's bytes, a quarter of their float32 size (fl_dataset
 * divides by 255 as it makes each batch), and nothing read past the first
 * max_examples: so a shorter read skips the end checks, the gzip CRC among them. */
int fl_mnist_load_bytes(const char *data_dir, const char *split, int max_examples, fl_tensor **images,
                        fl_tensor **labels)
{
    return load_mnist("fl_mnist_load_bytes", data_dir, split, (split_loading){max_examples, true}, images, labels);
}
