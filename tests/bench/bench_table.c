/* bench_table.c: the clock, medians, the table's rows and a lab run's
 * images/sec, shared by the parts of `make bench` (see bench_table.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

double run_images_per_second(const char *command)
{
    FILE *p = popen(command, "r");
    if (!p)
        return NAN;
    char line[512];
    double v[256];
    int n = 0, seen = 0;
    while (fgets(line, sizeof line, p)) {
        const char *at = strstr(line, "(");
        double ips;
        if (strncmp(line, "Step ", 5) == 0 && at && sscanf(at, "(%lf images/sec)", &ips) == 1 && seen++ >= 2 && n < 256)
            v[n++] = ips;
    }
    int status = pclose(p);
    return status == 0 && n > 0 ? median(v, n) : NAN;
}
