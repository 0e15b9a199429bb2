/* test_trace_timeline.c: labs/tools/trace_timeline, which draws a lab's
 * --trace as the book's timeline figure. A traced host session of three
 * ops and one event of another thread's gives a trace; the SVG must hold
 * one box per op, the device's lane, the other thread's lane (chapter 6's
 * collectives) and a legend of the kinds it has; a long trace's time labels
 * must not collide; a cluster's 40 lanes are all drawn, clear of their long
 * names; and bad input must get a message naming the file. */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "lab_runner.h"

static int count_of(const char *text, const char *part)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, part)); p += strlen(part))
        n++;
    return n;
}

/* x [2,3] times w [3,2], relu, sum on /cpu:0: one traced run, three ops. */
static int write_trace(const char *path)
{
    const float ones[6] = {1, 1, 1, 1, 1, 1};
    fl_graph *g = fl_graph_new();
    fl_tensor *wt = fl_tensor_from_floats(fl_shape_make(2, 3, 2), ones);
    fl_node *x = fl_constant(g, wt, "x");
    fl_node *mm = fl_matmul(g, x, fl_constant(g, wt, "w"), true, false, "tower_0/gradients/mm");
    fl_node *sum = fl_reduce_sum(g, fl_relu(g, mm, "relu"), NULL, 0, false, "average_gradients/sum");
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    fl_session_set_tracing(s, true);
    int rc = fl_session_run(s, NULL, 0, &sum, 1, &out, NULL, 0);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double us = now.tv_sec * 1e6 + now.tv_nsec / 1e3;
    fl_session_trace_event(s, "collectives", "MPI_Allreduce 2 tensors", us - 50, us);
    rc = rc ? rc : fl_session_write_trace(s, path);
    fl_tensor_free(out);
    fl_session_free(s);
    fl_graph_free(g);
    fl_tensor_free(wt);
    return rc;
}

static void draws_a_trace(const char *trace, const char *svg_path)
{
    char cmd[1400], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s %s", lab, trace, svg_path);
    ok(run_command(cmd, &out) == 0, "trace_timeline draws the trace (%s)", out ? out : "");
    free(out);
    char *svg = read_file(svg_path);
    ok(svg && strncmp(svg, "<svg ", 5) == 0, "the output is an SVG document");
    ok(svg && count_of(svg, "<title>") == 4, "one box per op run and one for the other thread's "
       "event: 4 (got %d)", svg ? count_of(svg, "<title>") : -1);
    ok(svg && strstr(svg, ">collectives</text>") &&
           strstr(svg, "fill=\"#2ca02c\"><title>MPI_Allreduce 2 tensors"),
       "the other thread's event is a green box on a lane of its own");
    ok(svg && strstr(svg, ">/cpu:0</text>"), "the lane is named after its device");
    ok(svg && strstr(svg, "<title>tower_0/gradients/mm (") && strstr(svg, "fill=\"#3182bd\"><title>tower_0/"),
       "a gradients op is a backward box, with its name to hover");
    ok(svg && strstr(svg, "fill=\"#ff7f0e\"><title>average_gradients/sum"), "an average_gradients op is orange");
    /* forward (relu), backward (mm), averaging (sum), collectives; no copy, no Adam. */
    ok(svg && count_of(svg, "width=\"14\" height=\"14\"") == 4 && strstr(svg, ">averaging the towers</text>") &&
           !strstr(svg, ">copy between devices</text>") && !strstr(svg, ">Adam's update, global step</text>"),
       "the legend names the four kinds the trace has, and only those");
    ok(svg && strstr(svg, "</svg>\n"), "the document is closed");
    free(svg);
}

/* trace_timeline run on trace: the SVG it drew (free it), or NULL. */
static char *drawn(const char *trace, const char *svg_path, const char *what)
{
    char cmd[1400], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s %s", lab, trace, svg_path);
    ok(run_command(cmd, &out) == 0, "trace_timeline draws %s (%s)", what, out ? out : "");
    free(out);
    return read_file(svg_path);
}

/* A hand-written trace of 2.3 s on one lane (a slow step of chapter 7's),
 * with a pipeline's accumulation: the time labels must stay 10 or fewer and
 * at least 60 px apart ("2000 ms" is about 50 px wide), and the
 * accumulation gets its own colour. */
static void labels_stay_apart(const char *trace, const char *svg_path)
{
    FILE *f = fopen(trace, "w");
    if (f) {
        fputs("{\"traceEvents\":[\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,"
              "\"args\":{\"name\":\"/gpu:1\"}},\n", f);
        fputs("{\"name\":\"micro_batch_0/model/stage_1/dense_1/MatMul\",\"cat\":\"MatMul\",\"ph\":\"X\","
              "\"pid\":1,\"tid\":1,\"ts\":1000,\"dur\":1200000,\"args\":{\"device\":\"/gpu:1\"}},\n", f);
        fputs("{\"name\":\"accumulate/model/dense_1/kernel/sum\",\"cat\":\"AddN\",\"ph\":\"X\",\"pid\":1,"
              "\"tid\":1,\"ts\":1201000,\"dur\":1100000,\"args\":{\"device\":\"/gpu:1\"}}\n]}\n", f);
        fclose(f);
    }
    char *svg = drawn(trace, svg_path, "a 2.3 s trace");
    int labels = 0;
    double last_x = -1e9, closest = 1e9;
    for (const char *p = svg; p && (p = strstr(p, "<text x=\"")); p++) {
        double x = atof(p + 9);
        const char *end = strstr(p, "</text>");
        if (!end || end - p < 4 || strncmp(end - 3, " ms", 3) != 0)
            continue;
        labels++;
        closest = x - last_x < closest ? x - last_x : closest;
        last_x = x;
    }
    ok(labels >= 3 && labels <= 11 && closest >= 60, "the time labels of a 2.3 s trace: %d of them, the "
       "closest two %.0f px apart (at most 11, at least 60 px)", labels, closest);
    ok(svg && strstr(svg, "fill=\"#fdae6b\"><title>accumulate/model/dense_1/kernel/sum") &&
           strstr(svg, ">accumulating micro-batches' gradients</text>"),
       "a pipeline's accumulation has its own colour and legend entry");
    free(svg);
}

