/* status.h: how an internal function says why it failed: a canonical code
 * (fl_error_code, TensorFlow's) and a message of a stated size, set where the
 * failure is seen, so that its code reaches the session and the wire as is. */
#ifndef FLOWLAB_STATUS_H
#define FLOWLAB_STATUS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "flowlab.h"

#define FL_STATUS_MESSAGE_LEN 512 /* FL_ERROR_LEN: a status fits the public channels whole */

/* Starts as {0}: FL_OK with no message. */
typedef struct {
    fl_error_code code;
    char message[FL_STATUS_MESSAGE_LEN];
} fl_status;

static inline bool fl_status_ok(const fl_status *st) { return st->code == FL_OK; }

/* Records a failure (FL_OK is taken as FL_UNKNOWN: a failure is never OK);
 * the arguments may include st->message. Returns -1, the failure of most
 * callers, so that a failure site can end with return fl_status_set(...).
 * Inline, so that a backend module linked with no symbol of the core (the
 * CUDA module, src/backend_entry.h) reports through it too. */
static inline int fl_status_set(fl_status *st, fl_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int fl_status_set(fl_status *st, fl_error_code code, const char *fmt, ...)
{
    char message[FL_STATUS_MESSAGE_LEN]; /* a copy first: the arguments may include st->message */
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    snprintf(st->message, sizeof st->message, "%s", message);
    st->code = code == FL_OK ? FL_UNKNOWN : code;
    return -1;
}

#endif
