/* task_client.h: a connection to one task (a master's to the task
 * servers, a task's to its peers). A request goes out at once and returns
 * its id; replies come back in order on a reader thread, so many requests
 * are in flight at a time, and an id is a mark the sender can wait for. */
#ifndef FLOWLAB_DIST_PS_CLIENT_H
#define FLOWLAB_DIST_PS_CLIENT_H

#include "connect.h"
#include "wire.h"

typedef struct fl_task_client fl_task_client;

/* Connects (waiting for the task as connect.h does) and says HELLO as
 * /job:my_job/task:my_task, numbering requests from first_id + 1: a
 * connection made again after one was lost goes on from the old one's ids,
 * so no mark taken before can be mistaken for a request of the new one.
 * NULL after fl_set_error. fl_task_client_open: a first connection. */
fl_task_client *fl_task_client_reopen(const fl_connect_options *where, const char *my_job, int my_task,
                                  uint32_t first_id);
static inline fl_task_client *fl_task_client_open(const fl_connect_options *where, const char *my_job, int my_task)
{
    return fl_task_client_reopen(where, my_job, my_task, 0);
}
/* For a request's sender: the buffer to encode request `*id` into (the
 * send lock is taken), then finish: encoded is the encoder's result; the
 * request is queued for its reply (an INIT_DONE's flag lands in *has_value,
 * which may be NULL) and sent, and the lock released. finish returns the
 * id, or 0 after fl_set_error. */
fl_wire_buf *fl_task_client_begin(fl_task_client *c, uint32_t *id);
uint32_t fl_task_client_finish(fl_task_client *c, int encoded, uint32_t id, fl_wire_type type, bool *has_value,
                               const char *name);
/* The same for a reply the caller reads whole: take(frame, message, user)
 * runs on the reader thread when the reply comes, ERROR included (with
 * frame and message NULL when the connection is lost first), and
 * copies what it needs: the request's outcome is the caller's to keep, so
 * requests in flight at once from several threads (a run, and the abort of
 * its step) each get their own. fl_task_client_wait then fails only for a
 * lost connection or the deadline. */
typedef void (*fl_ps_reply_fn)(const fl_wire_frame *f, const fl_wire_message *m, void *user);
uint32_t fl_task_client_finish_taking(fl_task_client *c, int encoded, uint32_t id, fl_wire_type type,
                                    fl_ps_reply_fn take, void *user, const char *name);
/* The task at the other end: "/job:ps/task:0". */
const char *fl_task_client_peer(const fl_task_client *c);
/* Waits until the requests sent are on the wire, lent bytes included
 * (fl_socket_writer_wait_written, up to the task deadline). */
void fl_task_client_wait_written(fl_task_client *c);

/* Says GOODBYE (this worker has finished) and waits for the answer. */
int fl_task_client_goodbye(fl_task_client *c);
void fl_task_client_close(fl_task_client *c);

/* Whether the variable has a value on the task: *has_value set when done.
 * Returns the request's id, or 0 after fl_set_error (the connection is lost). */
uint32_t fl_task_client_is_initialized(fl_task_client *c, const char *name, bool *has_value);
/* True once the connection is lost: requests fail until a new one is made. */
bool fl_task_client_broken(fl_task_client *c);
/* Closes the connection to a task that stopped answering, as if lost
 * ("lost the connection to <task>: why"): replies taken whole learn it at
 * once and no later reply reaches them; fl_cluster_reconnect makes it anew. */
void fl_task_client_give_up(fl_task_client *c, const char *why);

/* The id of the last request sent (0: none yet). */
uint32_t fl_task_client_last_id(fl_task_client *c);
/* Blocks until the replies up to id have come, with a line every few
 * seconds saying what it waits for, and up to the task deadline. 0, or -1
 * after fl_set_error with the first error a request up to id got (the ps's
 * message, naming the task), the lost connection, or the deadline. */
int fl_task_client_wait(fl_task_client *c, uint32_t id);
/* Bytes sent and received so far, for the lab's "bytes moved per step". */
void fl_task_client_traffic(fl_task_client *c, uint64_t *sent, uint64_t *received);

#endif
