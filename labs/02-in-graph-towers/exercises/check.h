/* check.h: what the check programs of chapter 2 share. A check prints exactly one
 * line, "PASS name" or "FAIL name: reason", and exits 0 only on PASS. */
#ifndef LAB02_CHECK_H
#define LAB02_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exercises.h"

static const char *check_name = "exercise";

static inline void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void fail(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    printf("FAIL %s: ", check_name);
    vprintf(fmt, args);
    printf("\n");
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
