/* wire_buf.c: the growable buffer frames are built in (fl_wire_buf): room at its
 * end, bytes dropped from its front once sent, and its scratch arena, where the
 * encoders build a message's parts from frame to frame. */
#include <stdlib.h>
#include <string.h>

#include "wire_internal.h"

void fl_wire_buf_free(fl_wire_buf *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
    fl_wire_arena_free(buf->scratch);
    buf->scratch = NULL;
}

void fl_wire_buf_consume(fl_wire_buf *buf, size_t bytes)
{
    if (bytes >= buf->len) {
        buf->len = 0;
        return;
    }
    memmove(buf->data, buf->data + bytes, buf->len - bytes);
    buf->len -= bytes;
}

unsigned char *wire_extend(fl_wire_buf *buf, size_t len)
{
    if (len > buf->cap - buf->len) {
        size_t cap = buf->cap ? buf->cap : 256;
        while (cap - buf->len < len)
            cap *= 2; /* frames are at most 64 MiB, far from overflowing size_t */
        unsigned char *grown = realloc(buf->data, cap);
        if (!grown)
            return NULL;
        buf->data = grown;
        buf->cap = cap;
    }
    unsigned char *out = buf->data + buf->len;
    buf->len += len;
    return out;
}

int wire_append(fl_wire_buf *buf, const void *bytes, size_t len)
{
    unsigned char *out = wire_extend(buf, len);
    if (!out)
        return -1;
    if (len)
        memcpy(out, bytes, len);
    return 0;
}
