/* checkpoint_read.c: fl_checkpoint_read, one checkpoint file back into named
 * tensors. Every length is checked against the bytes left and every CRC
 * against all the bytes before it, before anything is trusted. The writer is
 * checkpoint_write.c; the format is in checkpoint_format.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint_format.h"

/* In place: little-endian file bytes to host words. A no-op in effect on
 * little-endian hosts, a byte swap elsewhere. */
static void decode_words(void *words, size_t count)
{
    unsigned char *bytes = words;
    for (size_t i = 0; i < count; i++) {
        uint32_t word = fl_load_le32(bytes + 4 * i);
        memcpy(bytes + 4 * i, &word, 4);
    }
}

/* Every read is checked against the bytes left in the file first, so a
 * corrupted length can never make us allocate or read more than is there. */
typedef struct {
    FILE *file;
    const char *path;
    uint64_t left;  /* bytes not yet read */
    uint32_t crc;   /* CRC-32 of every byte read so far */
    int index;      /* tensor being read, 0-based */
    int count;
    const char *name; /* its name once known, escaped for messages (\xNN), else NULL */
} reader;

/* "tensor 'dense/kernel'" once the name is read, "tensor 3 of 7" before. */
static const char *describe_tensor(const reader *r, char *buf, size_t len)
{
    if (r->name)
        snprintf(buf, len, "tensor '%s'", r->name);
    else
        snprintf(buf, len, "tensor %d of %d", r->index + 1, r->count);
    return buf;
}

static int fail_truncated(const reader *r)
{
    char what[FL_ERROR_LEN];
    fl_set_error_code(FL_DATA_LOSS, "%s: file is truncated in %s", r->path, describe_tensor(r, what, sizeof what));
    return -1;
}

/* Reads len bytes; refuses, naming the tensor, when the file has fewer left. */
static int get_bytes(reader *r, void *out, uint64_t len)
{
    if (len > r->left)
        return fail_truncated(r);
    if (len > 0 && fread(out, 1, (size_t)len, r->file) != (size_t)len)
        return fail_truncated(r); /* the file shrank under us */
    r->left -= len;
    r->crc = fl_crc32_update(r->crc, out, (size_t)len);
    return 0;
}

static int get_u32(reader *r, uint32_t *v)
{
    unsigned char buf[4];
    if (get_bytes(r, buf, sizeof buf) != 0)
        return -1;
    *v = fl_load_le32(buf);
    return 0;
}

static int get_u64(reader *r, uint64_t *v)
{
    unsigned char buf[8];
    if (get_bytes(r, buf, sizeof buf) != 0)
        return -1;
    *v = fl_load_le64(buf);
    return 0;
}

/* Reads a stored CRC and compares it with the CRC of all the bytes before
 * it. what says which part of the file it guards, for the message. */
static int get_crc(reader *r, const char *what)
{
    uint32_t actual = r->crc, stored;
    if (get_u32(r, &stored) != 0)
        return -1;
    if (stored == actual)
        return 0;
    fl_set_error_code(FL_DATA_LOSS, "%s: %s is corrupted (CRC 0x%08x, expected 0x%08x): a byte changed after it "
                      "was written; restore an earlier checkpoint",
                      r->path, what, (unsigned)actual, (unsigned)stored);
    return -1;
}

static char *get_name(reader *r)
{
    uint32_t len;
    if (get_u32(r, &len) != 0)
        return NULL;
    if (len == 0) {
        fl_set_error_code(FL_DATA_LOSS, "%s: tensor %d of %d has an empty name", r->path, r->index + 1, r->count);
        return NULL;
    }
    if (len > r->left) {
        fl_set_error_code(FL_DATA_LOSS, "%s: tensor %d of %d claims a %u-byte name but only %llu bytes are left "
                          "(truncated or corrupted file)",
                          r->path, r->index + 1, r->count, (unsigned)len, (unsigned long long)r->left);
        return NULL;
    }
    char *name = fl_xmalloc((size_t)len + 1);
    if (get_bytes(r, name, len) != 0) {
        free(name);
        return NULL;
    }
    name[len] = '\0';
    if (strlen(name) != len) {
        fl_set_error_code(FL_DATA_LOSS, "%s: tensor %d of %d has a NUL byte in its name", r->path, r->index + 1,
                          r->count);
        free(name);
        return NULL;
    }
    return name;
}

