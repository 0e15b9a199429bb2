/* socket_writer.h: the sending side of a connection, as a thread of its own.
 * A caller hands over an encoded frame and goes on at once; the writer puts
 * frames on the socket in the order they were handed over. So a worker's
 * executor never waits for a busy ps to drain its socket while its device
 * could be computing the next gradient. */
#ifndef FLOWLAB_DIST_SOCKET_WRITER_H
#define FLOWLAB_DIST_SOCKET_WRITER_H

#include <stddef.h>

#include "wire.h"

typedef struct fl_socket_writer fl_socket_writer;

/* 0 once all len bytes are on fd, -1 (errno set) when the socket failed. */
int fl_socket_write_all(int fd, const unsigned char *p, size_t len);

/* For a thread whose socket writes cannot pass MSG_NOSIGNAL (libevent's
 * writev in a server's loop, OpenSSL's in a TLS tunnel): a write to a peer
 * that has gone then fails EPIPE instead of killing the process with
 * SIGPIPE. The signal is blocked in the calling thread only. */
void fl_socket_writes_fail_quietly(void);

/* Starts the writer thread for fd (which the caller keeps and closes). NULL
 * when no thread could be made. */
fl_socket_writer *fl_socket_writer_start(int fd);
/* Takes buf's bytes (buf is left empty, its memory swapped for a recycled
 * buffer) and queues them. Waits while more than a bound's worth of bytes
 * are queued, so a slow peer holds back the sender, not its memory. -1 once
 * the socket has failed: the writer then shuts it down, so that a reader of
 * the same socket sees the end too. */
int fl_socket_writer_send(fl_socket_writer *w, fl_wire_buf *buf);
/* Waits until every frame handed over is out, its lent bytes (buf->lent)
 * included, so that their owner may reuse them; past deadline_s the socket
 * is shut down, which ends a write to a peer that reads nothing. */
void fl_socket_writer_wait_written(fl_socket_writer *w, double deadline_s);
/* Sends what is queued, unless the socket fails first, and stops. Shut the
 * socket down first to stop at once. */
void fl_socket_writer_stop(fl_socket_writer *w);

#endif
