/* bench_table.c: the clock, medians, the table's rows and a lab run's
 * images/sec, shared by the parts of `make bench` (see bench_table.h). */
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

void row(const char *group, const char *what, const char *label, const char *unit, double ours,
         double theirs, const char *theirs_name)
{
    printf("%-9s %-44s %9.1f %-8s %9.1f %-10s %6.2fx\n", group, what, ours, unit, theirs, theirs_name,
           ours / theirs);
    bench_csv_row(bench_results, group, what, label, unit, ours, theirs_name, theirs);
    fflush(stdout);
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

double run_images_per_second_peak(const char *command, double *peak_mb)
{
    FILE *p = NULL;
    pid_t pid = start_command(command, &p);
    if (peak_mb)
        *peak_mb = NAN;
    if (pid < 0)
        return NAN;
    char line[512];
    double v[256];
    int n = 0, seen = 0;
    while (fgets(line, sizeof line, p)) {
        double ips;
        if (read_images_per_second(line, &seen, &ips) && n < 256)
            v[n++] = ips;
    }
    fclose(p);
    int status = 0;
    struct rusage usage;
    /* wait4's usage is the child's and its waited-for children's: sh's exec'd command included */
    if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return NAN;
    if (peak_mb)
        *peak_mb = usage.ru_maxrss / 1024.0; /* Linux gives kilobytes */
    return n > 0 ? median(v, n) : NAN;
}

double run_images_per_second(const char *command) { return run_images_per_second_peak(command, NULL); }
