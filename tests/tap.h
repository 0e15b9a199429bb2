/* tap.h: the Test Anything Protocol in a few functions, for prove.
 * Each test file is a program: plan, then ok/is_near/is_string, then done. */
#ifndef FLOWLAB_TAP_H
#define FLOWLAB_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count, tap_failed;

static inline bool ok(bool pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool ok(bool pass, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    printf("%s %d - ", pass ? "ok" : "not ok", ++tap_count);
    vprintf(fmt, args);
    printf("\n");
    va_end(args);
    if (!pass)
        tap_failed++;
    fflush(stdout);
    return pass;
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Each line gets its own "# ": prove shows comment lines of a failing test
 * and drops the rest, so a program's output quoted here stays readable in CI. */
static inline void diag(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(NULL, 0, fmt, args);
    va_end(args);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!text)
        return;
    va_start(args, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, args);
    va_end(args);
    const char *line = text;
    for (;;) {
        const char *end = strchr(line, '\n');
        printf("# %.*s\n", end ? (int)(end - line) : (int)strlen(line), line);
        if (!end || end[1] == '\0')
            break;
        line = end + 1;
    }
    free(text);
    fflush(stdout);
}

/* |got - want| <= tol * max(1, |want|) */
static inline bool is_near(double got, double want, double tol, const char *what)
{
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    bool pass = fabs(got - want) <= tol * scale;
    ok(pass, "%s", what);
    if (!pass)
        diag("got %.8g, want %.8g (tolerance %.3g)", got, want, tol);
    return pass;
}

static inline bool is_string(const char *got, const char *want, const char *what)
{
    bool pass = got && want && strcmp(got, want) == 0;
    ok(pass, "%s", what);
    if (!pass)
        diag("got  '%s'\n# want '%s'", got ? got : "(null)", want ? want : "(null)");
    return pass;
}

static inline bool contains(const char *got, const char *want, const char *what)
{
    bool pass = got && want && strstr(got, want) != NULL;
    ok(pass, "%s", what);
    if (!pass)
        diag("got  '%s'\n# want it to contain '%s'", got ? got : "(null)", want ? want : "(null)");
    return pass;
}

/* One test skipped, with the reason's first line (TAP wants one line). */
static inline void skip(const char *what, const char *why)
{
    printf("ok %d - %s # SKIP %.*s\n", ++tap_count, what, (int)strcspn(why, "\n"), why);
    fflush(stdout);
}

static inline void skip_all(const char *why)
{
    printf("1..0 # SKIP %s\n", why);
    exit(0);
}

static inline int done_testing(void)
{
    printf("1..%d\n", tap_count);
    return tap_failed ? 1 : 0;
}

#endif
