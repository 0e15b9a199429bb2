/* checkpoint_file.c: the on-disk checkpoint format, a list of named tensors.
 * Writes go to a temporary file that is flushed, synced and renamed over the
 * target; reads check every length and CRC-32 before trusting the bytes.
 * The format is described field by field in book/appendix-checkpoint-format.md. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime.h"

/* Six letters, a NUL so that no text file can match, and a 1. */
static const unsigned char CHECKPOINT_MAGIC[8] = {'F', 'L', 'C', 'K', 'P', 'T', 0, 1};
#define CHECKPOINT_VERSION 1u
#define HEADER_BYTES 16u /* magic, version, tensor count */
/* The smallest possible tensor record: name length, a one-byte name, dtype,
 * rank 0, payload length, CRC, four payload bytes (rank 1 with a zero dim is
 * the same size). It bounds how many records a file of some size can hold. */
#define MIN_RECORD_BYTES (4u + 1u + 4u + 4u + 8u + 4u + 4u)
/* Payloads are converted to little-endian through a buffer of this many bytes. */
#define CHUNK_BYTES 65536u

/* dtype codes in the file; part of the format, so spelled out rather than
 * borrowed from the fl_dtype enum. */
enum { FILE_DTYPE_FLOAT32 = 0, FILE_DTYPE_INT32 = 1 };

/* ---- little-endian encoding, independent of the host's byte order ---- */

static void store_u32(unsigned char *out, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

static void store_u64(unsigned char *out, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t load_u32(const unsigned char *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)in[i] << (8 * i);
    return v;
}

static uint64_t load_u64(const unsigned char *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)in[i] << (8 * i);
    return v;
}

/* Both dtypes are four-byte words, so one routine converts either: copy each
 * element's bits into a uint32_t and store those little-endian. */
static void encode_words(const void *words, size_t count, unsigned char *out)
{
    const unsigned char *src = words;
    for (size_t i = 0; i < count; i++) {
        uint32_t word;
        memcpy(&word, src + 4 * i, 4);
        store_u32(out + 4 * i, word);
    }
}

/* In place: little-endian file bytes to host words. A no-op in effect on
 * little-endian hosts, a byte swap elsewhere. */
static void decode_words(void *words, size_t count)
{
    unsigned char *bytes = words;
    for (size_t i = 0; i < count; i++) {
        uint32_t word = load_u32(bytes + 4 * i);
        memcpy(bytes + 4 * i, &word, 4);
    }
}

/* zlib's crc32 takes a uInt length; feed it in pieces so any size works. */
static uint32_t crc_update(uint32_t crc, const unsigned char *bytes, size_t len)
{
    while (len > 0) {
        uInt piece = len > CHUNK_BYTES ? CHUNK_BYTES : (uInt)len;
        crc = (uint32_t)crc32(crc, bytes, piece);
        bytes += piece;
        len -= piece;
    }
    return crc;
}

/* ---- shapes ---- */

/* Payload bytes for a shape, or false if the product overflows 64 bits
 * (possible only with corrupted dims; a real tensor fits in memory). */
static bool payload_bytes_of(fl_shape shape, uint64_t *bytes)
{
    uint64_t elements = 1;
    for (int i = 0; i < shape.rank; i++) {
        uint64_t dim = (uint64_t)shape.dims[i];
        if (dim != 0 && elements > UINT64_MAX / 4 / dim)
            return false;
        elements *= dim;
    }
    *bytes = elements * 4;
    return true;
}

/* ---- names: unique within a file, checked on writing and on reading ---- */

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorting a copy of the names puts duplicates side by side. */
static int check_unique_names(const char *path, const fl_named_tensor *tensors, int n)
{
    if (n < 2)
        return 0;
    const char **names = fl_xmalloc((size_t)n * sizeof *names);
    for (int i = 0; i < n; i++)
        names[i] = tensors[i].name;
    qsort(names, (size_t)n, sizeof *names, compare_names);
    int rc = 0;
    for (int i = 1; i < n && rc == 0; i++) {
        if (strcmp(names[i - 1], names[i]) == 0) {
            fl_set_error("%s: tensor name '%s' appears more than once", path, names[i]);
            rc = -1;
        }
    }
    free(names);
    return rc;
}

/* ====================================================================== *
 * Writing
 * ====================================================================== */

typedef struct {
    FILE *file;
    int error; /* the first errno seen; 0 while all is well */
} writer;

static void put_bytes(writer *w, const void *bytes, size_t len)
{
    if (w->error || len == 0)
        return;
    errno = 0;
    if (fwrite(bytes, 1, len, w->file) != len)
        w->error = errno ? errno : EIO;
}

