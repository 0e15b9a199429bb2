/* test_bench_ranges.c: `make bench`'s rows measured in rounds
 * (tests/bench/bench_table.c, included here): each side printed as its
 * lowest-highest, the ratio as the range of the per-round ratios (not the
 * ratio of the ranges), a failed round left out and said, the CSV's medians
 * and ratio range, the targets met in every, some or no round, a target's
 * sides run alternated with their steps pooled, the knobs; and book_check
 * reading such rows as the book shows them. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "tools.h"
#include "bench/bench_table.c"

/* What fn printed on stdout, read back from a file; NULL if it could not be caught. */
static char *printed(void (*fn)(void), const char *path)
{
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    FILE *f = fopen(path, "w");
    if (saved < 0 || !f)
        return NULL;
    dup2(fileno(f), STDOUT_FILENO);
    fn();
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    fclose(f);
    return read_text(path);
}

/* Round by round: ours 100, 120, 110 against 200, 200, 100: the ratios
 * are 0.50, 0.60 and 1.10, while the ranges' ends would give 0.50-1.20. */
static const double ours[] = {100, 120, 110}, theirs[] = {200, 200, 100};
static const double with_failure[] = {100, NAN, 110};

static void three_rounds(void) { row_rounds("scaling", "a comparison", "a label", "img/s", ours, theirs, 3, "base"); }

static void one_failed(void)
{
    row_rounds("scaling", "a failed round", "a label", "img/s", with_failure, theirs, 3, "base");
}

static void targets(void)
{
    target_line("every round", ours, theirs, 3, 0.5);
    target_line("some rounds", ours, theirs, 3, 0.9);
    target_line("no round", ours, theirs, 3, 1.5);
}

static void check_rows(const char *dir)
{
    char out[256], csv[256];
    snprintf(out, sizeof out, "%s/stdout.txt", dir);
    snprintf(csv, sizeof csv, "%s/rows.csv", dir);
    bench_results = fopen(csv, "wb");
    ok(bench_results != NULL, "can write %s", csv);
    if (!bench_results)
        return;
    char *text = printed(three_rounds, out);
    contains(text, "100.0-120.0 img/s", "our side is printed as its lowest-highest over the rounds");
    contains(text, "100.0-200.0 base", "the baseline's side too");
    contains(text, " 0.50-1.10x", "the ratio is the range of the per-round ratios, not of the ranges' ends");
    free(text);
    text = printed(one_failed, out);
    contains(text, "100.0-110.0 img/s", "a failed round (NaN) is left out of the range");
    contains(text, "0.50-1.10x", "and out of the ratios");
    contains(text, "note: a failed round: 1 of 3 rounds failed", "and said in a note");
    free(text);
    text = printed(targets, out);
    contains(text, "every round: met (0.50-1.10x over 3 rounds)", "a target every round meets is met");
    contains(text, "some rounds: met in 1 of 3 rounds (0.50-1.10x)", "one some rounds meet says how many");
    contains(text, "no round: MISSED (0.50-1.10x over 3 rounds)", "one no round meets is missed");
    free(text);
    fclose(bench_results);
    text = read_text(csv);
    contains(text, ",img/s,110.000,base,200.000,0.5500,0.5000,1.1000\r\n",
             "the CSV row holds the medians, their ratio and the per-round ratios' range");
    contains(text, "a failed round,a label,img/s,110.000,base,200.000,0.5500,0.5000,1.1000\r\n",
             "a failed round is left out of the CSV's median too (of two, the upper, as median() takes)");
    free(text);
    unlink(out);
    unlink(csv);
}

static void check_knobs(void)
{
    unsetenv("BENCH_ROUNDS");
    unsetenv("BENCH_QUICK");
    ok(bench_rounds() == 3 && bench_steps() == 40, "by default 3 rounds of 40 steps (got %d of %d)", bench_rounds(),
       bench_steps());
    setenv("BENCH_ROUNDS", "5", 1);
    setenv("BENCH_QUICK", "1", 1);
    ok(bench_rounds() == 5 && bench_steps() == 10, "ROUNDS=5 QUICK=1: 5 rounds of 10 steps (got %d of %d)",
       bench_rounds(), bench_steps());
    setenv("BENCH_ROUNDS", "100", 1);
    ok(bench_rounds() == 3, "more rounds than BENCH_MAX_ROUNDS fall back to 3 (got %d)", bench_rounds());
}

/* A fake lab for run_alternated: says "<name> <steps>" into the order
 * file, then prints <steps> progress lines at the rate 100 times the
 * number of runs so far (the count kept in <name>.runs), or fails. */
static const char fake_lab[] =
    "name=$1; dir=$2; rate=$3; steps=$5\n"
    "[ \"$rate\" = fail ] && exit 1\n"
    "echo \"$name $steps\" >> \"$dir/order\"\n"
    "runs=$(( $(cat \"$dir/$name.runs\" 2>/dev/null || echo 0) + 1 )); echo $runs > \"$dir/$name.runs\"\n"
    "i=0; while [ $i -lt \"$steps\" ]; do echo \"Step $i with loss 1.0 ($((rate * runs)) images/sec)\"; "
    "i=$((i + 1)); done\n";

