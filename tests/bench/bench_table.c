/* bench_table.c: the clock, medians, the table's rows (one figure per side,
 * or ranges over rounds) and a lab run's images/sec, shared by the parts of
 * `make bench` (see bench_table.h). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_csv.h"
#include "bench_table.h"

FILE *bench_results;

double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n ? v[n / 2] : NAN;
}

/* One line of the table; the figures come formatted (one number or a range). */
static void print_row(const char *group, const char *what, const char *ours, const char *unit, const char *theirs,
                      const char *theirs_name, const char *ratio)
{
    printf("%-9s %-44s %13s %-8s %13s %-10s %11s\n", group, what, ours, unit, theirs, theirs_name, ratio);
    fflush(stdout);
}

void row(const char *group, const char *what, const char *label, const char *unit, double ours,
         double theirs, const char *theirs_name)
{
    char ours_text[32], theirs_text[32], ratio[32];
    snprintf(ours_text, sizeof ours_text, "%.1f", ours);
    snprintf(theirs_text, sizeof theirs_text, "%.1f", theirs);
    snprintf(ratio, sizeof ratio, "%.2fx", ours / theirs);
    print_row(group, what, ours_text, unit, theirs_text, theirs_name, ratio);
    bench_csv_row(bench_results, group, what, label, unit, ours, theirs_name, theirs);
}

/* A knob from the environment: its value in [lowest, highest], else fallback. */
static int knob(const char *name, int fallback, int lowest, int highest)
{
    const char *text = getenv(name);
    int value = text && *text ? atoi(text) : fallback;
    return value >= lowest && value <= highest ? value : fallback;
}

int bench_rounds(void) { return knob("BENCH_ROUNDS", 3, 1, BENCH_MAX_ROUNDS); }

int bench_steps(void) { return knob("BENCH_QUICK", 0, 0, 1) ? 10 : 40; }

typedef struct {
    double low, high, median;
    int measured; /* the rounds that gave a figure */
} spread;

/* The lowest, highest and median of the figures that are not NaN. */
static spread spread_of(const double *v, int n)
{
    spread s = {INFINITY, -INFINITY, NAN, 0};
    double kept[BENCH_MAX_ROUNDS];
    for (int i = 0; i < n && i < BENCH_MAX_ROUNDS; i++)
        if (!isnan(v[i])) {
            s.low = fmin(s.low, v[i]);
            s.high = fmax(s.high, v[i]);
            kept[s.measured++] = v[i];
        }
    if (s.measured == 0)
        return (spread){NAN, NAN, NAN, 0};
    s.median = median(kept, s.measured);
    return s;
}

/* "low-high", or one number when they are equal (or one round). */
static void format_spread(char *out, size_t size, spread s, int decimals, const char *suffix)
{
    if (s.measured == 0 || s.low == s.high)
        snprintf(out, size, "%.*f%s", decimals, s.low, suffix);
    else
        snprintf(out, size, "%.*f-%.*f%s", decimals, s.low, decimals, s.high, suffix);
}

/* The per-round ratios ours[r] / theirs[r]. */
static spread ratio_spread(const double *ours, const double *theirs, int rounds)
{
    double ratio[BENCH_MAX_ROUNDS] = {0};
    int n = rounds < BENCH_MAX_ROUNDS ? rounds : BENCH_MAX_ROUNDS;
    for (int r = 0; r < n; r++)
        ratio[r] = ours[r] / theirs[r];
    return spread_of(ratio, n);
}

void row_rounds(const char *group, const char *what, const char *label, const char *unit, const double *ours,
                const double *theirs, int rounds, const char *theirs_name)
{
    spread o = spread_of(ours, rounds), t = spread_of(theirs, rounds), ratio = ratio_spread(ours, theirs, rounds);
    char ours_text[40], theirs_text[40], ratio_text[40];
    format_spread(ours_text, sizeof ours_text, o, 1, "");
    format_spread(theirs_text, sizeof theirs_text, t, 1, "");
    format_spread(ratio_text, sizeof ratio_text, ratio, 2, "x");
    print_row(group, what, ours_text, unit, theirs_text, theirs_name, ratio_text);
    bench_csv_row_range(bench_results, group, what, label, unit, o.median, theirs_name, t.median, ratio.low,
                        ratio.high);
    if (ratio.measured < rounds)
        printf("  note: %s: %d of %d rounds failed and are left out of the ranges\n", what,
               rounds - ratio.measured, rounds);
}

