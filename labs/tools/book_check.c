/* book_check.c: keeps the book equal to what it shows. Every fenced block
 * of a chapter is one of three things:
 *
 *   - a code quote: an `<!-- include: PATH#REGION -->` line, then the block,
 *     which must equal the region of PATH (book_quotes.h);
 *   - program output: an `<!-- output: FILE (rerun: KIND) -->` line, then a
 *     ```text block, which must equal FILE, written by a real run
 *     (book_outputs.h says which numbers may differ: speeds and times; KIND
 *     says how `make book-rerun` compares FILE with a fresh run);
 *   - anything else, named by its fence: ```c for an example, ```sh for
 *     commands to type, ```hex for a byte layout... but never ```text, and
 *     never a bare ``` or an indented block, so that no output can be shown
 *     without its file.
 * Between `<!-- names: HEADER -->` and `<!-- end names -->`, every fl_ name
 * must exist in HEADER (book_names.h).
 *
 * book_check FILE.md...          fails (exit 1), naming the chapter, line and
 *                                block, when a block differs or breaks a rule
 * book_check --write FILE.md...  rewrites quotes and outputs from their sources
 * book_check --rerun KIND STORED FRESH
 *                                compares a fresh run with its stored output
 *                                (book_rerun.h); exit 1 naming the first
 *                                differing line
 *
 * Paths are relative to the directory book_check runs in (the top of the
 * repository, as `make book-check` runs it). This is not a Markdown parser:
 * it knows fences, marker lines and indented blocks, nothing else. */
#include "book_lines.h"
#include "book_names.h"
#include "book_outputs.h"
#include "book_quotes.h"
#include "book_rerun.h"

typedef struct {
    const char *chapter;
    bool write, changed;
    int problems, blocks;
    lines result;          /* the chapter as rewritten by --write */
    lines header;          /* the header of an open names region */
    char header_path[512]; /* "" outside a names region */
} chapter_state;

static bool is_fence(const char *line)
{
    return strncmp(line, "```", 3) == 0;
}

static void problem(chapter_state *st, int line, const char *what)
{
    fprintf(stderr, "%s:%d: %s\n", st->chapter, line + 1, what);
    st->problems++;
}

/* What the block after marker line `m` must hold; 1 with want and what set,
 * 0 when m is no marker line, -1 (reported) when its source is unreadable. */
static int marker_source(chapter_state *st, const char *m, int line, lines *want, char *what, size_t len)
{
    char path[512], name[128], why[1024];
    if (parse_include(m, path, sizeof path, name, sizeof name)) {
        snprintf(what, len, "region '%s' of %s", name, path);
        if (find_region(path, name, want, why, sizeof why) == 0)
            return 1;
        problem(st, line, why);
        return -1;
    }
    if (!parse_output(m, path, sizeof path))
        return 0;
    snprintf(what, len, "the output stored in %s", path);
    if (read_lines(path, want))
        return 1;
    snprintf(why, sizeof why, "cannot read %s (`make book-outputs` writes it from a real run)", path);
    problem(st, line, why);
    return -1;
}

/* The block md[fence+1 .. close-1] against want; reports or rewrites. */
static void compare_block(chapter_state *st, const lines *md, int fence, int close, const lines *want,
                          const char *what, bool output)
{
    char *const *block = md->lines + fence + 1;
    int n = close - fence - 1, k = -1;
    if (output)
        k = first_output_difference(block, n, want, 0);
    else
        for (int i = 0; k < 0 && (i < n || i < want->count); i++)
            if (i >= n || i >= want->count || strcmp(block[i], want->lines[i]))
                k = i;
    if (k >= 0 && st->write) {
        lines_push_all(&st->result, want);
        printf("%s:%d: updated from %s\n", st->chapter, fence + 1, what);
        st->changed = true;
        return;
    }
    for (int i = 0; i < n; i++)
        lines_push(&st->result, block[i], strlen(block[i]));
    if (k < 0)
        return;
    fprintf(stderr, "%s:%d: the block differs from %s at its line %d\n  book: %s\n  file: %s\n"
                    "  (edit one of them, or run `make book-sync`)\n",
            st->chapter, fence + 2 + k, what, k + 1, k < n ? block[k] : "(the block ends here)",
            k < want->count ? want->lines[k] : "(the file ends here)");
    st->problems++;
}

/* A fence with no marker line before it: it must say what it is, and it may
 * not pretend to be output. */
static void check_unmarked_fence(chapter_state *st, const char *fence, int line)
{
    const char *info = fence + 3;
    if (*info == '\0')
        problem(st, line, "a bare ``` block: name what it holds (```sh for commands, ```c for code, "
                          "or an output marker and ```text for a program's output)");
    else if (strcmp(info, "text") == 0)
        problem(st, line, "a ```text block is program output: put `<!-- output: book/outputs/NAME.txt -->` "
                          "before it and let `make book-outputs` write that file from a real run");
}

