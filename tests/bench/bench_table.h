/* bench_table.h: what every part of `make bench` shares: the clock, medians,
 * the table's rows (on stdout and as CSV) and the images/sec of a lab run
 * read from its progress lines. bench.c and bench_allreduce.c use them. */
#ifndef FLOWLAB_BENCH_TABLE_H
#define FLOWLAB_BENCH_TABLE_H

#include <stdio.h>

/* The CSV file the rows go to; bench.c's main opens it. */
extern FILE *bench_results;

/* Seconds on the monotonic clock. */
double now(void);

/* The median of v[0..n-1]; sorts v. NaN when n is 0. */
double median(double *v, int n);

/* One table row: what, the values, and the ratio that is the point; label
 * is what the chart's bar says, in a few words and no comma (gnuplot's
 * reader cuts a string at one even inside quotes). */
void row(const char *group, const char *what, const char *label, const char *unit, double ours,
         double theirs, const char *theirs_name);

/* "  note: " and fmt with its one argument, on a line of its own. */
void note(const char *fmt, const char *arg);

/* Runs command (a lab printing "Step N with loss L (R images/sec)") and
 * returns the median images/sec over its progress lines after the first
 * two; NaN when it fails or prints none. */
double run_images_per_second(const char *command);

/* The same, also reading "images_per_second R" lines (PyTorch's), and the
 * command's peak resident memory in MB (its maximum RSS, from wait4) into
 * *peak_mb when given; NaN there when the run fails. */
double run_images_per_second_peak(const char *command, double *peak_mb);

#endif