static void put_u32(writer *w, uint32_t v)
{
    unsigned char buf[4];
    store_u32(buf, v);
    put_bytes(w, buf, sizeof buf);
}

static void put_u64(writer *w, uint64_t v)
{
    unsigned char buf[8];
    store_u64(buf, v);
    put_bytes(w, buf, sizeof buf);
}

/* The CRC must precede the payload in the file, so the payload is encoded
 * twice: once to checksum it, once to write it. Encoding is cheap next to I/O. */
static uint32_t payload_crc(const fl_tensor *t, size_t bytes)
{
    unsigned char chunk[CHUNK_BYTES];
    const unsigned char *src = t->data;
    uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
    for (size_t done = 0; done < bytes; done += CHUNK_BYTES) {
        size_t len = bytes - done < CHUNK_BYTES ? bytes - done : CHUNK_BYTES;
        encode_words(src + done, len / 4, chunk);
        crc = crc_update(crc, chunk, len);
    }
    return crc;
}

static void put_payload(writer *w, const fl_tensor *t, size_t bytes)
{
    unsigned char chunk[CHUNK_BYTES];
    const unsigned char *src = t->data;
    for (size_t done = 0; done < bytes && !w->error; done += CHUNK_BYTES) {
        size_t len = bytes - done < CHUNK_BYTES ? bytes - done : CHUNK_BYTES;
        encode_words(src + done, len / 4, chunk);
        put_bytes(w, chunk, len);
    }
}

static void put_tensor(writer *w, const fl_named_tensor *nt)
{
    const fl_tensor *t = nt->tensor;
    size_t name_len = strlen(nt->name);
    uint64_t bytes = 0;
    payload_bytes_of(t->shape, &bytes); /* validated before writing began */

    put_u32(w, (uint32_t)name_len);
    put_bytes(w, nt->name, name_len);
    put_u32(w, t->dtype == FL_INT32 ? FILE_DTYPE_INT32 : FILE_DTYPE_FLOAT32);
    put_u32(w, (uint32_t)t->shape.rank);
    for (int i = 0; i < t->shape.rank; i++)
        put_u32(w, (uint32_t)t->shape.dims[i]);
    put_u64(w, bytes);
    put_u32(w, payload_crc(t, (size_t)bytes));
    put_payload(w, t, (size_t)bytes);
}

static void put_checkpoint(writer *w, const fl_named_tensor *tensors, int n)
{
    put_bytes(w, CHECKPOINT_MAGIC, sizeof CHECKPOINT_MAGIC);
    put_u32(w, CHECKPOINT_VERSION);
    put_u32(w, (uint32_t)n);
    for (int i = 0; i < n && !w->error; i++)
        put_tensor(w, &tensors[i]);
}

/* ---- checks before anything touches the disk ---- */

static int check_tensor(const char *path, const fl_named_tensor *nt, int index)
{
    if (!nt->name || !nt->name[0]) {
        fl_set_error("%s: tensor %d has no name", path, index);
        return -1;
    }
    if (strlen(nt->name) > UINT32_MAX) {
        fl_set_error("%s: tensor %d has a name too long to store", path, index);
        return -1;
    }
    const fl_tensor *t = nt->tensor;
    if (!t) {
        fl_set_error("%s: tensor '%s' is NULL", path, nt->name);
        return -1;
    }
    if (t->dtype != FL_FLOAT32 && t->dtype != FL_INT32) {
        fl_set_error("%s: tensor '%s' has unknown dtype %d", path, nt->name, (int)t->dtype);
        return -1;
    }
    char shape[64];
    uint64_t bytes;
    /* payload_bytes_of first: it bounds the products fl_shape_known computes. */
    if (t->shape.rank < 0 || t->shape.rank > FL_MAX_RANK || !payload_bytes_of(t->shape, &bytes) ||
        !fl_shape_known(t->shape) || bytes > SIZE_MAX) {
        fl_set_error("%s: tensor '%s' has shape %s; a checkpoint needs a known shape of rank 0 to %d",
                     path, nt->name, fl_shape_format(t->shape, shape, sizeof shape), FL_MAX_RANK);
        return -1;
    }
    if (bytes > 0 && !t->data) {
        fl_set_error("%s: tensor '%s' has no data", path, nt->name);
        return -1;
    }
    return 0;
}

