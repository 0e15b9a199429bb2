/* test_bench_csv.c: `make bench`'s CSV (tests/bench/bench_csv.h) read back
 * by a strict RFC 4180 reader: fixed rows with the bench's real labels, and
 * the sample the book's charts are drawn from; then the charts themselves. */
#include <unistd.h>

#include "tap.h"
#include "tools.h"
#include "bench/bench_csv.h"

#define MAX_FIELDS 16
#define FIELD_LEN 256

typedef struct {
    int nfields;
    char field[MAX_FIELDS][FIELD_LEN];
} record;

/* One record at *p: fields split by commas, quoted fields may hold commas,
 * doubled quotes and line breaks; a record ends at CRLF (a lone LF is taken
 * too, as RFC 4180 readers do). Returns NULL, with why, on anything else. */
static const char *read_record(const char *p, record *r, const char **why)
{
    r->nfields = 0;
    for (;;) {
        if (r->nfields == MAX_FIELDS)
            return *why = "too many fields", NULL;
        char *out = r->field[r->nfields++];
        size_t n = 0;
        if (*p == '"') {
            for (p++; !(*p == '"' && p[1] != '"'); p++) {
                if (!*p)
                    return *why = "a quoted field never closes", NULL;
                if (*p == '"')
                    p++; /* "" is one quote */
                if (n + 1 < FIELD_LEN)
                    out[n++] = *p;
            }
            p++;
        } else {
            for (; *p && *p != ',' && *p != '\r' && *p != '\n'; p++) {
                if (*p == '"')
                    return *why = "a quote inside an unquoted field", NULL;
                if (n + 1 < FIELD_LEN)
                    out[n++] = *p;
            }
        }
        out[n] = '\0';
        if (*p == ',') {
            p++;
            continue;
        }
        if (p[0] == '\r' && p[1] == '\n')
            return p + 2;
        if (*p == '\n')
            return p + 1;
        return *why = *p ? "a field goes on after its closing quote" : "the last record has no line end", NULL;
    }
}

static bool is_number(const char *text)
{
    char *end = NULL;
    if (!text[0])
        return false;
    strtod(text, &end);
    return *end == '\0';
}

/* Every record after the header: eight fields, numbers where numbers go,
 * and a ratio exactly where there is a baseline. Returns the rows checked. */
static int check_csv(const char *text, const char *what)
{
    record r;
    const char *why = NULL, *p = read_record(text, &r, &why);
    char header[512] = "";
    for (int i = 0; p && i < r.nfields; i++)
        snprintf(header + strlen(header), sizeof header - strlen(header), "%s%s", i ? "," : "", r.field[i]);
    is_string(header, BENCH_CSV_HEADER, what);
    int rows = 0, bad = 0;
    while (p && *p) {
        p = read_record(p, &r, &why);
        rows++;
        bool has_baseline = p && r.nfields == BENCH_CSV_COLUMNS && r.field[5][0];
        bool good = p && r.nfields == BENCH_CSV_COLUMNS && r.field[0][0] && r.field[2][0] && r.field[3][0] &&
                    !strchr(r.field[2], ',') && is_number(r.field[4]) &&
                    (has_baseline ? is_number(r.field[6]) && is_number(r.field[7])
                                  : !r.field[6][0] && !r.field[7][0]);
        if (good && has_baseline)
            good = fabs(atof(r.field[7]) - atof(r.field[4]) / atof(r.field[6])) < 2e-3 * atof(r.field[7]);
        /* measured in rounds: both ends of the per-round ratios, low <= high; else neither */
        bool ranged = good && r.field[8][0];
        if (good)
            good = ranged ? has_baseline && is_number(r.field[8]) && is_number(r.field[9]) &&
                                atof(r.field[8]) <= atof(r.field[9])
                          : !r.field[9][0];
        if (!good && bad++ == 0)
            diag("row %d: %s (%d fields; group '%s', label '%s')", rows, p ? "wrong fields" : why,
                 r.nfields, r.field[0], r.nfields > 2 ? r.field[2] : "");
    }
    ok(rows > 0 && bad == 0, "%s: all %d rows have %d fields, numbers where numbers go, ratio = flowlab / "
                             "baseline, and a ratio range only beside a ratio, low <= high", what, rows,
       BENCH_CSV_COLUMNS);
    return rows;
}

/* The bench's own writer on rows like its real ones: labels with commas
 * and brackets, a quote, rows with and without a baseline. */
/* The chart of the writer's rows: a row measured in rounds is labelled
 * with the range of its per-round ratios, a row of one figure with its ratio. */
static void check_ranged_chart(const char *csv)
{
    if (!have("gnuplot")) {
        skip("the chart labels a ranged row with its ratio range", "gnuplot is not installed");
        return;
    }
    char cmd[1024], svg[256];
    snprintf(svg, sizeof svg, "%s.svg", csv);
    snprintf(cmd, sizeof cmd, "timeout 60 gnuplot -e \"csv='%s'; out='%s'\" tests/bench/chart.gp 2>&1", csv, svg);
    ok(system(cmd) == 0, "gnuplot draws the chart of the writer's rows");
    char *text = read_text(svg);
    contains(text, " 0.85-0.92x<", "a row measured in rounds is labelled with its per-round ratios' range");
    contains(text, " 5.12x<", "a row of one figure a side with its ratio");
    free(text);
    unlink(svg);
}

