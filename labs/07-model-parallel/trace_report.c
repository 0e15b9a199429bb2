/* trace_report.c: what chapter 7 reads from a lab's --trace file: how long
 * each accelerator was busy and idle (a pipeline's "bubble"), set beside
 * GPipe's (S-1)/(M+S-1), the time of each layer, its update included (to
 * choose where to cut between stages), and the bytes copied between
 * accelerators per step. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/trace_events.h"

static const char program[] = "trace_report";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s TRACE.json [--steps N] [--micro_batches M] [--stages S] [--csv]\n"
            "Reads a Chrome trace written by a lab's --trace (steps 2 to 4 of a run) and\n"
            "prints, for each accelerator (/gpu:N), the time its ops ran and the fraction\n"
            "of the traced time it was idle; then the time of each layer (forward, backward,\n"
            "the accumulation of its gradients and its Adam update) and the bytes copied\n"
            "between accelerators per step.\n"
            "  --steps N           steps the trace holds (default 3)\n"
            "  --micro_batches M   print GPipe's bubble (S-1)/(M+S-1) beside the idle time\n"
            "  --stages S          pipeline stages for that formula (default 2)\n"
            "  --csv               one line instead: M,formula,idle of each accelerator...,mean\n",
            program);
}

typedef struct {
    const char *path;
    int steps, micro_batches, stages;
    bool csv;
} report_flags;

static int parse_int(const char *flag, const char *value)
{
    char *end = NULL;
    long v = value ? strtol(value, &end, 10) : 0;
    if (!value || !*value || *end || v < 1 || v > 1000000) {
        fprintf(stderr, "%s: %s: '%s' is not valid; it must be a whole number of at least 1 "
                "(see --help)\n", program, flag, value ? value : "");
        exit(2);
    }
    return (int)v;
}

static report_flags parse(int argc, char **argv)
{
    report_flags f = {.steps = 3, .stages = 2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--csv") == 0) {
            f.csv = true;
        } else if (strcmp(a, "--steps") == 0) {
            f.steps = parse_int(a, next);
            i++;
        } else if (strcmp(a, "--micro_batches") == 0) {
            f.micro_batches = parse_int(a, next);
            i++;
        } else if (strcmp(a, "--stages") == 0) {
            f.stages = parse_int(a, next);
            i++;
        } else if (a[0] == '-' || f.path) {
            fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", program, a);
            exit(2);
        } else {
            f.path = a;
        }
    }
    if (!f.path) {
        usage(stderr);
        exit(2);
    }
    return f;
}

/* "/gpu:1", or a task's "/job:worker/task:1/gpu:0" (--stage_hosts). */
static bool is_accelerator(const char *device)
{
    return strncmp(device, "/gpu:", 5) == 0 || (strncmp(device, "/job:", 5) == 0 && strstr(device, "/gpu:"));
}

/* An op an accelerator ran (its own timing), not a copy the host made into it. */
static bool is_device_op(const trace_events *t, const trace_event *e)
{
    return strcmp(e->cat, "Copy") != 0 && e->lane < t->nlanes && is_accelerator(t->lanes[e->lane]);
}

// [book:idle]
/* busy[lane]: the time each accelerator ran ops; *span: from the first op
 * on any accelerator to the end of the last. Idle is span - busy. */
static void busy_times(const trace_events *t, double *busy, double *span)
{
    double first = 1e300, last = -1e300;
    for (int i = 0; i < t->count; i++) {
        const trace_event *e = &t->events[i];
        if (!is_device_op(t, e))
            continue;
        busy[e->lane] += e->dur;
        first = e->start < first ? e->start : first;
        last = e->start + e->dur > last ? e->start + e->dur : last;
    }
    *span = last > first ? last - first : 0;
}
// [end:idle]

/* The model's layers, found in the ops' names: a name component conv_N or
 * dense_N ("micro_batch_0/model/stage_0/conv_1/Conv2D", "train/dense_3/
 * ApplyAdam"), in the model's order: convolutions first, then by number. */
#define MAX_REPORT_LAYERS 16
typedef struct {
    char names[MAX_REPORT_LAYERS][16];
    int count;
} layer_list;

/* The layer component of name, copied into out, or false. */
static bool layer_in_name(const char *name, char *out, size_t n)
{
    for (const char *at = name; *at; at = strchr(at, '/') ? strchr(at, '/') + 1 : at + strlen(at)) {
        size_t len = strcspn(at, "/"), kind = strncmp(at, "conv_", 5) == 0 ? 5 : strncmp(at, "dense_", 6) == 0 ? 6 : 0;
        if (kind && at[len] == '/' && len > kind && len < n && strspn(at + kind, "0123456789") == len - kind) {
            snprintf(out, n, "%.*s", (int)len, at);
            return true;
        }
    }
    return false;
}

static int layer_order(const void *a, const void *b)
{
    const char *x = a, *y = b;
    if ((x[0] == 'c') != (y[0] == 'c'))
        return x[0] == 'c' ? -1 : 1;
    return atoi(strchr(x, '_') + 1) - atoi(strchr(y, '_') + 1);
}

