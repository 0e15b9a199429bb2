/* monitored_session.h: what the built-in hooks (session_hooks.c) need from
 * a monitored session beyond the public API: where its lines go. */
#ifndef FLOWLAB_MONITORED_SESSION_H
#define FLOWLAB_MONITORED_SESSION_H

#include <stdio.h>

#include "runtime.h"

FILE *fl_monitored_session_log(const fl_monitored_session *ms);
/* "worker 1: " with a cluster, "" without: every line starts with it. */
const char *fl_monitored_session_who(const fl_monitored_session *ms);

#endif
