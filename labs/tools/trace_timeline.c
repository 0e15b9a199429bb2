/* trace_timeline.c: draws a trace written by a lab's --trace as an SVG
 * timeline, one lane per device and one box per op, coloured by what the op
 * does, so the book can show a real run (make figures). Reads only the
 * one-event-per-line JSON that fl_session_write_trace writes. */
#include <stdbool.h>

#include "trace_events.h"

enum { WIDTH = 1000, MIN_LEFT = 90, LANE = 34, TOP = 30, MAX_TICKS = 10, LETTER = 7 };

/* The lanes' labels' room: the longest name at about 7 px a letter, so a
 * cluster's "/job:worker/task:1/cpu:0" does not run under the boxes. */
static int left_margin(const trace_events *t)
{
    int longest = 0;
    for (int l = 0; l < t->nlanes; l++)
        longest = (int)strlen(t->lanes[l]) > longest ? (int)strlen(t->lanes[l]) : longest;
    return longest * LETTER + 16 > MIN_LEFT ? longest * LETTER + 16 : MIN_LEFT;
}

static int read_trace(const char *path, trace_events *t)
{
    if (trace_events_read(path, t) != 0) {
        fprintf(stderr, "trace_timeline: cannot open %s (write one with a lab's --trace FILE.json)\n", path);
        return -1;
    }
    if (t->count == 0 || t->nlanes == 0) {
        fprintf(stderr, "trace_timeline: %s holds no flowlab op events\n", path);
        trace_events_free(t);
        return -1;
    }
    return 0;
}

/* What a box is, by its op: the legend's seven kinds. */
typedef struct {
    const char *label, *colour;
} kind;

static const kind kinds[] = {
    {"forward", "#9ecae1"},          {"backward (gradients)", "#3182bd"}, {"copy between devices", "#d62728"},
    {"averaging the towers", "#ff7f0e"}, {"Adam's update, global step", "#756bb1"},
    {"collectives", "#2ca02c"},      {"accumulating micro-batches' gradients", "#fdae6b"},
    {"request to a task, sent to answered", "#bdbdbd"}, {"pull of a variable, sent to answered", "#74c476"},
    {"the towers' mean and its update, one kernel", "#e377c2"},
};

static const kind *kind_of(const trace_event *e)
{
    if (strcmp(e->cat, "Copy") == 0)
        return &kinds[2];
    if (strcmp(e->cat, "external") == 0) /* fl_session_trace_event's: chapter 6's allreduces */
        return &kinds[5];
    if (strcmp(e->cat, "request") == 0) /* a cluster's client: RUN_PARTITION to one task */
        return &kinds[7];
    if (strcmp(e->cat, "VariableV2") == 0) /* only a remote variable's read runs: a PULL (chapter 3) */
        return &kinds[8];
    if (strncmp(e->cat, "FusedApply", 10) == 0) /* src/session_fusion.c's fuse_update */
        return &kinds[9];
    if (strncmp(e->name, "average_gradients", 17) == 0)
        return &kinds[3];
    if (strncmp(e->name, "accumulate/", 11) == 0) /* chapter 7's pipeline */
        return &kinds[6];
    if (strncmp(e->name, "train/", 6) == 0)
        return &kinds[4];
    return strstr(e->name, "gradients/") ? &kinds[1] : &kinds[0];
}

static void escaped(FILE *out, const char *text)
{
    for (; *text; text++) {
        if (*text == '<')
            fputs("&lt;", out);
        else if (*text == '>')
            fputs("&gt;", out);
        else if (*text == '&')
            fputs("&amp;", out);
        else
            fputc(*text, out);
    }
}

/* The time between two labelled ticks: the smallest 1, 2 or 5 x 10^k ms
 * that leaves at most MAX_TICKS intervals, so that labels such as "1500 ms"
 * (about 50 px) stay apart on any span (WIDTH / MAX_TICKS = 100 px apart). */
static double tick_ms(double span_ms)
{
    static const double nice[] = {1, 2, 5};
    for (double decade = 1; decade < 1e7; decade *= 10)
        for (int i = 0; i < 3; i++)
            if (span_ms / (nice[i] * decade) <= MAX_TICKS)
                return nice[i] * decade;
    return span_ms; /* longer than hours: one tick */
}

