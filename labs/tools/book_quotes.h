/* book_quotes.h: the code quotes of the book, for book_check. A quote is
 *
 *     <!-- include: labs/01-single-device/single_device.c#model -->
 *
 * followed by a fenced block; in the source, the region is the lines between
 * a line holding "[book:model]" and one holding "[end:model]" (as comments:
 * `// [book:model]`, `# [book:model]`). The marker lines themselves, and the
 * markers of any region nested inside, are not part of the quote. */
#ifndef FLOWLAB_BOOK_QUOTES_H
#define FLOWLAB_BOOK_QUOTES_H

#include "book_lines.h"

#define INCLUDE_OPEN "<!-- include:"
#define MARKER_CLOSE "-->"

/* True when line holds the marker "[kind:name]" for exactly this name. */
static bool has_marker(const char *line, const char *kind, const char *name)
{
    char marker[256];
    snprintf(marker, sizeof marker, "[%s:%s]", kind, name);
    return strstr(line, marker) != NULL;
}

static bool is_any_marker(const char *line)
{
    return strstr(line, "[book:") || strstr(line, "[end:");
}

/* The lines of region `name` in `source`; returns 0, or -1 with why set. */
static int find_region(const char *source, const char *name, lines *out, char *why, size_t len)
{
    lines file = {0};
    if (!read_lines(source, &file)) {
        snprintf(why, len, "cannot read %s", source);
        return -1;
    }
    int begin = -1, end = -1;
    for (int i = 0; i < file.count && end < 0; i++) {
        if (begin < 0 && has_marker(file.lines[i], "book", name))
            begin = i;
        else if (begin >= 0 && has_marker(file.lines[i], "end", name))
            end = i;
    }
    if (begin < 0)
        snprintf(why, len, "region '%s' no longer exists in %s (no [book:%s] line)", name, source, name);
    else if (end < 0)
        snprintf(why, len, "region '%s' in %s is never closed (no [end:%s] line)", name, source, name);
    for (int i = begin + 1; begin >= 0 && i < end; i++)
        if (!is_any_marker(file.lines[i]))
            lines_push(out, file.lines[i], strlen(file.lines[i]));
    lines_free(&file);
    return begin >= 0 && end >= 0 ? 0 : -1;
}

/* Parses "<!-- include: PATH#NAME -->"; false if the line is not one. Only
 * a line that starts with it counts: an indented one is an example. */
static bool parse_include(const char *line, char *path, size_t plen, char *name, size_t nlen)
{
    const char *p = line;
    if (strncmp(p, INCLUDE_OPEN, strlen(INCLUDE_OPEN)) != 0)
        return false;
    p += strlen(INCLUDE_OPEN);
    while (*p == ' ')
        p++;
    const char *hash = strchr(p, '#'), *close = strstr(p, MARKER_CLOSE);
    if (!hash || !close || hash > close)
        return false;
    const char *name_end = close;
    while (name_end > hash + 1 && name_end[-1] == ' ')
        name_end--;
    snprintf(path, plen, "%.*s", (int)(hash - p), p);
    snprintf(name, nlen, "%.*s", (int)(name_end - hash - 1), hash + 1);
    return path[0] && name[0];
}

#endif
