/* errors.c: the per-thread "last error" behind fl_last_error() and
 * fl_last_error_code(): a message for people and a code for programs.
 * Library code reports a user mistake with fl_set_error_code and returns -1
 * or NULL; it never aborts on user input. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "runtime.h"

_Static_assert(FL_STATUS_MESSAGE_LEN == FL_ERROR_LEN, "a status passes into the last error whole");

static _Thread_local char last_error[FL_ERROR_LEN];
static _Thread_local fl_error_code last_code;

const char *fl_last_error(void) { return last_error; }
fl_error_code fl_last_error_code(void) { return last_code; }

const char *fl_error_code_name(fl_error_code code)
{
    static const char *const names[] = {
        "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
        "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
        "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
        "UNAUTHENTICATED",
    };
    if ((int)code < 0 || (size_t)code >= sizeof names / sizeof names[0])
        return "UNKNOWN";
    return names[code];
}

/* Formats into a copy first: the arguments may include the current message. */
static void set_message(fl_error_code code, const char *prefix, const char *fmt, va_list args)
{
    char message[FL_ERROR_LEN];
    vsnprintf(message, sizeof message, fmt, args);
    snprintf(last_error, sizeof last_error, "%s%s", prefix, message);
    last_code = code == FL_OK ? FL_UNKNOWN : code; /* an error is never OK */
}

void fl_set_error(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    set_message(FL_UNKNOWN, "", fmt, args);
    va_end(args);
}

void fl_set_error_code(fl_error_code code, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    set_message(code, "", fmt, args);
    va_end(args);
}

void fl_prefix_error(const char *fmt, ...)
{
    char prefix[FL_ERROR_LEN], rest[FL_ERROR_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, args);
    va_end(args);
    snprintf(rest, sizeof rest, "%s", last_error);
    fl_set_error_code(last_code, "%s%s", prefix, rest);
}

int fl_status_to_last_error(const fl_status *st)
{
    fl_set_error_code(st->code, "%s", st->message);
    return -1;
}

void fl_clear_error(void)
{
    last_error[0] = '\0';
    last_code = FL_OK;
}

fl_error_code fl_errno_code(int err)
{
    switch (err) {
    case ENOENT: case ENOTDIR: return FL_NOT_FOUND;
    case EACCES: case EPERM: case EROFS: return FL_PERMISSION_DENIED;
    case EEXIST: return FL_ALREADY_EXISTS;
    case ENOSPC: case ENOMEM: case EMFILE: return FL_RESOURCE_EXHAUSTED;
    case ECONNREFUSED: case ECONNRESET: case EPIPE: case EHOSTUNREACH: case ENETUNREACH: return FL_UNAVAILABLE;
    case ETIMEDOUT: return FL_DEADLINE_EXCEEDED;
    case EINVAL: return FL_INVALID_ARGUMENT;
    default: return FL_UNKNOWN;
    }
}
