/* session_error.c: a session's last error, kept for fl_session_error and
 * mirrored into fl_last_error. Its own file because every part of the
 * executor (session.c, session_copies.c, session_prune.c) reports through it. */
#include <stdarg.h>
#include <stdio.h>

#include "session_internal.h"

const char *fl_session_error(const fl_session *s) { return s->error; }

int fl_session_fail(fl_session *s, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, args);
    va_end(args);
    fl_set_error("%s", s->error);
    return -1;
}
