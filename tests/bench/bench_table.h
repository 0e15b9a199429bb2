/* bench_table.h: what every part of `make bench` shares: the clock, medians,
 * the table's rows (on stdout and as CSV), rows measured in rounds (ranges),
 * and the images/sec of a lab run read from its progress lines. */
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

/* Rounds of every comparison measured in rounds: BENCH_ROUNDS (make bench
 * ROUNDS=N), 3 by default, at most BENCH_MAX_ROUNDS. */
#define BENCH_MAX_ROUNDS 9
int bench_rounds(void);

/* Steps each round measures, the warm-up not counted: 40, or 10 under
 * BENCH_QUICK=1 (make bench QUICK=1: a smoke run, not figures to quote). */
int bench_steps(void);

/* A row of figures measured round by round (ours[r] and theirs[r] run back
 * to back): each side printed as its lowest-highest over the rounds, and
 * the ratio as the range of the per-round ratios ours[r] / theirs[r]. The
 * CSV row holds the medians, their ratio and the per-round ratios' range.
 * A round that failed (NaN) is left out of the ranges and said in a note. */
void row_rounds(const char *group, const char *what, const char *label, const char *unit, const double *ours,
                const double *theirs, int rounds, const char *theirs_name);

/* "  <text>: met (lo-hi x over N rounds)" when every round's ratio
 * ours[r] / theirs[r] reaches target, "met in K of N rounds" when some do,
 * else "MISSED". */
void target_line(const char *text, const double *ours, const double *theirs, int rounds, double target);

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

/* Runs a target's sides alternated: 4 runs each (1 under BENCH_QUICK=1),
 * in order, then in reverse (A B, B A, A B, B A), so the machine's drift
 * and its other tenants' bursts fall on every side alike: one long run per
 * side, on a shared machine, leaves a round's ratio to chance (two runs of
 * the same command differ by up to 8%). Each run trains steps / runs
 * steps after 2 of warm-up (--train_steps is appended to each command);
 * figures[i] is the median of command i's steps pooled over its runs, NaN
 * when a run failed. */
int bench_alternations(void);
void run_alternated(const char *const *commands, int count, int steps, double *figures);

#endif
