/* hostlist.c: expands Slurm's compressed host lists (see hostlist.h). A list
 * is names separated by top-level commas; each name is expanded left to
 * right, one bracket at a time, every number of the bracket combined with
 * every expansion of what follows it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "hostlist.h"

/* A growing list of names. */
typedef struct {
    char **names;
    int count, capacity;
} name_list;

static int add_name(name_list *l, char *name, const char *hostlist)
{
    if (l->count == FL_HOSTLIST_MAX_HOSTS) {
        free(name);
        fl_set_error_code(FL_INVALID_ARGUMENT, "host list \"%s\": more than %d hosts", hostlist, FL_HOSTLIST_MAX_HOSTS);
        return -1;
    }
    if (l->count == l->capacity) {
        l->capacity = l->capacity ? 2 * l->capacity : 8;
        l->names = fl_xrealloc(l->names, (size_t)l->capacity * sizeof *l->names);
    }
    l->names[l->count++] = name;
    return 0;
}

void fl_hostlist_free(char **hosts, int count)
{
    for (int i = 0; i < count; i++)
        free(hosts[i]);
    free(hosts);
}

/* One number or range of a bracket, "7" or "08-10": its bounds and the
 * width of its first number (for zero padding). -1 when it is not one. */
static int parse_range(const char *text, size_t len, long *lo, long *hi, int *width)
{
    const char *dash = memchr(text, '-', len);
    size_t lo_len = dash ? (size_t)(dash - text) : len;
    size_t hi_len = dash ? len - lo_len - 1 : 0;
    if (lo_len == 0 || lo_len > 9 || (dash && (hi_len == 0 || hi_len > 9)))
        return -1;
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)text[i]) && text + i != dash)
            return -1;
    *lo = strtol(text, NULL, 10);
    *hi = dash ? strtol(dash + 1, NULL, 10) : *lo;
    *width = (int)lo_len;
    return *lo <= *hi ? 0 : -1;
}

static int expand_name(const char *name, size_t len, name_list *out, const char *hostlist);

/* prefix, then each number of one range ("08-10"), then each of suffixes. */
static int expand_range(const char *prefix, int prefix_len, const char *range, size_t range_len,
                        const name_list *suffixes, name_list *out, const char *hostlist)
{
    long lo, hi;
    int width;
    if (parse_range(range, range_len, &lo, &hi, &width) != 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "host list \"%s\": \"%.*s\" is not a number or a range from low to high such as 1-3",
                          hostlist, (int)range_len, range);
        return -1;
    }
    for (long n = lo; n <= hi; n++)
        for (int k = 0; k < suffixes->count; k++) {
            size_t size = (size_t)prefix_len + 12 + strlen(suffixes->names[k]);
            char *host = fl_xmalloc(size);
            snprintf(host, size, "%.*s%0*ld%s", prefix_len, prefix, width, n, suffixes->names[k]);
            if (add_name(out, host, hostlist) != 0)
                return -1;
        }
    return 0;
}

/* name is prefix "[" ranges "]" rest: every number of the ranges, each
 * followed by every expansion of rest. */
static int expand_bracket(const char *name, size_t len, const char *open, name_list *out,
                          const char *hostlist)
{
    const char *close = memchr(open, ']', len - (size_t)(open - name));
    if (!close) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "host list \"%s\": a '[' without its ']'", hostlist);
        return -1;
    }
    if (memchr(open + 1, '[', (size_t)(close - open - 1))) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "host list \"%s\": brackets inside brackets", hostlist);
        return -1;
    }
    name_list suffixes = {0};
    const char *after = close + 1;
    int rc = expand_name(after, len - (size_t)(after - name), &suffixes, hostlist);
    for (const char *range = open + 1; rc == 0;) {
        const char *comma = memchr(range, ',', (size_t)(close - range));
        const char *end = comma ? comma : close;
        rc = expand_range(name, (int)(open - name), range, (size_t)(end - range), &suffixes, out,
                          hostlist);
        if (!comma)
            break;
        range = comma + 1;
    }
    fl_hostlist_free(suffixes.names, suffixes.count);
    return rc;
}

/* One name of the list (no top-level comma): its expansions, appended to out. */
static int expand_name(const char *name, size_t len, name_list *out, const char *hostlist)
{
    const char *open = memchr(name, '[', len);
    const char *close = memchr(name, ']', len);
    if (close && (!open || close < open)) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "host list \"%s\": a ']' without its '['", hostlist);
        return -1;
    }
    if (open)
        return expand_bracket(name, len, open, out, hostlist);
    char *host = fl_xmalloc(len + 1);
    memcpy(host, name, len);
    host[len] = '\0';
    return add_name(out, host, hostlist);
}

int fl_hostlist_expand(const char *hostlist, char ***hosts)
{
    name_list out = {0};
    *hosts = NULL;
    int depth = 0;
    const char *start = hostlist;
    for (const char *p = hostlist;; p++) {
        depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
        if (*p && (*p != ',' || depth > 0))
            continue;
        if (p == start) {
            fl_set_error_code(FL_INVALID_ARGUMENT, "host list \"%s\": an empty host name", hostlist);
            fl_hostlist_free(out.names, out.count);
            return -1;
        }
        if (expand_name(start, (size_t)(p - start), &out, hostlist) != 0) {
            fl_hostlist_free(out.names, out.count);
            return -1;
        }
        if (!*p)
            break;
        start = p + 1;
    }
    *hosts = out.names;
    return out.count;
}
