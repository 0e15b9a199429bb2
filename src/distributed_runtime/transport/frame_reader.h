/* frame_reader.h: frames, one at a time, from a blocking socket (a
 * worker's reader thread). A big VALUE's tensor data can be received
 * straight into the buffer that awaits it, sparing a copy per pull. */
#ifndef FLOWLAB_DIST_FRAME_READER_H
#define FLOWLAB_DIST_FRAME_READER_H

#include <stddef.h>

#include "wire.h"

/* Where a big VALUE's data should go, given the frame its header announces:
 * a buffer of *bytes bytes, or NULL to receive it with the rest. */
typedef void *(*fl_value_destination)(void *ctx, const fl_wire_frame *announced, size_t *bytes);

/* Reads one frame into buf (grown as needed). 1: a frame in *f, whose
 * payload is checked by the parse; 0: the stream ended before a frame; -1:
 * a bad frame or a failed socket, and st says which; -2: the peer speaks
 * TLS (its bytes are a TLS record: st names the flags). destination may be
 * NULL. When it names a buffer of exactly the frame's tensor data size, the
 * data lands there and f->tail points at it. */
int fl_read_frame(int fd, fl_wire_buf *buf, fl_wire_frame *f, fl_value_destination destination, void *ctx,
                  fl_status *st);

#endif
