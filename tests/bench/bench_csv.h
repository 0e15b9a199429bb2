/* bench_csv.h: `make bench`'s rows as RFC 4180 CSV, the one place that writes
 * them, so tests/test_bench_csv.c reads back exactly what the bench writes.
 * A field holding a comma, a quote or a line break is quoted, quotes doubled. */
#ifndef FLOWLAB_BENCH_CSV_H
#define FLOWLAB_BENCH_CSV_H

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Ten columns: what was measured, a short label for the chart, its unit
 * (GFLOP/s, img/s, ms, ...), flowlab's figure, and the baseline it is
 * compared with; the ratio is flowlab / baseline, empty when there is none.
 * A row measured in rounds (both sides back to back in each) gives the
 * medians, and ratio_low and ratio_high: the lowest and highest of the
 * per-round ratios; empty for a row of one figure per side. */
#define BENCH_CSV_HEADER "group,what,label,unit,flowlab,baseline,baseline_value,ratio,ratio_low,ratio_high"
#define BENCH_CSV_COLUMNS 10

/* One text field; CRLF ends a record (RFC 4180), so a bare line break is quoted too. */
static inline void bench_csv_text(FILE *f, const char *text)
{
    if (!strpbrk(text, ",\"\r\n")) {
        fputs(text, f);
        return;
    }
    fputc('"', f);
    for (const char *c = text; *c; c++) {
        if (*c == '"')
            fputc('"', f);
        fputc(*c, f);
    }
    fputc('"', f);
}

/* One number; an empty field when there is none (NaN: not measured). */
static inline void bench_csv_number(FILE *f, double value, const char *format)
{
    if (!isnan(value))
        fprintf(f, format, value);
}

static inline void bench_csv_header(FILE *f) { fputs(BENCH_CSV_HEADER "\r\n", f); }

/* One row. baseline NULL: a figure of its own (a bandwidth, a breakdown's
 * milliseconds), with empty baseline, baseline_value and ratios; ratio_low
 * and ratio_high NaN: a row not measured in rounds. */
static inline void bench_csv_row_range(FILE *f, const char *group, const char *what, const char *label,
                                       const char *unit, double ours, const char *baseline, double theirs,
                                       double ratio_low, double ratio_high)
{
    const char *texts[] = {group, what, label, unit};
    for (int i = 0; i < 4; i++) {
        bench_csv_text(f, texts[i]);
        fputc(',', f);
    }
    bench_csv_number(f, ours, "%.3f");
    fputc(',', f);
    bench_csv_text(f, baseline ? baseline : "");
    fputc(',', f);
    bench_csv_number(f, baseline ? theirs : NAN, "%.3f");
    fputc(',', f);
    bench_csv_number(f, baseline ? ours / theirs : NAN, "%.4f");
    fputc(',', f);
    bench_csv_number(f, baseline ? ratio_low : NAN, "%.4f");
    fputc(',', f);
    bench_csv_number(f, baseline ? ratio_high : NAN, "%.4f");
    fputs("\r\n", f);
}

static inline void bench_csv_row(FILE *f, const char *group, const char *what, const char *label,
                                 const char *unit, double ours, const char *baseline, double theirs)
{
    bench_csv_row_range(f, group, what, label, unit, ours, baseline, theirs, NAN, NAN);
}

#endif
