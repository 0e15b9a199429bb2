/* checkpoint_write.c: fl_checkpoint_write, a list of named tensors to one
 * checkpoint file. Writes go to a temporary file that is flushed, synced and
 * renamed over the target; every CRC covers all the bytes before it. The
 * reader is checkpoint_read.c; the format is in checkpoint_format.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint_format.h"
#include "temp_files.h"

/* Both dtypes are four-byte words, so one routine converts either: copy each
 * element's bits into a uint32_t and store those little-endian. */
static void encode_words(const void *words, size_t count, unsigned char *out)
{
    const unsigned char *src = words;
    for (size_t i = 0; i < count; i++) {
        uint32_t word;
        memcpy(&word, src + 4 * i, 4);
        fl_store_le32(out + 4 * i, word);
    }
}

typedef struct {
    FILE *file;
    int error;    /* the first errno seen; 0 while all is well */
    uint32_t crc; /* CRC-32 of every byte written so far */
} writer;

static void put_bytes(writer *w, const void *bytes, size_t len)
{
    if (w->error || len == 0)
        return;
    errno = 0;
    if (fwrite(bytes, 1, len, w->file) != len)
        w->error = errno ? errno : EIO;
    w->crc = fl_crc32_update(w->crc, bytes, len);
}

static void put_u32(writer *w, uint32_t v)
{
    unsigned char buf[4];
    fl_store_le32(buf, v);
    put_bytes(w, buf, sizeof buf);
}

static void put_u64(writer *w, uint64_t v)
{
    unsigned char buf[8];
    fl_store_le64(buf, v);
    put_bytes(w, buf, sizeof buf);
}

/* The CRC of everything written so far; it then counts as written itself,
 * so the next CRC covers this one too and the last covers the whole file. */
static void put_crc(writer *w) { put_u32(w, w->crc); }

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
    fl_checkpoint_payload_bytes(t->shape, &bytes); /* validated before writing began */

    put_u32(w, (uint32_t)name_len);
    put_bytes(w, nt->name, name_len);
    put_u32(w, t->dtype == FL_INT32 ? FILE_DTYPE_INT32 : FILE_DTYPE_FLOAT32);
    put_u32(w, (uint32_t)t->shape.rank);
    for (int i = 0; i < t->shape.rank; i++)
        put_u32(w, (uint32_t)t->shape.dims[i]);
    put_u64(w, bytes);
    put_payload(w, t, (size_t)bytes);
    put_crc(w);
}

static void put_checkpoint(writer *w, const fl_named_tensor *tensors, int n)
{
    put_bytes(w, fl_checkpoint_magic, sizeof fl_checkpoint_magic);
    put_u32(w, CHECKPOINT_VERSION);
    put_u32(w, (uint32_t)n);
    put_crc(w);
    for (int i = 0; i < n && !w->error; i++)
        put_tensor(w, &tensors[i]);
}

/* ---- checks before anything touches the disk ---- */

static int check_tensor(const char *path, const fl_named_tensor *nt, int index)
{
    if (!nt->name || !nt->name[0]) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: tensor %d has no name", path, index);
        return -1;
    }
    if (strlen(nt->name) > UINT32_MAX) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: tensor %d has a name too long to store", path, index);
        return -1;
    }
    const fl_tensor *t = nt->tensor;
    if (!t) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: tensor '%s' is NULL", path, nt->name);
        return -1;
    }
    if (t->dtype != FL_FLOAT32 && t->dtype != FL_INT32) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: tensor '%s' has unknown dtype %d", path, nt->name, (int)t->dtype);
        return -1;
    }
    char shape[64];
    uint64_t bytes;
    /* payload bytes first: it bounds the products fl_shape_known computes. */
    if (t->shape.rank < 0 || t->shape.rank > FL_MAX_RANK ||
        !fl_checkpoint_payload_bytes(t->shape, &bytes) || !fl_shape_known(t->shape) ||
        bytes > SIZE_MAX) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: tensor '%s' has shape %s; a checkpoint needs a known shape of rank 0 to %d",
                          path, nt->name, fl_shape_format(t->shape, shape, sizeof shape), FL_MAX_RANK);
        return -1;
    }
    if (bytes > 0 && !t->data) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: tensor '%s' has no data", path, nt->name);
        return -1;
    }
    return 0;
}

static int check_tensors(const char *path, const fl_named_tensor *tensors, int n)
{
    if (n < 0 || (n > 0 && !tensors)) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: fl_checkpoint_write needs n >= 0 tensors (got %d%s)", path, n,
                          tensors ? "" : ", tensors NULL");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (check_tensor(path, &tensors[i], i) != 0)
            return -1;
    return fl_checkpoint_check_unique_names(path, tensors, n);
}

/* ---- the temporary file ---- */

/* Writes, flushes and syncs the temporary file: after this returns 0 its
 * bytes are on disk, so the rename can only expose a complete file. */
static int write_temp_file(const char *path, const char *temp,
                           const fl_named_tensor *tensors, int n)
{
    FILE *file = fopen(temp, "wb");
    if (!file) {
        fl_set_error_code(fl_errno_code(errno), "%s: cannot create temporary file %s: %s", path, temp, strerror(errno));
        return -1;
    }
    writer w = {file, 0, 0};
    put_checkpoint(&w, tensors, n);
    if (!w.error && fflush(file) != 0)
        w.error = errno;
    if (!w.error && fsync(fileno(file)) != 0)
        w.error = errno;
    if (fclose(file) != 0 && !w.error)
        w.error = errno;
    if (w.error) {
        fl_set_error_code(fl_errno_code(w.error), "%s: writing %s failed: %s", path, temp, strerror(w.error));
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
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_checkpoint_write: no path given");
        return -1;
    }
    if (check_tensors(path, tensors, n) != 0)
        return -1;

    char *temp = fl_temp_path_for(path);
    if (write_temp_file(path, temp, tensors, n) != 0) {
        discard_temp(temp);
        return -1;
    }
    /* rename() replaces path atomically: a reader sees the old checkpoint
     * or the new one, never a mixture, even if we crash right here. */
    if (rename(temp, path) != 0) {
        fl_set_error_code(fl_errno_code(errno), "%s: cannot rename %s over it: %s", path, temp, strerror(errno));
        discard_temp(temp);
        return -1;
    }
    free(temp);
    sync_parent_directory(path);
    return 0;
}
