/* book_lines.h: a file as an array of lines, for book_check: read a chapter,
 * a source file or a stored output, build the rewritten chapter, and read a
 * chapter's marker lines ("<!-- output: PATH -->"). Lines are kept without
 * their newline (and without a "\r" before it). */
#ifndef FLOWLAB_BOOK_LINES_H
#define FLOWLAB_BOOK_LINES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct {
    char **lines;
    int count;
} lines;

static void lines_push(lines *l, const char *text, size_t len)
{
    l->lines = realloc(l->lines, (size_t)(l->count + 1) * sizeof *l->lines);
    char *copy = malloc(len + 1);
    if (!l->lines || !copy) {
        fprintf(stderr, "book_check: out of memory\n");
        exit(1);
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    l->lines[l->count++] = copy;
}

static void lines_push_all(lines *l, const lines *from)
{
    for (int i = 0; i < from->count; i++)
        lines_push(l, from->lines[i], strlen(from->lines[i]));
}

static void lines_free(lines *l)
{
    for (int i = 0; i < l->count; i++)
        free(l->lines[i]);
    free(l->lines);
    l->lines = NULL;
    l->count = 0;
}

/* Reads a whole file as lines without their newlines; false if it cannot. */
static bool read_lines(const char *path, lines *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        lines_push(out, line, (size_t)len);
    }
    free(line);
    fclose(f);
    return true;
}

/* Writes the lines to path through a temporary file and a rename. */
static bool write_lines(const char *path, const lines *l)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    for (int i = 0; f && i < l->count; i++)
        fprintf(f, "%s\n", l->lines[i]);
    return f && fclose(f) == 0 && rename(tmp, path) == 0;
}

/* Parses a marker line "OPEN PATH -->" (OPEN is "<!-- output:" or the like)
 * into path; false if the line is not one. Only a line that starts with it
 * counts: an indented one is an example. */
static bool parse_marker(const char *line, const char *open, char *path, size_t plen)
{
    if (strncmp(line, open, strlen(open)) != 0)
        return false;
    const char *p = line + strlen(open), *close = strstr(p, "-->");
    while (*p == ' ')
        p++;
    if (!close)
        return false;
    const char *end = close;
    while (end > p && end[-1] == ' ')
        end--;
    snprintf(path, plen, "%.*s", (int)(end - p), p);
    return path[0] != '\0';
}

#endif
