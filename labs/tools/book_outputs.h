/* book_outputs.h: the program output the book shows, for book_check. An
 * output block is
 *
 *     <!-- output: book/outputs/01-short-run.txt (rerun: within 1e-3) -->
 *
 * followed by a ```text block that must equal the file, which a real run
 * wrote (`make book-outputs`). The marker says how `make book-rerun` checks
 * the file against a fresh run (book_rerun.h): "exact", "within R" (numbers
 * to a relative tolerance R) or "no" (not rerun; book-outputs.sh says why).
 * Two things may differ, and only these:
 *   - a run of spaces matches a run of any length (columns realign);
 *   - a *volatile* number matches any number. A number is volatile when a
 *     unit of speed, time or ratio follows it: images/sec, img/s, GFLOP/s,
 *     GB/s, MB/s, FLOP/byte, ms, s, % or x ("1.84x"); and every number of a
 *     line that holds a ratio (a row of `make bench`'s table) is volatile.
 * Losses, accuracies, step counts and bytes moved are compared exactly
 * (or, for a rerun "within R", to that relative tolerance). */
#ifndef FLOWLAB_BOOK_OUTPUTS_H
#define FLOWLAB_BOOK_OUTPUTS_H

#include <ctype.h>
#include <math.h>

#include "book_lines.h"

#define OUTPUT_OPEN "<!-- output:"

#define RERUN_OPEN " (rerun: "

/* Parses "<!-- output: PATH (rerun: KIND) -->" into path and kind ("" when
 * the marker names no kind); false if the line is not one. */
static bool parse_output_kind(const char *line, char *path, size_t plen, char *kind, size_t klen)
{
    kind[0] = '\0';
    if (!parse_marker(line, OUTPUT_OPEN, path, plen))
        return false;
    char *rerun = strstr(path, RERUN_OPEN);
    size_t n = rerun ? strlen(rerun) : 0;
    if (!rerun || rerun[n - 1] != ')')
        return true;
    snprintf(kind, klen, "%.*s", (int)(n - strlen(RERUN_OPEN) - 1), rerun + strlen(RERUN_OPEN));
    *rerun = '\0';
    return path[0] != '\0';
}

/* Parses "<!-- output: PATH ... -->"; false if the line is not one. */
static bool parse_output(const char *line, char *path, size_t plen)
{
    char kind[128];
    return parse_output_kind(line, path, plen, kind, sizeof kind);
}

/* The length of the number at p ("265.3", "0"), or 0 when none starts there. */
static size_t number_length(const char *p)
{
    size_t n = 0;
    while (isdigit((unsigned char)p[n]) || (n > 0 && p[n] == '.' && isdigit((unsigned char)p[n + 1])))
        n++;
    return n;
}

/* True when p, just after a number, holds one of the volatile units. */
static bool volatile_unit_follows(const char *p)
{
    static const char *const units[] = {"images/sec", "img/s", "GFLOP/s", "GB/s", "MB/s",
                                        "FLOP/byte", "ms", "s", "%", "x"};
    if (*p == ' ' && p[1] != 'x')
        p++;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        size_t n = strlen(units[i]);
        if (strncmp(p, units[i], n) == 0 && !isalnum((unsigned char)p[n]))
            return true;
    }
    return false;
}

/* A ratio such as "0.95x" makes the whole line a measurement row. */
static bool holds_ratio(const char *line)
{
    for (const char *p = line; *p; p++) {
        size_t n = (p == line || !isalnum((unsigned char)p[-1])) ? number_length(p) : 0;
        if (n && p[n] == 'x' && !isalnum((unsigned char)p[n + 1]))
            return true;
    }
    return false;
}

/* True when the numbers at a and b differ by at most rel of the larger. */
static bool numbers_within(const char *a, const char *b, double rel)
{
    double x = strtod(a, NULL), y = strtod(b, NULL);
    double big = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    return fabs(x - y) <= rel * big;
}

/* Compares one line of the book with the same line of the stored output;
 * rel > 0 lets other numbers differ by that relative tolerance. */
static bool same_output_line(const char *book, const char *file, double rel)
{
    bool row = holds_ratio(book) && holds_ratio(file);
    const char *b = book, *f = file;
    while (*b && *f) {
        bool word_start = b == book || !isalnum((unsigned char)b[-1]);
        size_t nb = word_start ? number_length(b) : 0, nf = word_start ? number_length(f) : 0;
        bool masked = row || (volatile_unit_follows(b + nb) && volatile_unit_follows(f + nf));
        if (nb && nf && (masked || (rel > 0 && numbers_within(b, f, rel)))) {
            b += nb;
            f += nf;
        } else if (*b == ' ' && *f == ' ') {
            while (*b == ' ')
                b++;
            while (*f == ' ')
                f++;
        } else if (*b++ != *f++) {
            return false;
        }
    }
    return *b == *f;
}

/* The first line (0-based) where the block and the stored output differ, or
 * -1 when they match under the rules above (rel: see same_output_line). */
static int first_output_difference(char *const *block, int nblock, const lines *file, double rel)
{
    for (int k = 0; k < nblock || k < file->count; k++)
        if (k >= nblock || k >= file->count || !same_output_line(block[k], file->lines[k], rel))
            return k;
    return -1;
}

#endif
