/* session_error.c: a session's last error and its code, kept for
 * fl_session_error and mirrored into fl_last_error. Its own file because
 * every part of the session, and the saver, report through it
 * (session_error.h). */
#include <stdarg.h>
#include <stdio.h>

#include "session_internal.h"

const char *fl_session_error(const fl_session *s) { return s ? s->error.message : "the session is NULL"; }
fl_error_code fl_session_error_code(const fl_session *s)
{
    if (!s)
        return FL_INVALID_ARGUMENT;
    return s->error.message[0] ? s->error.code : FL_OK;
}

void fl_session_clear_error(fl_session *s) { s->error.message[0] = '\0'; }

static int fail(fl_session *s, fl_error_code code, const char *fmt, va_list args)
{
    vsnprintf(s->error.message, sizeof s->error.message, fmt, args);
    fl_set_error_code(code, "%s", s->error.message);
    s->error.code = fl_last_error_code(); /* never OK */
    return -1;
}

int fl_session_fail(fl_session *s, const char *fmt, ...)
{
    fl_error_code code = fl_last_error_code(); /* read before the arguments' message is replaced */
    va_list args;
    va_start(args, fmt);
    fail(s, code, fmt, args);
    va_end(args);
    return -1;
}

int fl_session_fail_code(fl_session *s, fl_error_code code, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    fail(s, code, fmt, args);
    va_end(args);
    return -1;
}
