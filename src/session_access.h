/* session_access.h: what the files that work on a session from outside it
 * may ask, as they do not see its state (session_internal.h): the saver
 * (io/saver.c) its graph and its variables' values, copied off and onto
 * their devices (session_variables.c), or whether they live on a cluster's
 * tasks (io/saver_tasks.c reads them there); the DOT writer its graph, and where
 * each node ran through the public fl_session_node_device. */
#ifndef FLOWLAB_SESSION_ACCESS_H
#define FLOWLAB_SESSION_ACCESS_H

#include "session_error.h"

struct fl_variable_container; /* variable_container.h */

fl_graph *fl_session_graph(const fl_session *s); /* session.c */
/* Whether var has a value in this session: assigned, restored, or (a ps
 * task's) known to have one. */
bool fl_session_variable_initialized(const fl_session *s, const fl_node *var);
/* var's value, copied off its device into a new host tensor; NULL with the
 * error set ("saving VAR: ..."). */
fl_tensor *fl_session_read_variable(fl_session *s, const fl_node *var);
/* Places var and gives it t's value (host memory), done on return; -1 with
 * the error set ("restoring VAR: ..."). */
int fl_session_write_variable(fl_session *s, fl_node *var, const fl_tensor *t);
/* Whether s is the client of a cluster (in-graph across tasks, or a
 * between-graph worker that cuts its own graph), whose variables live on
 * the tasks; session_master.c. */
bool fl_session_in_client(const fl_session *s);
/* A task's partition: each fetch's host tensor is kept from run to run,
 * its memory reused while the value fits, so a warm step allocates none.
 * outputs[i] is then the session's: valid until its next run, never freed
 * by the caller; session_fetch.c. */
void fl_session_keep_fetched_values(fl_session *s);
/* A task's partition: its Send and Recv nodes run on d, the task's
 * rendezvous (distributed_runtime/partition/rendezvous_device.h); session.c. */
void fl_session_set_rendezvous(fl_session *s, fl_device *d);
/* A task's partition: its host-placed variables live in c, shared with
 * every other session given c (variable_container.h); before its first
 * run. session_container.c. */
void fl_session_set_variable_container(fl_session *s, struct fl_variable_container *c);

#endif
