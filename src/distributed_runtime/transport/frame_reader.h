/* frame_reader.h: frames, one at a time, from a blocking socket (a
 * task client's reader thread, the handshake). */
#ifndef FLOWLAB_DIST_FRAME_READER_H
#define FLOWLAB_DIST_FRAME_READER_H

#include <stddef.h>

#include "wire.h"

/* Reads one frame into buf (grown as needed). 1: a frame in *f, whose
 * body is checked by the parse; 0: the stream ended before a frame; -1:
 * a bad frame or a failed socket, and st says which; -2: the peer speaks
 * TLS (its bytes are a TLS record: st names the flags). */
int fl_read_frame(int fd, fl_wire_buf *buf, fl_wire_frame *f, fl_status *st);

#endif
