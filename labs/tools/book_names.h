/* book_names.h: API names in a table of the book must exist, for
 * book_check. Between the lines
 *
 *     <!-- names: src/flowlab.h -->
 *     <!-- end names -->
 *
 * every identifier that starts with `fl_` or `FL_` must occur, as a whole
 * word, in the named header: a table that maps another library's calls to
 * flowlab's cannot name a function flowlab does not have. */
#ifndef FLOWLAB_BOOK_NAMES_H
#define FLOWLAB_BOOK_NAMES_H

#include <ctype.h>

#include "book_lines.h"

#define NAMES_OPEN "<!-- names:"
#define NAMES_END "<!-- end names -->"

static bool is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Parses "<!-- names: PATH -->"; false if the line is not one. */
static bool parse_names(const char *line, char *path, size_t plen)
{
    return parse_marker(line, NAMES_OPEN, path, plen);
}

/* True when `word` (len characters) occurs as a whole word in the header. */
static bool header_has_word(const lines *header, const char *word, size_t len)
{
    for (int i = 0; i < header->count; i++)
        for (const char *p = header->lines[i]; (p = strstr(p, word)) != NULL; p++) {
            bool starts = p == header->lines[i] || !is_word_char(p[-1]);
            if (starts && !is_word_char(p[len]))
                return true;
        }
    return false;
}

/* The header and the headers beside it that it includes by a quoted name,
 * and theirs, `depth` levels down (flowlab_cluster.h includes flowlab.h,
 * which goes on in flowlab_monitored.h); a header met twice is read twice. */
static bool read_header_to(const char *path, lines *out, int depth)
{
    if (!read_lines(path, out))
        return false;
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    int own = out->count;
    for (int i = 0; i < own; i++) {
        char name[256], included[512];
        if (sscanf(out->lines[i], "#include \"%255[^\"]\"", name) != 1)
            continue;
        snprintf(included, sizeof included, "%.*s%s", dir_len, path, name);
        lines more = {0};
        if (depth > 0 && strcmp(included, path) != 0 && read_header_to(included, &more, depth - 1))
            lines_push_all(out, &more);
        lines_free(&more);
    }
    return true;
}

static bool read_header(const char *path, lines *out) { return read_header_to(path, out, 2); }

/* Reports each fl_/FL_ name of one chapter line that the header lacks;
 * returns how many. */
static int check_names(const char *chapter, int line_no, const char *line, const lines *header,
                       const char *header_path)
{
    int problems = 0;
    for (const char *p = line; *p; p++) {
        if ((p != line && is_word_char(p[-1])) || (strncmp(p, "fl_", 3) && strncmp(p, "FL_", 3)))
            continue;
        size_t len = 0;
        while (is_word_char(p[len]))
            len++;
        char word[128];
        snprintf(word, sizeof word, "%.*s", (int)len, p);
        if (!header_has_word(header, word, strlen(word))) {
            fprintf(stderr, "%s:%d: %s is not declared in %s (a name in this table must exist)\n",
                    chapter, line_no, word, header_path);
            problems++;
        }
        p += len - 1;
    }
    return problems;
}

#endif
