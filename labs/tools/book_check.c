/* book_check.c: keeps the book's code quotes equal to the labs' real source.
 *
 * In a chapter, a quote is an include line followed by a fenced code block:
 *
 *     <!-- include: labs/01-single-device/single_device.c#model -->
 *     ```c
 *     ...the lines of region "model"...
 *     ```
 *
 * In the source file, a region is the lines between a line holding
 * "[book:model]" and a line holding "[end:model]" (as comments: `// [book:model]`,
 * `# [book:model]`). The marker lines themselves, and the markers of any
 * region nested inside, are not part of the quote.
 *
 * book_check FILE.md...          fails (exit 1), naming the chapter, line and
 *                                region, when a region is gone or a block differs
 * book_check --write FILE.md...  rewrites every block from its region instead
 *
 * Paths in include lines are relative to the directory book_check runs in (the
 * top of the repository, as `make book-check` runs it). This is not a Markdown
 * parser: it only looks for include lines (at the start of a line; an
 * indented one is an example, not a quote) and the fence that follows each. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INCLUDE_OPEN "<!-- include:"
#define INCLUDE_CLOSE "-->"

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
    if (begin < 0 || end < 0) {
        if (begin < 0)
            snprintf(why, len, "region '%s' no longer exists in %s (no [book:%s] line)", name,
                     source, name);
        else
            snprintf(why, len, "region '%s' in %s is never closed (no [end:%s] line)", name,
                     source, name);
        lines_free(&file);
        return -1;
    }
    for (int i = begin + 1; i < end; i++)
        if (!is_any_marker(file.lines[i]))
            lines_push(out, file.lines[i], strlen(file.lines[i]));
    lines_free(&file);
    return 0;
}

static bool is_fence(const char *line)
{
    return strncmp(line, "```", 3) == 0;
}

/* Parses "<!-- include: PATH#NAME -->"; false if the line is not one. */
static bool parse_include(const char *line, char *path, size_t plen, char *name, size_t nlen)
{
    const char *p = line; /* at the start of the line: an indented one is an example */
    if (strncmp(p, INCLUDE_OPEN, strlen(INCLUDE_OPEN)) != 0)
        return false;
    p += strlen(INCLUDE_OPEN);
    while (*p == ' ')
        p++;
    const char *hash = strchr(p, '#'), *close = strstr(p, INCLUDE_CLOSE);
    if (!hash || !close || hash > close)
        return false;
    const char *name_end = close;
    while (name_end > hash + 1 && name_end[-1] == ' ')
        name_end--;
    snprintf(path, plen, "%.*s", (int)(hash - p), p);
    snprintf(name, nlen, "%.*s", (int)(name_end - hash - 1), hash + 1);
    return path[0] && name[0];
}

/* Checks (or, when write is set, rewrites) one chapter; returns the number of
 * problems found. */
static int check_chapter(const char *chapter, bool write, int *quotes)
{
    lines md = {0}, result = {0};
    if (!read_lines(chapter, &md)) {
        fprintf(stderr, "%s: cannot read the chapter\n", chapter);
        return 1;
    }
    int problems = 0;
    bool changed = false;
    for (int i = 0; i < md.count; i++) {
        lines_push(&result, md.lines[i], strlen(md.lines[i]));
        char path[512], name[128], why[1024];
        if (!parse_include(md.lines[i], path, sizeof path, name, sizeof name))
            continue;
        (*quotes)++;
        int fence = i + 1;
        if (fence >= md.count || !is_fence(md.lines[fence])) {
            fprintf(stderr, "%s:%d: the include of %s#%s must be followed by a ``` code block\n",
                    chapter, i + 1, path, name);
            problems++;
            continue;
        }
        int close = fence + 1;
        while (close < md.count && !is_fence(md.lines[close]))
            close++;
        if (close >= md.count) {
            fprintf(stderr, "%s:%d: the code block for %s#%s is never closed\n", chapter,
                    fence + 1, path, name);
            problems++;
            continue;
        }
        lines region = {0};
        if (find_region(path, name, &region, why, sizeof why) != 0) {
            fprintf(stderr, "%s:%d: %s\n", chapter, i + 1, why);
            problems++;
            lines_free(&region);
            continue;
        }
        int block = close - fence - 1, differ = -1;
        for (int k = 0; differ < 0 && (k < block || k < region.count); k++)
            if (k >= block || k >= region.count || strcmp(md.lines[fence + 1 + k], region.lines[k]))
                differ = k;
        if (differ >= 0 && write) {
            lines_push(&result, md.lines[fence], strlen(md.lines[fence]));
            for (int k = 0; k < region.count; k++)
                lines_push(&result, region.lines[k], strlen(region.lines[k]));
            lines_push(&result, md.lines[close], strlen(md.lines[close]));
            printf("%s:%d: updated %s#%s\n", chapter, i + 1, path, name);
            i = close;
            changed = true;
        } else if (differ >= 0) {
            fprintf(stderr, "%s:%d: the code block differs from region '%s' of %s at its line %d\n"
                            "  book: %s\n  code: %s\n  (edit one of them, or run `make book-sync`)\n",
                    chapter, fence + 2 + differ, name, path, differ + 1,
                    differ < block ? md.lines[fence + 1 + differ] : "(the block ends here)",
                    differ < region.count ? region.lines[differ] : "(the region ends here)");
            problems++;
        }
        lines_free(&region);
    }
    if (changed) {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s.tmp", chapter);
        FILE *f = fopen(tmp, "w");
        for (int i = 0; f && i < result.count; i++)
            fprintf(f, "%s\n", result.lines[i]);
        if (!f || fclose(f) != 0 || rename(tmp, chapter) != 0) {
            fprintf(stderr, "%s: cannot rewrite the chapter\n", chapter);
            problems++;
        }
    }
    lines_free(&md);
    lines_free(&result);
    return problems;
}

int main(int argc, char **argv)
{
    bool write = false;
    int first = 1, problems = 0, quotes = 0;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: book_check [--write] FILE.md...\n"
               "Checks that every `<!-- include: PATH#REGION -->` quote in the chapters equals\n"
               "the lines between `[book:REGION]` and `[end:REGION]` in PATH.\n"
               "  --write   rewrite the quotes from the source instead of checking them\n");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--write") == 0) {
        write = true;
        first = 2;
    }
    if (first >= argc) {
        fprintf(stderr, "book_check: no chapters given (see --help)\n");
        return 2;
    }
    for (int i = first; i < argc; i++)
        problems += check_chapter(argv[i], write, &quotes);
    if (problems) {
        fprintf(stderr, "book_check: %d problem%s in %d quote%s\n", problems,
                problems == 1 ? "" : "s", quotes, quotes == 1 ? "" : "s");
        return 1;
    }
    printf("book_check: %d quote%s in %d chapter%s match the code\n", quotes,
           quotes == 1 ? "" : "s", argc - first, argc - first == 1 ? "" : "s");
    return 0;
}
