/* check.h: what every chapter's exercise checks share. A check prints
 * exactly one line, "PASS name" or "FAIL name: reason (edit FILE)", and
 * exits 0 only on PASS; FILE is the exercise file the student changes. */
#ifndef LABS_COMMON_CHECK_H
#define LABS_COMMON_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"

/* Set once by check_start, read by fail and pass. */
static const char *check_name = "exercise";
static const char *check_file = "the exercise file";

/* Names the exercise ("dense-layer") and the file a student edits to solve it
 * (from the top of the repository), for the one line the check prints. */
static inline void check_start(const char *name, const char *exercise_file)
{
    check_name = name;
    check_file = exercise_file;
}

static inline void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void fail(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    printf("FAIL %s: ", check_name);
    vprintf(fmt, args);
    printf(" (edit %s)\n", check_file);
    va_end(args);
    exit(1);
}

static inline void pass(void)
{
    printf("PASS %s\n", check_name);
    exit(0);
}

/* Fails with the graph's first error, if it has one. */
static inline void check_graph(const fl_graph *g)
{
    if (fl_graph_error(g))
        fail("the graph has an error: %s", fl_graph_error(g));
}

/* Runs fetch (or, with fetch NULL, the target) and returns the fetched tensor. */
static inline fl_tensor *run(fl_session *s, const fl_feed *feeds, int nfeeds, fl_node *fetch,
                             fl_node *target)
{
    fl_tensor *out = NULL;
    int rc = fetch ? fl_session_run(s, feeds, nfeeds, &fetch, 1, &out, NULL, 0)
                   : fl_session_run(s, feeds, nfeeds, NULL, 0, NULL, &target, 1);
    if (rc != 0)
        fail("running the graph: %s", fl_session_error(s));
    return out;
}

#endif