static void check_alternation(const char *dir)
{
    char script[128], a[256], b[256], failing[256], path[160];
    snprintf(script, sizeof script, "%s/fake_lab.sh", dir);
    FILE *f = fopen(script, "w");
    fputs(fake_lab, f);
    fclose(f);
    snprintf(a, sizeof a, "sh %s A %s 100", script, dir);
    snprintf(b, sizeof b, "sh %s B %s 1000", script, dir);
    snprintf(failing, sizeof failing, "sh %s C %s fail", script, dir);
    unsetenv("BENCH_QUICK");
    const char *sides[2] = {a, b};
    double figures[2];
    ok(bench_alternations() == 4, "by default a target's sides alternate in 4 runs each (got %d)",
       bench_alternations());
    run_alternated(sides, 2, 40, figures);
    snprintf(path, sizeof path, "%s/order", dir);
    char *order = read_text(path);
    is_string(order, "A 12\nB 12\nB 12\nA 12\nA 12\nB 12\nB 12\nA 12\n",
              "the sides run A B, B A, A B, B A, each for 40 / 4 steps and 2 of warm-up");
    free(order);
    /* runs 1-4 of A print 100, 200, 300, 400: the pooled 40 steps' median is 300, no single run's */
    ok(figures[0] == 300 && figures[1] == 3000, "each side's figure is the median of its runs' steps pooled "
       "(A %.0f, B %.0f: want 300 and 3000)", figures[0], figures[1]);
    const char *with_failure[2] = {a, failing};
    run_alternated(with_failure, 2, 40, figures);
    ok(!isnan(figures[0]) && isnan(figures[1]), "a side whose run fails gets no figure (NaN); the other keeps its own");
    setenv("BENCH_QUICK", "1", 1);
    ok(bench_alternations() == 1, "QUICK=1: one run a side (got %d)", bench_alternations());
    unsetenv("BENCH_QUICK");
    const char *names[] = {"order", "A.runs", "B.runs", "fake_lab.sh"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
}

/* Ranges of another run: the book's block and its stored file differ in every number. */
static const double ours_later[] = {130, 90, 140}, theirs_later[] = {150, 180, 170};

static void later_rounds(void)
{
    row_rounds("scaling", "a comparison", "a label", "img/s", ours_later, theirs_later, 3, "base");
    target_line("every round", ours_later, theirs_later, 3, 0.5);
}

static void renamed_rounds(void)
{
    row_rounds("scaling", "another comparison", "a label", "img/s", ours_later, theirs_later, 3, "base");
    target_line("every round", ours_later, theirs_later, 3, 0.5);
}

static void both_rows(void)
{
    three_rounds();
    target_line("every round", ours, theirs, 3, 0.5);
}

/* The book_check of this build: BUILD (build-sanitize under SANITIZE=1) or build. */
static const char *book_check_path(void)
{
    static char path[160];
    snprintf(path, sizeof path, "%s/labs/tools/book_check", getenv("BUILD") ? getenv("BUILD") : "build");
    return path;
}

/* book_check (labs/tools) on a chapter whose output block holds `book`'s
 * rows and whose stored file holds `file`'s: its exit status. */
static int book_check_status(const char *dir, void (*book)(void), void (*file)(void))
{
    char path[256], cmd[512];
    snprintf(path, sizeof path, "%s/rows.txt", dir);
    char *stored = printed(file, path), *shown = printed(book, path);
    snprintf(path, sizeof path, "%s/chapter.md", dir);
    FILE *f = fopen(path, "w");
    if (!f || !stored || !shown)
        return -1;
    fprintf(f, "# A chapter\n\n<!-- output: rows.txt (rerun: no) -->\n```text\n%s```\n", shown);
    fclose(f);
    snprintf(path, sizeof path, "%s/rows.txt", dir);
    f = fopen(path, "w");
    fputs(stored, f);
    fclose(f);
    free(stored);
    free(shown);
    char top[200];
    if (!getcwd(top, sizeof top))
        return -1;
    snprintf(cmd, sizeof cmd, "cd %s && %s/%s chapter.md >/dev/null 2>&1", dir, top, book_check_path());
    int status = system(cmd);
    snprintf(path, sizeof path, "%s/chapter.md", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/rows.txt", dir);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void check_book_reads_ranges(const char *dir)
{
    if (access(book_check_path(), X_OK) != 0) {
        skip("book_check reads rows of ranges", "no BUILD/labs/tools/book_check (make labs)");
        return;
    }
    FILE *saved = bench_results;
    bench_results = fopen("/dev/null", "w");
    ok(book_check_status(dir, both_rows, later_rounds) == 0,
       "book_check takes a row of ranges and its target line whose every number changed (they are speeds)");
    ok(book_check_status(dir, both_rows, renamed_rounds) == 1,
       "and refuses one whose words changed");
    fclose(bench_results);
    bench_results = saved;
}

int main(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/test_bench_ranges.XXXXXX");
    if (!mkdtemp(dir))
        skip_all("cannot make a temporary directory");
    check_rows(dir);
    check_alternation(dir);
    check_knobs();
    check_book_reads_ranges(dir);
    ok(rmdir(dir) == 0, "no temporary files were left behind");
    return done_testing();
}