static void check_writer(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        ok(false, "can write %s", path);
        return;
    }
    bench_csv_header(f);
    bench_csv_row(f, "conv2d", "conv_1 [128,28,28,1] 5x5x32 forward", "conv_1 fwd", "GFLOP/s", 50.7, "OpenBLAS", 9.9);
    bench_csv_row(f, "scaling", "ch2: 2 towers vs 1 device, both on 2 cores", "ch2 2 towers (both 2 cores)", "img/s",
                  1473.7, "1 device", 1516.5);
    bench_csv_row(f, "training", "the \"chapter 1\" step", "ch1 step", "img/s", 1509.1, "/cpu:0", 688.3);
    bench_csv_row(f, "machine", "memory bandwidth", "memory bandwidth", "GB/s", 25.4, NULL, NAN);
    bench_csv_row(f, "breakdown", "ch2 copies", "ch2 copies", "ms", 29.1, NULL, NAN);
    bench_csv_row_range(f, "scaling", "ch3: 1 ps + 2 workers vs ch2's 2 towers", "ch3 1 ps + 2 workers", "img/s",
                        1211.1, "2 towers", 1369.0, 0.85, 0.92);
    fclose(f);
    char *text = read_text(path);
    contains(text, "\"conv_1 [128,28,28,1] 5x5x32 forward\",conv_1 fwd,", "a field with commas is quoted");
    contains(text, "\"the \"\"chapter 1\"\" step\"", "a quote inside a field is doubled, the field quoted");
    contains(text, ",GB/s,25.400,,,,,\r\n", "a row without a baseline leaves baseline, value and ratios empty");
    contains(text, ",OpenBLAS,9.900,5.1212,,\r\n", "a row of one figure a side leaves the ratio range empty");
    contains(text, ",2 towers,1369.000,0.8847,0.8500,0.9200\r\n",
             "a row measured in rounds gives the medians' ratio, then the per-round ratios' lowest and highest");
    ok(check_csv(text, "the bench's writer") == 6, "six rows read back");
    record r;
    const char *why = NULL, *p = read_record(text, &r, &why);
    p = p ? read_record(p, &r, &why) : NULL;
    is_string(p ? r.field[1] : NULL, "conv_1 [128,28,28,1] 5x5x32 forward", "the label comes back whole");
    check_ranged_chart(path);
    free(text);
}

/* Each bad record is refused, and the reason says why. */
static void refuses(const char *text, const char *what)
{
    record r;
    const char *why = NULL;
    bool read = read_record(text, &r, &why) != NULL;
    ok(!read, "the reader refuses %s (%s)", what, why ? why : "accepted");
}

static void check_reader_is_strict(void)
{
    refuses("a,b\"c\r\n", "a quote in an unquoted field");
    refuses("\"a\"b,c\r\n", "text after a closing quote");
    refuses("\"a,b\r\n", "a quoted field that never closes");
    record r;
    const char *why = NULL;
    ok(read_record("\"a,b\",c\r\n", &r, &why) && r.nfields == 2, "a quoted comma stays in its field");
}

/* The roofline of the sample kernels under a GEMM peak of `peak` GFLOP/s,
 * drawn into svg by gnuplot with a deadline; its text (NULL if none). */
static char *draw_roofline(const char *svg, int peak, const char *what)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "timeout 60 gnuplot -e \"points='tests/data/bench-roofline.csv'; peak=%d; bw=25.4; "
             "out='%s'\" tests/bench/roofline.gp 2>&1", peak, svg);
    ok(system(cmd) == 0, "%s", what);
    return read_text(svg);
}

/* The charts from the sample rows: gnuplot draws them, with a deadline. */
static void check_charts(const char *dir)
{
    if (!have("gnuplot")) {
        skip("gnuplot draws the bench chart and the roofline", "gnuplot is not installed");
        return;
    }
    char cmd[1024], svg[256];
    snprintf(svg, sizeof svg, "%s/bench.svg", dir);
    snprintf(cmd, sizeof cmd, "timeout 60 gnuplot -e \"csv='tests/data/bench-results.csv'; out='%s'\" "
             "tests/bench/chart.gp 2>&1", svg);
    ok(system(cmd) == 0, "gnuplot draws the bench chart from the sample");
    char *text = read_text(svg);
    contains(text, ">conv_1 fwd vs OpenBLAS<", "each bar is labelled with its comparison in short words");
    contains(text, ">1x<", "the ratio axis marks 1x");
    ok(text && !strstr(text, ">GEMM peak"), "rows without a ratio (the machine's figures) draw no bar");
    free(text);
    unlink(svg);
    snprintf(svg, sizeof svg, "%s/roofline.svg", dir);
    text = draw_roofline(svg, 177, "gnuplot draws the roofline from the sample");
    contains(text, ">11  conv_2 dW<", "the roofline's key names each numbered kernel");
    free(text);
    /* A kernel credited with more than twice the peak (Winograd's, counted
     * as the direct sum) still gets its point and number on the chart. */
    text = draw_roofline(svg, 40, "gnuplot draws the roofline with kernels far above a low peak");
    contains(text, ">11<", "a kernel above twice the peak is still drawn and numbered");
    free(text);
    unlink(svg);
}

int main(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/test_bench_csv.XXXXXX");
    if (!mkdtemp(dir))
        skip_all("cannot make a temporary directory");
    char path[128];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    check_reader_is_strict();
    check_writer(path);
    unlink(path);
    char *sample = read_text("tests/data/bench-results.csv");
    ok(sample != NULL, "the sample rows are in tests/data/bench-results.csv");
    if (sample)
        check_csv(sample, "the sample the book's chart is drawn from");
    free(sample);
    check_charts(dir);
    ok(rmdir(dir) == 0, "no temporary files were left behind");
    return done_testing();
}