/* Handles the fenced block that opens at md[fence]; returns its closing line. */
static int check_block(chapter_state *st, const lines *md, int fence)
{
    int close = fence + 1;
    while (close < md->count && !is_fence(md->lines[close]))
        close++;
    if (close >= md->count) {
        problem(st, fence, "this ``` block is never closed");
        return md->count;
    }
    lines want = {0};
    char what[700];
    const char *before = fence > 0 ? md->lines[fence - 1] : "";
    int marked = marker_source(st, before, fence - 1, &want, what, sizeof what);
    bool output = strncmp(before, OUTPUT_OPEN, strlen(OUTPUT_OPEN)) == 0;
    lines_push(&st->result, md->lines[fence], strlen(md->lines[fence]));
    if (marked == 0)
        check_unmarked_fence(st, md->lines[fence], fence);
    if (marked == 1 && output && strcmp(md->lines[fence], "```text") != 0)
        problem(st, fence, "an output block opens with ```text");
    if (marked == 1)
        compare_block(st, md, fence, close, &want, what, output);
    else
        for (int i = fence + 1; i < close; i++)
            lines_push(&st->result, md->lines[i], strlen(md->lines[i]));
    lines_push(&st->result, md->lines[close], strlen(md->lines[close]));
    lines_free(&want);
    if (marked == 1)
        st->blocks++;
    return close;
}

/* Opens or closes a names region at md[i], or checks its names inside one. */
static void track_names(chapter_state *st, const char *line, int i)
{
    char path[512];
    if (parse_names(line, path, sizeof path)) {
        lines_free(&st->header);
        snprintf(st->header_path, sizeof st->header_path, "%s", path);
        if (!read_header(path, &st->header))
            problem(st, i, "cannot read the header a names region names");
    } else if (strncmp(line, NAMES_END, strlen(NAMES_END)) == 0) {
        st->header_path[0] = '\0';
    } else if (st->header_path[0]) {
        st->problems += check_names(st->chapter, i + 1, line, &st->header, st->header_path);
    }
}

/* A marker line must be followed by its block; an output marker says how
 * its block is rerun. */
static void check_marker_line(chapter_state *st, const lines *md, int i)
{
    char path[512], name[128], kind[128];
    double rel;
    bool output = parse_output_kind(md->lines[i], path, sizeof path, kind, sizeof kind);
    bool marker = output || parse_include(md->lines[i], path, sizeof path, name, sizeof name);
    if (marker && (i + 1 >= md->count || !is_fence(md->lines[i + 1])))
        problem(st, i, "a marker line must be followed at once by its ``` block");
    if (output && parse_rerun_kind(kind, &rel) < 0)
        problem(st, i, "an output marker ends with how `make book-rerun` checks it: (rerun: exact), "
                       "(rerun: within R) or (rerun: no); labs/tools/book-outputs.sh declares it "
                       "and `make book-outputs` writes it here");
}

/* Checks (or, with --write, rewrites) one chapter; returns its problems. */
static int check_chapter(const char *chapter, bool write, int *blocks)
{
    chapter_state st = {.chapter = chapter, .write = write};
    lines md = {0};
    if (!read_lines(chapter, &md)) {
        fprintf(stderr, "%s: cannot read the chapter\n", chapter);
        return 1;
    }
    for (int i = 0; i < md.count; i++) {
        const char *line = md.lines[i];
        bool after_blank = i > 0 && md.lines[i - 1][0] == '\0';
        if (is_fence(line)) {
            i = check_block(&st, &md, i);
            continue;
        }
        if (after_blank && (strncmp(line, "    ", 4) == 0 || line[0] == '\t'))
            problem(&st, i, "an indented block: fence it instead (```sh for commands, ```c for code, "
                            "an output marker and ```text for output)");
        check_marker_line(&st, &md, i);
        track_names(&st, line, i);
        lines_push(&st.result, line, strlen(line));
    }
    if (st.changed && !write_lines(chapter, &st.result))
        problem(&st, 0, "cannot rewrite the chapter");
    *blocks += st.blocks;
    lines_free(&md);
    lines_free(&st.result);
    lines_free(&st.header);
    return st.problems;
}

int main(int argc, char **argv)
{
    bool write = false;
    int first = 1, problems = 0, blocks = 0;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: book_check [--write] FILE.md...\n"
               "Checks that every `<!-- include: PATH#REGION -->` quote equals the lines between\n"
               "`[book:REGION]` and `[end:REGION]` in PATH, that every `<!-- output: FILE -->`\n"
               "block equals FILE (speeds and times may differ), that no other block is shown\n"
               "as output, and that a `<!-- names: HEADER -->` table names only HEADER's calls.\n"
               "  --write   rewrite the quotes and outputs from their sources instead\n"
               "usage: book_check --rerun KIND STORED FRESH\n"
               "Compares a fresh run with its stored output (KIND: exact, or within R).\n");
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "--rerun") == 0)
        return rerun_compare(argv[2], argv[3], argv[4]);
    if (argc > 1 && strcmp(argv[1], "--write") == 0) {
        write = true;
        first = 2;
    }
    if (first >= argc) {
        fprintf(stderr, "book_check: no chapters given (see --help)\n");
        return 2;
    }
    for (int i = first; i < argc; i++)
        if (strncmp(argv[i], "--", 2) == 0) { /* --write is only first: anything else is a flag it does not know */
            fprintf(stderr, "book_check: unknown flag %s (see --help)\n", argv[i]);
            return 2;
        }
    for (int i = first; i < argc; i++)
        problems += check_chapter(argv[i], write, &blocks);
    if (problems) {
        fprintf(stderr, "book_check: %d problem%s in %d chapter%s\n", problems, problems == 1 ? "" : "s",
                argc - first, argc - first == 1 ? "" : "s");
        return 1;
    }
    printf("book_check: %d quoted or output block%s in %d chapter%s match their sources\n", blocks,
           blocks == 1 ? "" : "s", argc - first, argc - first == 1 ? "" : "s");
    return 0;
}
