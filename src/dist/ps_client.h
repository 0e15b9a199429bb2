/* ps_client.h: a worker's connection to one ps task. A request goes out at
 * once and returns its id; replies come back in order on a reader thread,
 * so many requests are in flight at a time, and an id is a mark the worker
 * can ask about or wait for (the remote backend's marks are these ids). */
#ifndef FLOWLAB_DIST_PS_CLIENT_H
#define FLOWLAB_DIST_PS_CLIENT_H

#include "connect.h"
#include "wire.h"

typedef struct fl_ps_client fl_ps_client;

/* Connects (waiting for the task as connect.h does) and says HELLO as
 * /job:my_job/task:my_task. NULL after fl_set_error. */
fl_ps_client *fl_ps_client_open(const fl_connect_options *where, const char *my_job, int my_task);
/* Says GOODBYE (this worker has finished) and waits for the answer. */
int fl_ps_client_goodbye(fl_ps_client *c);
void fl_ps_client_close(fl_ps_client *c);

/* Requests: each returns its id, or 0 after fl_set_error (the connection is
 * lost). A VALUE reply's data lands in dst, which must hold `bytes` and stay
 * valid until the request is done; *already (may be NULL) says whether an
 * INIT_VARIABLE found the variable set before. */
uint32_t fl_ps_client_init(fl_ps_client *c, const char *name, const fl_tensor *value, bool *already);
uint32_t fl_ps_client_pull(fl_ps_client *c, const char *name, void *dst, size_t bytes);
uint32_t fl_ps_client_assign(fl_ps_client *c, const char *name, const fl_tensor *value);
uint32_t fl_ps_client_assign_add(fl_ps_client *c, const char *name, const fl_tensor *delta, void *dst,
                                 size_t bytes);
uint32_t fl_ps_client_apply(fl_ps_client *c, const char *name, const fl_wire_optimizer_args *opt,
                            const fl_tensor *grad);

/* The id of the last request sent (0: none yet). */
uint32_t fl_ps_client_last_id(fl_ps_client *c);
/* 1 when the replies up to id have come, 0 when not yet, -1 when the
 * connection was lost before they came. */
int fl_ps_client_done(fl_ps_client *c, uint32_t id);
/* Blocks until the replies up to id have come. 0, or -1 after fl_set_error
 * with the first error a request up to id got (the ps's message, naming
 * the task) or the lost connection. */
int fl_ps_client_wait(fl_ps_client *c, uint32_t id);
/* Bytes sent and received so far, for the lab's "bytes moved per step". */
void fl_ps_client_traffic(fl_ps_client *c, uint64_t *sent, uint64_t *received);

#endif