void target_line(const char *text, const double *ours, const double *theirs, int rounds, double target)
{
    spread ratio = ratio_spread(ours, theirs, rounds);
    int met = 0;
    for (int r = 0; r < rounds && r < BENCH_MAX_ROUNDS; r++)
        met += ours[r] / theirs[r] >= target;
    char range[40];
    format_spread(range, sizeof range, ratio, 2, "x");
    if (met == rounds)
        printf("  %s: met (%s over %d rounds)\n", text, range, rounds);
    else if (met > 0)
        printf("  %s: met in %d of %d rounds (%s)\n", text, met, rounds, range);
    else
        printf("  %s: MISSED (%s over %d rounds)\n", text, range, rounds);
}

void note(const char *fmt, const char *arg)
{
    printf("  note: ");
    printf(fmt, arg);
    printf("\n");
}

/* One images/sec figure from a line of output: a lab's "Step N with loss L
 * (R images/sec)" (the first two skipped: warm-up) or PyTorch's
 * "images_per_second R". */
static bool read_images_per_second(const char *line, int *steps_seen, double *ips)
{
    if (sscanf(line, "images_per_second %lf", ips) == 1)
        return true;
    const char *at = strstr(line, "(");
    return strncmp(line, "Step ", 5) == 0 && at && sscanf(at, "(%lf images/sec)", ips) == 1 && (*steps_seen)++ >= 2;
}

/* Starts sh -c command with its stdout on a pipe, as popen would;
 * the read end in *out, the child's pid returned, -1 on failure. */
static pid_t start_command(const char *command, FILE **out)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return -1;
    }
    *out = fdopen(fds[0], "r");
    return pid;
}

/* Runs command and appends its images/sec figures (warm-up skipped) to
 * v[*n..max); 0 when it exited cleanly, with its peak RSS in *peak_mb. */
static int run_steps(const char *command, double *v, int max, int *n, double *peak_mb)
{
    FILE *p = NULL;
    pid_t pid = start_command(command, &p);
    if (pid < 0)
        return -1;
    char line[512];
    int seen = 0;
    while (fgets(line, sizeof line, p)) {
        double ips;
        if (read_images_per_second(line, &seen, &ips) && *n < max)
            v[(*n)++] = ips;
    }
    fclose(p);
    int status = 0;
    struct rusage usage;
    /* wait4's usage is the child's and its waited-for children's: sh's exec'd command included */
    if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    if (peak_mb)
        *peak_mb = usage.ru_maxrss / 1024.0; /* Linux gives kilobytes */
    return 0;
}

double run_images_per_second_peak(const char *command, double *peak_mb)
{
    double v[256];
    int n = 0;
    if (peak_mb)
        *peak_mb = NAN;
    if (run_steps(command, v, 256, &n, peak_mb) != 0)
        return NAN;
    return n > 0 ? median(v, n) : NAN;
}

int bench_alternations(void) { return knob("BENCH_QUICK", 0, 0, 1) ? 1 : 4; }

void run_alternated(const char *const *commands, int count, int steps, double *figures)
{
    enum { MAX_SIDES = 8, MAX_STEPS = 512 };
    static double pooled[MAX_SIDES][MAX_STEPS];
    int n[MAX_SIDES] = {0}, runs = bench_alternations(), sides = count < MAX_SIDES ? count : MAX_SIDES;
    bool failed[MAX_SIDES] = {false};
    for (int run = 0; run < runs; run++) {
        for (int k = 0; k < sides; k++) {
            int i = run % 2 == 0 ? k : sides - 1 - k; /* forward, then backward */
            char command[1024];
            snprintf(command, sizeof command, "%s --train_steps %d", commands[i], steps / runs + 2);
            failed[i] = failed[i] || run_steps(command, pooled[i], MAX_STEPS, &n[i], NULL) != 0;
        }
    }
    for (int i = 0; i < count; i++)
        figures[i] = i >= sides || failed[i] || n[i] == 0 ? NAN : median(pooled[i], n[i]);
}

double run_images_per_second(const char *command) { return run_images_per_second_peak(command, NULL); }
