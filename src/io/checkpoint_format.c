/* checkpoint_format.c: the helpers checkpoint_write.c and checkpoint_read.c
 * share: little-endian integers, a CRC-32 for any length, payload sizes and
 * the unique-name rule. Neither reading nor writing lives here. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "checkpoint_format.h"

const unsigned char fl_checkpoint_magic[8] = {'F', 'L', 'C', 'K', 'P', 'T', 0, 1};

void fl_store_le32(unsigned char *out, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

void fl_store_le64(unsigned char *out, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

uint32_t fl_load_le32(const unsigned char *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)in[i] << (8 * i);
    return v;
}

uint64_t fl_load_le64(const unsigned char *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)in[i] << (8 * i);
    return v;
}

/* zlib's crc32 takes a uInt length; feed it in pieces so any size works. */
uint32_t fl_crc32_update(uint32_t crc, const unsigned char *bytes, size_t len)
{
    while (len > 0) {
        uInt piece = len > CHUNK_BYTES ? CHUNK_BYTES : (uInt)len;
        crc = (uint32_t)crc32(crc, bytes, piece);
        bytes += piece;
        len -= piece;
    }
    return crc;
}

bool fl_checkpoint_payload_bytes(fl_shape shape, uint64_t *bytes)
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

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorting a copy of the names puts duplicates side by side. */
int fl_checkpoint_check_unique_names(const char *path, const fl_named_tensor *tensors, int n)
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
            char shown[4 * 255 + 1]; /* a name read from a file: escaped (\xNN), cut at 255 bytes */
            fl_escape_untrusted(names[i], strlen(names[i]), shown, sizeof shown);
            fl_set_error_code(FL_INVALID_ARGUMENT, "%s: tensor name '%s' appears more than once", path, shown);
            rc = -1;
        }
    }
    free(names);
    return rc;
}