static int get_dtype(reader *r, fl_dtype *dtype)
{
    uint32_t code;
    if (get_u32(r, &code) != 0)
        return -1;
    if (code != FILE_DTYPE_FLOAT32 && code != FILE_DTYPE_INT32) {
        fl_set_error_code(FL_DATA_LOSS, "%s: tensor '%s' has unknown dtype code %u", r->path, r->name,
                          (unsigned)code);
        return -1;
    }
    *dtype = code == FILE_DTYPE_INT32 ? FL_INT32 : FL_FLOAT32;
    return 0;
}

static int get_shape(reader *r, fl_shape *shape)
{
    uint32_t rank;
    if (get_u32(r, &rank) != 0)
        return -1;
    if (rank > FL_MAX_RANK) {
        fl_set_error_code(FL_DATA_LOSS, "%s: tensor '%s' has rank %u (at most %d)", r->path, r->name,
                          (unsigned)rank, FL_MAX_RANK);
        return -1;
    }
    shape->rank = (int)rank;
    for (int i = 0; i < shape->rank; i++) {
        uint32_t dim;
        if (get_u32(r, &dim) != 0)
            return -1;
        shape->dims[i] = (int32_t)dim;
        if (shape->dims[i] < 0) {
            fl_set_error_code(FL_DATA_LOSS, "%s: tensor '%s' has negative dimension %d", r->path, r->name,
                              shape->dims[i]);
            return -1;
        }
    }
    return 0;
}

/* The stored payload length must be exactly what the shape needs. */
static int get_payload_bytes(reader *r, fl_dtype dtype, fl_shape shape, uint64_t *bytes)
{
    if (get_u64(r, bytes) != 0)
        return -1;
    uint64_t expected;
    char text[64];
    if (!fl_checkpoint_payload_bytes(shape, &expected)) {
        fl_set_error_code(FL_DATA_LOSS, "%s: tensor '%s' has shape %s, too large to be real (corrupted file)",
                          r->path, r->name, fl_shape_format(shape, text, sizeof text));
        return -1;
    }
    if (*bytes != expected) {
        fl_set_error_code(FL_DATA_LOSS, "%s: tensor '%s' stores %llu payload bytes but %s %s needs %llu", r->path,
                          r->name, (unsigned long long)*bytes, fl_dtype_name(dtype),
                          fl_shape_format(shape, text, sizeof text), (unsigned long long)expected);
        return -1;
    }
    return 0;
}

/* Reads the payload straight into a new tensor, then the record's CRC; the
 * words are decoded only once the CRC has vouched for them. */
static fl_tensor *get_payload(reader *r, fl_dtype dtype, fl_shape shape, uint64_t bytes)
{
    if (bytes > r->left) {
        fail_truncated(r);
        return NULL;
    }
    fl_tensor *t = fl_tensor_new(dtype, shape); /* size already bounded by the file */
    if (!t)
        return NULL;
    char what[FL_ERROR_LEN];
    if (get_bytes(r, t->data, bytes) != 0 ||
        get_crc(r, describe_tensor(r, what, sizeof what)) != 0) {
        fl_tensor_free(t);
        return NULL;
    }
    decode_words(t->data, (size_t)bytes / 4);
    return t;
}

/* Everything after the name: dtype, shape, payload length, payload, CRC. */
static fl_tensor *get_tensor_body(reader *r)
{
    fl_dtype dtype;
    fl_shape shape = {0};
    uint64_t bytes;
    if (get_dtype(r, &dtype) != 0 || get_shape(r, &shape) != 0 ||
        get_payload_bytes(r, dtype, shape, &bytes) != 0)
        return NULL;
    return get_payload(r, dtype, shape, bytes);
}

static int get_named_tensor(reader *r, fl_named_tensor *out)
{
    char *name = get_name(r);
    if (!name)
        return -1;
    size_t len = strlen(name);
    char *shown = fl_xmalloc(4 * len + 1); /* the name as messages show it: read from a file, untrusted */
    fl_escape_untrusted(name, len, shown, 4 * len + 1);
    r->name = shown;
    fl_tensor *t = get_tensor_body(r);
    r->name = NULL;
    free(shown);
    if (!t) {
        free(name);
        return -1;
    }
    out->name = name;
    out->tensor = t;
    return 0;
}

/* Version 1 files are refused rather than read: their CRC did not cover
 * names and shapes, so a damaged one could load the wrong tensor silently. */