enum { NKINDS = sizeof kinds / sizeof kinds[0] };

/* Where each used kind's legend entry goes: x, and its row (a row wraps
 * before it would pass the timeline's right end). Returns the rows. */
static int place_legend(const bool used[NKINDS], int left, int x[NKINDS], int row[NKINDS])
{
    int at = left, rows = 1;
    for (int k = 0; k < NKINDS; k++) {
        if (!used[k])
            continue;
        int width = 18 + LETTER * (int)strlen(kinds[k].label) + 24;
        if (at > left && at + width > left + WIDTH) {
            at = left;
            rows++;
        }
        x[k] = at;
        row[k] = rows - 1;
        at += width;
    }
    return rows;
}

static void draw_lanes_and_ticks(FILE *out, const trace_events *t, int left, double scale)
{
    double span = t->last - t->first;
    for (int l = 0; l < t->nlanes; l++)
        fprintf(out, "<text x=\"8\" y=\"%d\">%s</text>\n", TOP + l * LANE + LANE / 2 + 4, t->lanes[l]);
    double step_ms = tick_ms(span / 1000);
    for (double ms = 0; ms <= span / 1000; ms += step_ms) {
        double x = left + ms * 1000 * scale;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, TOP - 4, x,
                TOP + t->nlanes * LANE);
        fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f ms</text>\n", x, TOP - 8, ms);
    }
}

static void draw(FILE *out, const trace_events *t)
{
    double scale = WIDTH / (t->last - t->first);
    int left = left_margin(t);
    /* The legend names only the kinds this trace has: chapters 3 and 4 average no towers. */
    bool used[NKINDS] = {false};
    for (int i = 0; i < t->count; i++)
        used[kind_of(&t->events[i]) - kinds] = true;
    int legend_x[NKINDS], legend_row[NKINDS];
    int rows = place_legend(used, left, legend_x, legend_row);
    int height = TOP + t->nlanes * LANE + 40 + 20 * rows;
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
                 "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", left + WIDTH + 20, height);
    draw_lanes_and_ticks(out, t, left, scale);
    for (int i = 0; i < t->count; i++) {
        const trace_event *e = &t->events[i];
        double x = left + (e->start - t->first) * scale, w = fmax(e->dur * scale, 0.8);
        fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>", x,
                TOP + e->lane * LANE + 4, w, LANE - 8, kind_of(e)->colour);
        escaped(out, e->name);
        fprintf(out, " (%.2f ms)</title></rect>\n", e->dur / 1000);
    }
    for (int k = 0; k < NKINDS; k++) {
        if (!used[k])
            continue;
        int y = TOP + t->nlanes * LANE + 30 + 20 * legend_row[k];
        fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>", legend_x[k], y - 11,
                kinds[k].colour);
        fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text>\n", legend_x[k] + 18, y, kinds[k].label);
    }
    fputs("</svg>\n", out);
}

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "--help") == 0) {
        printf("usage: trace_timeline TRACE.json OUT.svg\n"
               "Draws a trace written by a lab's --trace as an SVG timeline: one lane per\n"
               "device, one box per op (hover for its name and time), coloured as forward,\n"
               "backward, copy between devices, averaging, Adam's update, a collective on\n"
               "another thread's lane (chapter 6), a pipeline's accumulation (chapter 7)\n"
               "or, in a cluster's trace (chapter 3), a request from the client to a task;\n"
               "each task's ops go on lanes named for it (/job:worker/task:1/cpu:0).\n");
        return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    trace_events t;
    if (read_trace(argv[1], &t) != 0)
        return 1;
    FILE *out = fopen(argv[2], "w");
    if (!out) {
        fprintf(stderr, "trace_timeline: cannot write %s\n", argv[2]);
        trace_events_free(&t);
        return 1;
    }
    draw(out, &t);
    int failed = fclose(out) != 0;
    trace_events_free(&t);
    if (failed)
        fprintf(stderr, "trace_timeline: writing %s failed\n", argv[2]);
    return failed;
}