/* A cluster's trace (chapter 3): 20 tasks, each with a lane for its device
 * and one for the client's requests to it, 40 lanes with long names. Every
 * lane is drawn and named, no box starts under the names, and the client's
 * requests have their own colour and legend entry. */
static void many_lanes(const char *trace, const char *svg_path)
{
    FILE *f = fopen(trace, "w");
    for (int task = 0; f && task < 20; task++)
        for (int kind = 0; kind < 2; kind++) {
            int tid = 2 * task + kind + 1;
            fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"%s"
                       "/job:worker/task:%d%s\"}},\n", tid == 1 ? "{\"traceEvents\":[\n" : "", tid,
                    kind ? "" : "client to ", task, kind ? "/gpu:0" : "");
            fprintf(f, "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%d,\"dur\":%d,"
                       "\"args\":{}}%s\n", kind ? "tower/MatMul" : "RUN_PARTITION", kind ? "MatMul" : "request", tid,
                    100 * task + 10 * kind, kind ? 50 : 90, tid == 40 ? "\n]}" : ",");
        }
    if (f)
        fclose(f);
    char *svg = drawn(trace, svg_path, "a trace of 40 lanes");
    ok(svg && strstr(svg, ">client to /job:worker/task:19</text>") && strstr(svg, ">/job:worker/task:19/gpu:0</text>"),
       "the last lanes are drawn, named in full");
    double leftmost = 1e9;
    for (const char *p = svg; p && (p = strstr(p, "<rect x=\"")); p++)
        if (strstr(p, "\"><title>") && strstr(p, "\"><title>") < strstr(p, "</rect>"))
            leftmost = atof(p + 9) < leftmost ? atof(p + 9) : leftmost;
    double names_end = 8 + 7.0 * (double)strlen("client to /job:worker/task:19");
    ok(leftmost >= names_end, "no box starts under the lanes' names (leftmost at %.0f px, the longest name ends "
       "about %.0f px)", leftmost, names_end);
    ok(svg && count_of(svg, "<title>") == 40 && strstr(svg, "fill=\"#bdbdbd\"><title>RUN_PARTITION") &&
           strstr(svg, ">request to a task, sent to answered</text>"),
       "40 boxes; the client's requests are grey, with a legend entry");
    free(svg);
}

static void rejects(const char *args, const char *want, const char *what)
{
    char cmd[1400], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s", lab, args);
    int status = run_command(cmd, &out);
    ok(status != 0 && out && strstr(out, want), "%s: exit %d, says '%s'", what, status, want);
    free(out);
}

int main(int argc, char **argv)
{
    (void)argc;
    setenv("FLOWLAB_BACKEND", "host", 1);
    lab_runner_start(argv[0], "test_trace_timeline", "labs/tools/trace_timeline");
    char trace[400], svg[400], not_trace[400], cmd[1400], *out = NULL;
    snprintf(trace, sizeof trace, "%s/trace.json", tmp_dir);
    snprintf(svg, sizeof svg, "%s/timeline.svg", tmp_dir);
    snprintf(not_trace, sizeof not_trace, "%s/notes.txt", tmp_dir);
    ok(write_trace(trace) == 0, "a traced run writes %s", trace);
    draws_a_trace(trace, svg);
    char long_trace[400];
    snprintf(long_trace, sizeof long_trace, "%s/long-trace.json", tmp_dir);
    labels_stay_apart(long_trace, svg);
    many_lanes(long_trace, svg);

    snprintf(cmd, sizeof cmd, "%s --help", lab);
    ok(run_command(cmd, &out) == 0 && out && strstr(out, "usage: trace_timeline"), "--help prints the usage");
    free(out);
    rejects("", "usage: trace_timeline", "no arguments");
    char missing[500];
    snprintf(missing, sizeof missing, "%s/missing.json", tmp_dir);
    snprintf(cmd, sizeof cmd, "%s %s", missing, svg);
    rejects(cmd, missing, "a missing trace");
    FILE *f = fopen(not_trace, "w");
    if (f) {
        fputs("just some notes\n", f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "%s %s", not_trace, svg);
    rejects(cmd, "holds no flowlab op events", "a file that is not a trace");
    /* under a plain file: no directory can be made there */
    snprintf(cmd, sizeof cmd, "%s %s/out.svg", trace, trace);
    rejects(cmd, "cannot write", "an SVG that cannot be written");
    lab_runner_finish();
    return done_testing();
}