static int check_tensors(const char *path, const fl_named_tensor *tensors, int n)
{
    if (n < 0 || (n > 0 && !tensors)) {
        fl_set_error("%s: fl_checkpoint_write needs n >= 0 tensors (got %d%s)", path, n,
                     tensors ? "" : ", tensors NULL");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (check_tensor(path, &tensors[i], i) != 0)
            return -1;
    return check_unique_names(path, tensors, n);
}

/* ---- the temporary file ---- */

static char *temp_path_for(const char *path)
{
    size_t len = strlen(path) + 32;
    char *temp = fl_xmalloc(len);
    snprintf(temp, len, "%s.tmp.%ld", path, (long)getpid());
    return temp;
}

/* Writes, flushes and syncs the temporary file: after this returns 0 its
 * bytes are on disk, so the rename can only expose a complete file. */
static int write_temp_file(const char *path, const char *temp,
                           const fl_named_tensor *tensors, int n)
{
    FILE *file = fopen(temp, "wb");
    if (!file) {
        fl_set_error("%s: cannot create temporary file %s: %s", path, temp, strerror(errno));
        return -1;
    }
    writer w = {file, 0};
    put_checkpoint(&w, tensors, n);
    if (!w.error && fflush(file) != 0)
        w.error = errno;
    if (!w.error && fsync(fileno(file)) != 0)
        w.error = errno;
    if (fclose(file) != 0 && !w.error)
        w.error = errno;
    if (w.error) {
        fl_set_error("%s: writing %s failed: %s", path, temp, strerror(w.error));
        return -1;
    }
    return 0;
}

/* Makes the rename itself durable. Best effort: the new file is already in
 * place and complete, so a failure here is not worth reporting as one. */
static void sync_parent_directory(const char *path)
{
    char *dir = fl_xstrdup(path);
    char *slash = strrchr(dir, '/');
    const char *name = ".";
    if (slash == dir)
        name = "/";
    else if (slash) {
        *slash = '\0';
        name = dir;
    }
    int fd = open(name, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

/* unlink, not remove(): if something else made a directory under our
 * temporary name, it is not ours to delete. */
static void discard_temp(char *temp)
{
    unlink(temp);
    free(temp);
}

int fl_checkpoint_write(const char *path, const fl_named_tensor *tensors, int n)
{
    if (!path || !path[0]) {
        fl_set_error("fl_checkpoint_write: no path given");
        return -1;
    }
    if (check_tensors(path, tensors, n) != 0)
        return -1;

    char *temp = temp_path_for(path);
    if (write_temp_file(path, temp, tensors, n) != 0) {
        discard_temp(temp);
        return -1;
    }
    /* rename() replaces path atomically: a reader sees the old checkpoint
     * or the new one, never a mixture, even if we crash right here. */
    if (rename(temp, path) != 0) {
        fl_set_error("%s: cannot rename %s over it: %s", path, temp, strerror(errno));
        discard_temp(temp);
        return -1;
    }
    free(temp);
    sync_parent_directory(path);
    return 0;
}

/* ====================================================================== *
 * Reading
 * ====================================================================== */

/* Every read is checked against the bytes left in the file first, so a
 * corrupted length can never make us allocate or read more than is there. */
typedef struct {
    FILE *file;
    const char *path;
    uint64_t left;  /* bytes not yet read */
    int index;      /* tensor being read, 0-based */
    int count;
    const char *name; /* its name once known, else NULL */
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
    fl_set_error("%s: file is truncated in %s", r->path, describe_tensor(r, what, sizeof what));
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
    return 0;
}

static int get_u32(reader *r, uint32_t *v)
{
    unsigned char buf[4];
    if (get_bytes(r, buf, sizeof buf) != 0)
        return -1;
    *v = load_u32(buf);
    return 0;
}

static int get_u64(reader *r, uint64_t *v)
{
    unsigned char buf[8];
    if (get_bytes(r, buf, sizeof buf) != 0)
        return -1;
    *v = load_u64(buf);
    return 0;
}

static char *get_name(reader *r)
{
    uint32_t len;
    if (get_u32(r, &len) != 0)
        return NULL;
    if (len == 0) {
        fl_set_error("%s: tensor %d of %d has an empty name", r->path, r->index + 1, r->count);
        return NULL;
    }
    if (len > r->left) {
        fl_set_error("%s: tensor %d of %d claims a %u-byte name but only %llu bytes are left "
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
        fl_set_error("%s: tensor %d of %d has a NUL byte in its name", r->path, r->index + 1,
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
        fl_set_error("%s: tensor '%s' has unknown dtype code %u", r->path, r->name,
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
        fl_set_error("%s: tensor '%s' has rank %u (at most %d)", r->path, r->name,
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
            fl_set_error("%s: tensor '%s' has negative dimension %d", r->path, r->name,
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
    if (!payload_bytes_of(shape, &expected)) {
        fl_set_error("%s: tensor '%s' has shape %s, too large to be real (corrupted file)",
                     r->path, r->name, fl_shape_format(shape, text, sizeof text));
        return -1;
    }
    if (*bytes != expected) {
        fl_set_error("%s: tensor '%s' stores %llu payload bytes but %s %s needs %llu", r->path,
                     r->name, (unsigned long long)*bytes, fl_dtype_name(dtype),
                     fl_shape_format(shape, text, sizeof text), (unsigned long long)expected);
        return -1;
    }
    return 0;
}

/* Reads the payload straight into a new tensor and checks its CRC. */
static fl_tensor *get_payload(reader *r, fl_dtype dtype, fl_shape shape, uint64_t bytes,
                              uint32_t stored_crc)
{
    if (bytes > r->left) {
        fail_truncated(r);
        return NULL;
    }
    fl_tensor *t = fl_tensor_new(dtype, shape); /* size already bounded by the file */
    if (!t)
        return NULL;
    if (get_bytes(r, t->data, bytes) != 0) {
        fl_tensor_free(t);
        return NULL;
    }
    uint32_t crc = crc_update((uint32_t)crc32(0L, Z_NULL, 0), t->data, (size_t)bytes);
    if (crc != stored_crc) {
        fl_set_error("%s: tensor '%s' is corrupted (CRC 0x%08x, expected 0x%08x)", r->path,
                     r->name, (unsigned)crc, (unsigned)stored_crc);
        fl_tensor_free(t);
        return NULL;
    }
    decode_words(t->data, (size_t)bytes / 4);
    return t;
}

/* Everything after the name: dtype, shape, payload length, CRC, payload. */
static fl_tensor *get_tensor_body(reader *r)
{
    fl_dtype dtype;
    fl_shape shape = {0};
    uint64_t bytes;
    uint32_t crc;
    if (get_dtype(r, &dtype) != 0 || get_shape(r, &shape) != 0 ||
        get_payload_bytes(r, dtype, shape, &bytes) != 0 || get_u32(r, &crc) != 0)
        return NULL;
    return get_payload(r, dtype, shape, bytes, crc);
}

static int get_named_tensor(reader *r, fl_named_tensor *out)
{
    char *name = get_name(r);
    if (!name)
        return -1;
    r->name = name;
    fl_tensor *t = get_tensor_body(r);
    r->name = NULL;
    if (!t) {
        free(name);
        return -1;
    }
    out->name = name;
    out->tensor = t;
    return 0;
}

/* Checks magic and version; returns the tensor count, or -1. */
static int get_header(reader *r)
{
    unsigned char magic[sizeof CHECKPOINT_MAGIC];
    if (r->left < HEADER_BYTES) {
        fl_set_error("%s: not a flowlab checkpoint (%llu bytes, too short for the header)",
                     r->path, (unsigned long long)r->left);
        return -1;
    }
    uint32_t version, count;
    if (get_bytes(r, magic, sizeof magic) != 0 || get_u32(r, &version) != 0 ||
        get_u32(r, &count) != 0)
        return -1;
    if (memcmp(magic, CHECKPOINT_MAGIC, sizeof magic) != 0) {
        fl_set_error("%s: not a flowlab checkpoint (bad magic)", r->path);
        return -1;
    }
    if (version != CHECKPOINT_VERSION) {
        fl_set_error("%s: checkpoint format version %u is not supported (this build reads %u)",
                     r->path, (unsigned)version, CHECKPOINT_VERSION);
        return -1;
    }
    if (count > INT_MAX) {
        fl_set_error("%s: header claims %u tensors (corrupted file)", r->path, (unsigned)count);
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
        fl_set_error("%s: %llu unexpected bytes after the last tensor", r->path,
                     (unsigned long long)r->left);
        return -1;
    }
    return check_unique_names(r->path, tensors, r->count);
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
        fl_set_error("fl_checkpoint_read: path, out and n must not be NULL");
        return -1;
    }
    *out = NULL;
    *n = 0;
    FILE *file = fopen(path, "rb");
    if (!file) {
        fl_set_error("%s: cannot open checkpoint: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(file), &st) != 0 || !S_ISREG(st.st_mode)) {
        fl_set_error("%s: not a regular file", path);
        fclose(file);
        return -1;
    }
    reader r = {file, path, (uint64_t)st.st_size, 0, 0, NULL};
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
