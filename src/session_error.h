/* session_error.h: how every part of a session, and the saver, reports a
 * failure (session_error.c): the message goes to fl_session_error and
 * fl_last_error. */
#ifndef FLOWLAB_SESSION_ERROR_H
#define FLOWLAB_SESSION_ERROR_H

#include "flowlab.h"

/* fl_session_fail adds context to an error already set (fl_last_error in
 * its arguments) and keeps that error's code; fl_session_fail_code is for a
 * failure found here, with its own code. Both return -1. */
int fl_session_fail(fl_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fl_session_fail_code(fl_session *s, fl_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A run, save or restore starts, or one recovered: fl_session_error is "". */
void fl_session_clear_error(fl_session *s);

#endif
