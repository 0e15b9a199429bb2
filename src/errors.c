/* errors.c: the per-thread "last error" message behind fl_last_error().
 * Library code reports a user mistake with fl_set_error and returns -1 or
 * NULL; it never aborts on user input. */
#include <stdarg.h>
#include <stdio.h>

#include "runtime.h"

static _Thread_local char last_error[FL_ERROR_LEN];

const char *fl_last_error(void) { return last_error; }

void fl_set_error(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
}

void fl_clear_error(void) { last_error[0] = '\0'; }