static int check_version(const reader *r, uint32_t version)
{
    if (version == CHECKPOINT_VERSION)
        return 0;
    fl_set_error_code(FL_UNIMPLEMENTED, "%s: checkpoint format version %u is not supported (this build reads %u)%s",
                      r->path, (unsigned)version, CHECKPOINT_VERSION,
                      version < CHECKPOINT_VERSION
                          ? "; it was written by an older flowlab: train again to save a new one"
                          : "");
    return -1;
}

/* Checks magic, version and the header's CRC; returns the tensor count, or -1. */
static int get_header(reader *r)
{
    unsigned char magic[sizeof fl_checkpoint_magic];
    uint32_t version, count;
    if (r->left < HEADER_BYTES) {
        fl_set_error_code(FL_DATA_LOSS, "%s: not a flowlab checkpoint (%llu bytes, too short for the header)",
                          r->path, (unsigned long long)r->left);
        return -1;
    }
    if (get_bytes(r, magic, sizeof magic) != 0 || get_u32(r, &version) != 0 ||
        get_u32(r, &count) != 0)
        return -1;
    if (memcmp(magic, fl_checkpoint_magic, sizeof magic) != 0) {
        fl_set_error_code(FL_DATA_LOSS, "%s: not a flowlab checkpoint (bad magic)", r->path);
        return -1;
    }
    if (check_version(r, version) != 0 || get_crc(r, "the header") != 0)
        return -1;
    if (count > INT_MAX) {
        fl_set_error_code(FL_DATA_LOSS, "%s: header claims %u tensors (corrupted file)", r->path, (unsigned)count);
        return -1;
    }
    return (int)count;
}

/* Reads r->count records into tensors (room for capacity); *filled says how
 * many need freeing. */
static int read_tensors(reader *r, fl_named_tensor *tensors, int capacity, int *filled)
{
    for (*filled = 0; *filled < r->count; (*filled)++) {
        r->index = *filled;
        if (*filled == capacity) /* cannot happen: the file would have run out first */
            return fail_truncated(r);
        if (get_named_tensor(r, &tensors[*filled]) != 0)
            return -1;
    }
    if (r->left != 0) {
        fl_set_error_code(FL_DATA_LOSS, "%s: %llu unexpected bytes after the last tensor", r->path,
                          (unsigned long long)r->left);
        return -1;
    }
    return fl_checkpoint_check_unique_names(r->path, tensors, r->count);
}

/* A corrupted count must not size an allocation: the rest of the file holds
 * at most left / MIN_RECORD_BYTES records, so reading fails before any more. */
static int array_capacity(const reader *r)
{
    uint64_t most = r->left / MIN_RECORD_BYTES + 1;
    return most < (uint64_t)r->count ? (int)most : r->count;
}

static int read_opened(reader *r, fl_named_tensor **out, int *n)
{
    int count = get_header(r);
    if (count < 0)
        return -1;
    r->count = count;
    int capacity = array_capacity(r);
    fl_named_tensor *tensors = capacity ? fl_xcalloc((size_t)capacity, sizeof *tensors) : NULL;
    int filled = 0;
    if (read_tensors(r, tensors, capacity, &filled) != 0) {
        fl_checkpoint_free(tensors, filled);
        return -1;
    }
    *out = tensors;
    *n = count;
    return 0;
}

int fl_checkpoint_read(const char *path, fl_named_tensor **out, int *n)
{
    if (!path || !out || !n) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_checkpoint_read: path, out and n must not be NULL");
        return -1;
    }
    *out = NULL;
    *n = 0;
    FILE *file = fopen(path, "rb");
    if (!file) {
        fl_set_error_code(fl_errno_code(errno), "%s: cannot open checkpoint: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(file), &st) != 0 || !S_ISREG(st.st_mode)) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: not a regular file", path);
        fclose(file);
        return -1;
    }
    reader r = {file, path, (uint64_t)st.st_size, 0, 0, 0, NULL};
    int rc = read_opened(&r, out, n);
    fclose(file);
    return rc;
}

void fl_checkpoint_free(fl_named_tensor *tensors, int n)
{
    if (!tensors)
        return;
    for (int i = 0; i < n; i++) {
        free(tensors[i].name);
        fl_tensor_free(tensors[i].tensor);
    }
    free(tensors);
}
