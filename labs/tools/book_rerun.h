/* book_rerun.h: a fresh run of an output block against its stored file, for
 * `book_check --rerun KIND STORED FRESH` (labs/tools/book-outputs.sh --rerun,
 * `make book-rerun`). KIND is the block's marker kind: "exact" or "within R". */
#ifndef FLOWLAB_BOOK_RERUN_H
#define FLOWLAB_BOOK_RERUN_H

#include "book_outputs.h"

#define CPU_LINE "# cpu: "

/* Reads a marker's kind: 1 for a rerun ("exact" sets rel 0, "within R" sets
 * R), 0 for "no" (not rerun), -1 for anything else. */
static int parse_rerun_kind(const char *kind, double *rel)
{
    char *end = NULL;
    *rel = 0;
    if (strcmp(kind, "exact") == 0)
        return 1;
    if (strcmp(kind, "no") == 0)
        return 0;
    if (strncmp(kind, "within ", 7) != 0)
        return -1;
    *rel = strtod(kind + 7, &end);
    return end != kind + 7 && *end == '\0' && *rel > 0 && *rel < 1 ? 1 : -1;
}

/* Drops the "# cpu: MODEL" line a file names its CPU by: it says where the
 * stored output was made, which a rerun elsewhere need not share. Returns 1
 * when there was one (older files have none), else 0. */
static int drop_cpu_line(lines *l)
{
    for (int i = 0; i < l->count; i++) {
        if (strncmp(l->lines[i], CPU_LINE, strlen(CPU_LINE)) != 0)
            continue;
        free(l->lines[i]);
        memmove(l->lines + i, l->lines + i + 1, (size_t)(l->count - i - 1) * sizeof *l->lines);
        l->count--;
        return 1;
    }
    return 0;
}

/* Compares FRESH with STORED under KIND; prints the first differing line and
 * returns 1, or 0 when they agree, 2 when a file or the kind is unusable. */
static int rerun_compare(const char *kind, const char *stored_path, const char *fresh_path)
{
    double rel;
    lines stored = {0}, fresh = {0};
    if (parse_rerun_kind(kind, &rel) != 1) {
        fprintf(stderr, "book_check --rerun: '%s' is no kind to rerun (exact or within R)\n", kind);
        return 2;
    }
    if (!read_lines(stored_path, &stored) || !read_lines(fresh_path, &fresh)) {
        fprintf(stderr, "book_check --rerun: cannot read %s or %s\n", stored_path, fresh_path);
        lines_free(&stored);
        return 2;
    }
    int skipped = drop_cpu_line(&stored);
    drop_cpu_line(&fresh);
    int k = first_output_difference(stored.lines, stored.count, &fresh, rel);
    if (k >= 0)
        printf("first difference at line %d of the stored file:\n  stored: %s\n  fresh:  %s\n", k + 1 + skipped,
               k < stored.count ? stored.lines[k] : "(the stored output ends here)",
               k < fresh.count ? fresh.lines[k] : "(the fresh output ends here)");
    lines_free(&stored);
    lines_free(&fresh);
    return k >= 0;
}

#endif