static layer_list find_layers(const trace_events *t)
{
    layer_list l = {0};
    for (int i = 0; i < t->count; i++) {
        char name[16];
        if (!layer_in_name(t->events[i].name, name, sizeof name))
            continue;
        int k = 0;
        while (k < l.count && strcmp(l.names[k], name) != 0)
            k++;
        if (k == l.count && l.count < MAX_REPORT_LAYERS)
            snprintf(l.names[l.count++], sizeof l.names[0], "%s", name);
    }
    qsort(l.names, (size_t)l.count, sizeof l.names[0], layer_order);
    return l;
}

/* An op of the update rather than of the forward or backward pass: the
 * pipeline's accumulation of the micro-batches' gradients
 * ("accumulate/model/dense_1/kernel/sum") or Adam's ("train/dense_1/ApplyAdam"). */
static bool is_update(const char *name)
{
    return strncmp(name, "accumulate/", 11) == 0 || strncmp(name, "train/", 6) == 0;
}

/* Each layer's time per step on the accelerators: its forward and backward
 * ops, its gradients' accumulation and its Adam update, then the last two
 * alone. A stage's time, to choose where to cut, is all of it. */
static void print_layers(const trace_events *t, int steps)
{
    layer_list l = find_layers(t);
    double ms[MAX_REPORT_LAYERS] = {0}, update_ms[MAX_REPORT_LAYERS] = {0};
    for (int i = 0; i < t->count; i++) {
        char name[16];
        if (!is_device_op(t, &t->events[i]) || !layer_in_name(t->events[i].name, name, sizeof name))
            continue;
        for (int k = 0; k < l.count; k++)
            if (strcmp(l.names[k], name) == 0) {
                ms[k] += t->events[i].dur / 1000.0 / steps;
                if (is_update(t->events[i].name))
                    update_ms[k] += t->events[i].dur / 1000.0 / steps;
            }
    }
    printf("per step, forward, backward and update: ");
    for (int k = 0; k < l.count; k++)
        printf("%s %.1f ms%s", l.names[k], ms[k], k + 1 < l.count ? ", " : "");
    printf("\n  of which accumulation and Adam: ");
    for (int k = 0; k < l.count; k++)
        printf("%s %.1f ms%s", l.names[k], update_ms[k], k + 1 < l.count ? ", " : "");
    printf("\n");
}

/* Bytes copied from one accelerator into another, per step. */
static double bytes_between_accelerators(const trace_events *t, int steps)
{
    double bytes = 0;
    for (int i = 0; i < t->count; i++) {
        const trace_event *e = &t->events[i];
        if (strcmp(e->cat, "Copy") == 0 && is_accelerator(e->from) && is_accelerator(e->device))
            bytes += e->bytes;
    }
    return bytes / steps;
}

int main(int argc, char **argv)
{
    report_flags f = parse(argc, argv);
    trace_events t;
    if (trace_events_read(f.path, &t) != 0) {
        fprintf(stderr, "%s: cannot read %s; write one with a lab's --trace FILE.json\n", program, f.path);
        return 1;
    }
    double busy[TRACE_MAX_LANES] = {0}, span = 0, idle_sum = 0;
    busy_times(&t, busy, &span);
    int n = 0;
    double formula = f.micro_batches ? (f.stages - 1.0) / (f.micro_batches + f.stages - 1.0) : 0;
    if (f.csv)
        printf("%d,%.4f", f.micro_batches, formula);
    for (int lane = 0; lane < t.nlanes; lane++) {
        if (!is_accelerator(t.lanes[lane]))
            continue;
        double idle = span > 0 ? 1.0 - busy[lane] / span : 0;
        idle_sum += idle;
        n++;
        if (f.csv)
            printf(",%.4f", idle);
        else
            printf("%s busy %.1f ms of %.1f ms: idle %.1f%%\n", t.lanes[lane], busy[lane] / 1000.0,
                   span / 1000.0, 100.0 * idle);
    }
    if (n == 0) {
        fprintf(stderr, "%s: %s has no op of an accelerator (/gpu:N)\n", program, f.path);
        trace_events_free(&t);
        return 1;
    }
    if (f.csv) {
        printf(",%.4f\n", idle_sum / n);
    } else {
        printf("mean idle %.1f%%", 100.0 * idle_sum / n);
        if (f.micro_batches)
            printf("; GPipe's bubble (S-1)/(M+S-1) for S = %d, M = %d: %.1f%%", f.stages,
                   f.micro_batches, 100.0 * formula);
        printf("\n");
        print_layers(&t, f.steps);
        double bytes = bytes_between_accelerators(&t, f.steps);
        bool cluster = false; /* a cluster's trace: no copies, and its Send/Recv are not sized */
        for (int lane = 0; lane < t.nlanes; lane++)
            cluster = cluster || strstr(t.lanes[lane], "/job:") != NULL;
        if (cluster)
            printf("between the tasks, values cross by Send/Recv, whose bytes the trace does not record\n");
        else
            printf("copied between accelerators: %.0f bytes (%.2f MB) per step\n", bytes, bytes / 1e6);
    }
    trace_events_free(&t);
    return 0;
}
