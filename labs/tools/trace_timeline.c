/* trace_timeline.c: draws a trace written by a lab's --trace as an SVG
 * timeline, one lane per device and one box per op, coloured by what the op
 * does, so the book can show a real run (make figures). Reads only the
 * one-event-per-line JSON that fl_session_write_trace writes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_LANES = 16, WIDTH = 1000, LEFT = 90, LANE = 34, TOP = 30 };

typedef struct {
    char name[160], cat[32];
    int lane;
    double start, dur; /* microseconds */
} event;

typedef struct {
    event *events;
    int count, cap;
    char lanes[MAX_LANES][32]; /* device of each lane (tid - 1) */
    int nlanes;
    double first, last;
} trace;

/* The text after "key" up to the closing quote (or , or }), into out. */
static int field(const char *line, const char *key, char *out, size_t len)
{
    const char *at = strstr(line, key);
    if (!at)
        return -1;
    at += strlen(key);
    size_t n = strcspn(at, "\",}");
    n = n < len ? n : len - 1;
    memcpy(out, at, n);
    out[n] = '\0';
    return 0;
}

static void add_lane_name(trace *t, const char *line)
{
    char tid[16], name[32];
    if (field(line, "\"tid\":", tid, sizeof tid) || field(line, "\"args\":{\"name\":\"", name, sizeof name))
        return;
    int lane = atoi(tid) - 1;
    if (lane < 0 || lane >= MAX_LANES)
        return;
    snprintf(t->lanes[lane], sizeof t->lanes[lane], "%s", name);
    t->nlanes = lane + 1 > t->nlanes ? lane + 1 : t->nlanes;
}

static void add_event(trace *t, const char *line)
{
    event e = {0};
    char tid[16], ts[32], dur[32];
    if (field(line, "\"name\":\"", e.name, sizeof e.name) || field(line, "\"cat\":\"", e.cat, sizeof e.cat) ||
        field(line, "\"tid\":", tid, sizeof tid) || field(line, "\"ts\":", ts, sizeof ts) ||
        field(line, "\"dur\":", dur, sizeof dur))
        return;
    e.lane = atoi(tid) - 1;
    e.start = atof(ts);
    e.dur = atof(dur);
    if (e.lane < 0 || e.lane >= MAX_LANES)
        return;
    if (t->count == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 512;
        t->events = realloc(t->events, (size_t)t->cap * sizeof *t->events);
    }
    t->events[t->count++] = e;
    t->first = fmin(t->first, e.start);
    t->last = fmax(t->last, e.start + e.dur);
}

static int read_trace(const char *path, trace *t)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "trace_timeline: cannot open %s (write one with a lab's --trace FILE.json)\n", path);
        return -1;
    }
    *t = (trace){.first = INFINITY};
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "\"ph\":\"M\"") && strstr(line, "\"thread_name\""))
            add_lane_name(t, line);
        else if (strstr(line, "\"ph\":\"X\""))
            add_event(t, line);
    }
    fclose(f);
    if (t->count == 0 || t->nlanes == 0) {
        fprintf(stderr, "trace_timeline: %s holds no flowlab op events\n", path);
        return -1;
    }
    return 0;
}

/* What a box is, by its op: the legend's five kinds. */
typedef struct {
    const char *label, *colour;
} kind;

static const kind kinds[] = {
    {"forward", "#9ecae1"},          {"backward (gradients)", "#3182bd"}, {"copy between devices", "#d62728"},
    {"averaging the towers", "#ff7f0e"}, {"Adam's update, global step", "#756bb1"},
};

static const kind *kind_of(const event *e)
{
    if (strcmp(e->cat, "Copy") == 0)
        return &kinds[2];
    if (strncmp(e->name, "average_gradients", 17) == 0)
        return &kinds[3];
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

static void draw(FILE *out, const trace *t)
{
    double span = t->last - t->first, scale = WIDTH / span;
    int height = TOP + t->nlanes * LANE + 60;
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
                 "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", LEFT + WIDTH + 20, height);
    for (int l = 0; l < t->nlanes; l++)
        fprintf(out, "<text x=\"8\" y=\"%d\">%s</text>\n", TOP + l * LANE + LANE / 2 + 4, t->lanes[l]);
    double step_ms = span / 1000 > 400 ? 100 : span / 1000 > 100 ? 50 : 10;
    for (double ms = 0; ms <= span / 1000; ms += step_ms) {
        double x = LEFT + ms * 1000 * scale;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, TOP - 4, x,
                TOP + t->nlanes * LANE);
        fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f ms</text>\n", x, TOP - 8, ms);
    }
    for (int i = 0; i < t->count; i++) {
        const event *e = &t->events[i];
        double x = LEFT + (e->start - t->first) * scale, w = fmax(e->dur * scale, 0.8);
        fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>", x,
                TOP + e->lane * LANE + 4, w, LANE - 8, kind_of(e)->colour);
        escaped(out, e->name);
        fprintf(out, " (%.2f ms)</title></rect>\n", e->dur / 1000);
    }
    int y = TOP + t->nlanes * LANE + 30, x = LEFT;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>", x, y - 11, kinds[k].colour);
        fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text>\n", x + 18, y, kinds[k].label);
        x += 190;
    }
    fputs("</svg>\n", out);
}

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "--help") == 0) {
        printf("usage: trace_timeline TRACE.json OUT.svg\n"
               "Draws a trace written by a lab's --trace as an SVG timeline: one lane per\n"
               "device, one box per op (hover for its name and time), coloured as forward,\n"
               "backward, copy between devices, averaging, or Adam's update.\n");
        return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    trace t;
    if (read_trace(argv[1], &t) != 0)
        return 1;
    FILE *out = fopen(argv[2], "w");
    if (!out) {
        fprintf(stderr, "trace_timeline: cannot write %s\n", argv[2]);
        free(t.events);
        return 1;
    }
    draw(out, &t);
    int failed = fclose(out) != 0;
    free(t.events);
    if (failed)
        fprintf(stderr, "trace_timeline: writing %s failed\n", argv[2]);
    return failed;
}
