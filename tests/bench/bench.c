/* bench.c: `make bench`, every comparison measured side by side in one run.
 * GEMM and convolution kernels (flowlab on PoCL, CLBlast on PoCL, OpenBLAS;
 * medians of several repetitions), then whole training steps
 * (bench_training.c: the lab beside each PyTorch installed), then chapter
 * 2's scaling beside chapters 3, 4, 6 and 7 on the same two CPUs
 * (bench_cores.c, bench_cluster.c, bench_replication.c, bench_allreduce.c,
 * bench_pipeline.c): rounds of 40 steps, ranges printed. One table on
 * stdout and the same rows as CSV for the chart. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <cblas.h>
#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flowlab.h"
#include "session_internal.h" /* the per-op trace events */
#include "../../labs/tools/trace_events.h" /* the breakdown reads the towers' trace */
#include "bench_allreduce.h"
#include "bench_cluster.h"
#include "bench_cores.h"
#include "bench_csv.h"
#include "bench_pipeline.h"
#include "bench_replication.h"
#include "bench_transport.h"
#include "bench_table.h"
#include "bench_tls.h"
#include "bench_training.h"

#define REPS 7
#define ROUNDS 3 /* compared kernels alternate, round by round */

static FILE *roofline; /* points for the roofline chart: name, FLOP/byte, GFLOP/s */
static double openblas_gflops = 0; /* sgemm 1024^3: the machine's GEMM rate */

/* One point of the roofline chart, as CSV: its short name, FLOP/byte, GFLOP/s. */
static void roofline_point(const char *name, double intensity, double gflops)
{
    bench_csv_text(roofline, name);
    fprintf(roofline, ",%.3f,%.3f\r\n", intensity, gflops);
}

/* What /gpu:0 is, for the row labels: "PoCL" (OpenCL) or "CUDA". */
static const char *gpu_label = "PoCL";

/* ---- the machine: memory bandwidth, for the roofline ---- */

static double memory_bandwidth_gbs(void)
{
    size_t n = (size_t)256 << 20;
    char *a = malloc(n), *b = malloc(n);
    memset(a, 1, n);
    memset(b, 2, n);
    double best = INFINITY;
    for (int r = 0; r < 10; r++) {
        double t0 = now();
        memcpy(b, a, n);
        best = fmin(best, now() - t0);
    }
    volatile char keep = b[n / 2]; /* the copy must happen */
    (void)keep;
    free(a);
    free(b);
    return 2.0 * n / best / 1e9; /* bytes read plus bytes written */
}

/* ---- GEMM ---- */

typedef struct {
    const char *name;
    int m, n, k;
    bool ta, tb;
    const char *label; /* the chart's words */
} gemm_shape;

static const gemm_shape gemms[] = {
    {"sgemm 1024^3", 1024, 1024, 1024, false, false, "sgemm 1024^3"},
    {"dense_1 forward X W", 128, 1024, 3136, false, false, "dense_1 fwd"},
    {"dense_1 dX = dY W^T", 128, 3136, 1024, false, true, "dense_1 dX"},
    {"dense_1 dW = X^T dY", 3136, 1024, 128, true, false, "dense_1 dW"},
    {"conv_2 GEMM shape [25088,800]x[800,64]", 25088, 64, 800, false, false, "conv_2 as GEMM"},
};

static double gflops(const gemm_shape *s, double seconds) { return 2.0 * s->m * s->n * s->k / seconds / 1e9; }

static double time_openblas(const gemm_shape *s)
{
    float *a = calloc((size_t)s->m * s->k, 4), *b = calloc((size_t)s->k * s->n, 4), *c = calloc((size_t)s->m * s->n, 4);
    double t[REPS];
    for (int r = -2; r < REPS; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->m, s->n,
                    s->k, 1.0f, a, s->ta ? s->m : s->k, b, s->tb ? s->k : s->n, 0.0f, c, s->n);
        if (r >= 0)
            t[r] = now() - t0;
    }
    free(a);
    free(b);
    free(c);
    return median(t, REPS);
}

/* flowlab's MatMul on /gpu:0 through a session: operands are variables that
 * live on the device, and the product is a target, so nothing is copied. */
static double time_flowlab_matmul(const gemm_shape *s)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/gpu:0");
    fl_node *a = fl_get_variable(g, "a", s->ta ? fl_shape_make(2, s->k, s->m) : fl_shape_make(2, s->m, s->k),
                                 fl_random_uniform_initializer(-1, 1, 1));
    fl_node *b = fl_get_variable(g, "b", s->tb ? fl_shape_make(2, s->n, s->k) : fl_shape_make(2, s->k, s->n),
                                 fl_random_uniform_initializer(-1, 1, 2));
    fl_node *c = fl_matmul(g, a, b, s->ta, s->tb, NULL);
    fl_node *init = fl_global_variables_initializer(g);
    fl_device_pop(g);
    fl_session *sess = fl_session_new(g, NULL);
    double t[REPS] = {0};
    int rc = fl_session_run(sess, NULL, 0, NULL, 0, NULL, &init, 1);
    for (int r = -2; rc == 0 && r < REPS; r++) {
        double t0 = now();
        rc = fl_session_run(sess, NULL, 0, NULL, 0, NULL, &c, 1);
        if (r >= 0)
            t[r] = now() - t0;
    }
    if (rc != 0)
        fprintf(stderr, "bench: flowlab matmul: %s\n", fl_session_error(sess));
    fl_session_free(sess);
    fl_graph_free(g);
    return rc == 0 ? median(t, REPS) : NAN;
}

typedef struct {
    cl_context context;
    cl_command_queue queue;
} opencl;

static int open_pocl(opencl *cl)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0)
        return -1;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &n) != CL_SUCCESS || n == 0)
        return -1;
    cl_int err;
    cl->context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return -1;
    cl->queue = clCreateCommandQueue(cl->context, device, 0, &err);
    return err == CL_SUCCESS ? 0 : -1;
}

static double time_clblast(opencl *cl, const gemm_shape *s)
{
    cl_int err;
    size_t bytes[3] = {(size_t)s->m * s->k * 4, (size_t)s->k * s->n * 4, (size_t)s->m * s->n * 4};
    cl_mem buf[3];
    for (int i = 0; i < 3; i++)
        buf[i] = clCreateBuffer(cl->context, CL_MEM_READ_WRITE, bytes[i], NULL, &err);
    double t[REPS] = {0};
    CLBlastStatusCode status = CLBlastSuccess;
    for (int r = -2; status == CLBlastSuccess && r < REPS; r++) {
        double t0 = now();
        status = CLBlastSgemm(CLBlastLayoutRowMajor, s->ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                              s->tb ? CLBlastTransposeYes : CLBlastTransposeNo, s->m, s->n, s->k, 1.0f, buf[0], 0,
                              s->ta ? s->m : s->k, buf[1], 0, s->tb ? s->k : s->n, 0.0f, buf[2], 0, s->n,
                              &cl->queue, NULL);
        clFinish(cl->queue);
        if (r >= 0)
            t[r] = now() - t0;
    }
    for (int i = 0; i < 3; i++)
        clReleaseMemObject(buf[i]);
    return status == CLBlastSuccess ? median(t, REPS) : NAN;
}

static void bench_gemm(void)
{
    opencl cl = {0};
    bool have_cl = open_pocl(&cl) == 0;
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++) {
        const gemm_shape *s = &gemms[i];
        double t_ours[ROUNDS], t_blas[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            t_ours[r] = time_flowlab_matmul(s);
            t_blas[r] = time_openblas(s);
        }
        double ours = gflops(s, median(t_ours, ROUNDS)), blas = gflops(s, median(t_blas, ROUNDS));
        if (i == 0)
            openblas_gflops = blas;
        /* arithmetic intensity if each matrix crosses memory once */
        double bytes = 4.0 * ((double)s->m * s->k + (double)s->k * s->n + (double)s->m * s->n);
        roofline_point(s->label, 2.0 * s->m * s->n * s->k / bytes, ours);
        row("sgemm", s->name, s->label, "GFLOP/s", ours, blas, "OpenBLAS");
        if (have_cl)
            row("sgemm", s->name, s->label, "GFLOP/s", ours, gflops(s, time_clblast(&cl, s)), "CLBlast");
    }
    if (!have_cl)
        note("%s", "no OpenCL device: CLBlast rows skipped");
}

/* ---- convolution: PoCL against the host's OpenBLAS im2col + sgemm ---- */

typedef struct {
    const char *name;
    int h, c, oc;
} conv_shape;

/* The time of exactly one op: the session's trace records each op's run,
 * timed by the device itself on PoCL and by the host clock on /cpu:0, so the
 * rest of the gradient graph (the sum that seeds it) is left out. */
static double time_conv(const conv_shape *cs, const char *device, int which)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, device);
    fl_node *x = fl_get_variable(g, "x", fl_shape_make(4, 128, cs->h, cs->h, cs->c), fl_random_uniform_initializer(0, 1, 1));
    fl_node *f = fl_get_variable(g, "f", fl_shape_make(4, 5, 5, cs->c, cs->oc), fl_random_uniform_initializer(-1, 1, 2));
    fl_node *y = fl_conv2d(g, x, f, 1, 1, FL_SAME, NULL);
    fl_node *grads[2];
    fl_gradients(g, fl_reduce_sum(g, y, NULL, 0, false, NULL), (fl_node *[]){x, f}, 2, grads);
    fl_node *init = fl_global_variables_initializer(g);
    fl_device_pop(g);
    /* Conv2D, Conv2DBackpropInput or Conv2DBackpropFilter */
    fl_node *op = which == 0 ? y : grads[which - 1];
    fl_session *s = fl_session_new(g, NULL);
    double t[REPS] = {0};
    int rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    rc = rc ? rc : fl_session_run(s, NULL, 0, NULL, 0, NULL, &op, 1); /* warm-up */
    fl_session_set_tracing(s, true);
    for (int r = 0; rc == 0 && r < REPS; r++)
        rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &op, 1);
    int n = 0;
    for (int i = 0; rc == 0 && i < s->trace.nevents && n < REPS; i++)
        if (s->trace.events[i].node == op->id && s->trace.events[i].copy_of < 0)
            t[n++] = s->trace.events[i].duration_us * 1e-6;
    if (rc != 0)
        fprintf(stderr, "bench: conv on %s: %s\n", device, fl_session_error(s));
    fl_session_free(s);
    fl_graph_free(g);
    return rc == 0 && n == REPS ? median(t, REPS) : NAN;
}

static void bench_conv(void)
{
    const conv_shape shapes[] = {{"conv_1 [128,28,28,1] 5x5x32", 28, 1, 32}, {"conv_2 [128,14,14,32] 5x5x64", 14, 32, 64}};
    const char *pass[] = {"forward", "backprop input", "backprop filter"};
    const char *short_pass[] = {"fwd", "dX", "dW"};
    for (int i = 0; i < 2; i++)
        for (int p = 0; p < 3; p++) {
            double gpu = time_conv(&shapes[i], "/gpu:0", p), cpu = time_conv(&shapes[i], "/cpu:0", p);
            char what[96], label[32];
            snprintf(what, sizeof what, "%s %s", shapes[i].name, pass[p]);
            snprintf(label, sizeof label, "conv_%d %s", i + 1, short_pass[p]);
            /* every pass does the forward's multiply-adds: 2 N H W (5 5 C) Cout */
            double flops = 2.0 * 128 * shapes[i].h * shapes[i].h * 25.0 * shapes[i].c * shapes[i].oc;
            row("conv2d", what, label, "GFLOP/s", flops / gpu / 1e9, flops / cpu / 1e9, "OpenBLAS");
            /* intensity if image, filter and output each cross memory once */
            double bytes = 4.0 * (128.0 * shapes[i].h * shapes[i].h * (shapes[i].c + shapes[i].oc) +
                                  25.0 * shapes[i].c * shapes[i].oc);
            roofline_point(label, flops / bytes, flops / gpu / 1e9);
        }
    note("conv2d: flowlab on %s against /cpu:0's OpenBLAS im2col + sgemm; each row times that one op, from the "
         "session's per-op trace",
         strcmp(gpu_label, "CUDA") == 0 ? "CUDA (cuDNN)" : "PoCL (implicit GEMM, no patch matrix)");
}

/* Where a step's time goes, from a Chrome trace of steps 2-4 of a run:
 * the towers' device time, cross-device copies, and the controller's ops. */
typedef struct {
    double device_us, copy_us, controller_us, span_us;
    double idle_us; /* no device op running: every tower waits on the host */
    int ndevices;
} breakdown;

typedef struct {
    double start, end;
} interval;

static int compare_starts(const void *a, const void *b)
{
    double x = ((const interval *)a)->start, y = ((const interval *)b)->start;
    return (x > y) - (x < y);
}

/* The time inside [first, last] that none of the intervals covers. */
static double uncovered(interval *v, int n, double first, double last)
{
    qsort(v, (size_t)n, sizeof *v, compare_starts);
    double covered = 0, reach = first;
    for (int i = 0; i < n; i++) {
        double from = fmax(v[i].start, reach);
        if (v[i].end > from)
            covered += v[i].end - from;
        reach = fmax(reach, v[i].end);
    }
    return last - first - covered;
}

static breakdown read_breakdown(const char *path)
{
    breakdown b = {.span_us = NAN, .idle_us = NAN};
    trace_events t;
    if (trace_events_read(path, &t) != 0 || t.count == 0)
        return b;
    interval *busy = malloc((size_t)t.count * sizeof *busy);
    int nbusy = 0;
    char seen[8][32];
    for (int k = 0; k < t.count; k++) {
        const trace_event *e = &t.events[k];
        if (strcmp(e->cat, "Copy") == 0) {
            b.copy_us += e->dur;
        } else if (strcmp(e->device, "/cpu:0") == 0) {
            b.controller_us += e->dur;
        } else {
            b.device_us += e->dur;
            busy[nbusy++] = (interval){e->start, e->start + e->dur};
            bool known = false;
            for (int i = 0; i < b.ndevices; i++)
                known = known || strcmp(seen[i], e->device) == 0;
            if (!known && b.ndevices < 8)
                snprintf(seen[b.ndevices++], sizeof seen[0], "%s", e->device);
        }
    }
    b.span_us = t.last > t.first ? t.last - t.first : NAN;
    b.idle_us = nbusy > 0 ? uncovered(busy, nbusy, t.first, t.last) : NAN;
    free(busy);
    trace_events_free(&t);
    return b;
}

static bool pocl_has_two_devices(void)
{
    return !isnan(run_images_per_second(ON_POCL_TWO LAB02 " --num_gpus 2 --train_steps 4 --log_every 1"));
}

/* Chapter 2's towers on the same two CPUs (bench_cores.h), one tower with
 * a pool of one PoCL thread, the whole process on one of the CPUs (its
 * host thread, which feeds the tower and runs the controller's updates,
 * as well: one device on one core), against two towers sharing a pool of
 * two, the target's two sides alternated (run_alternated); then one device
 * with both threads and the controller on /gpu:0, a run each. */
static void bench_scaling(void)
{
    int rounds = bench_rounds(), steps = bench_steps();
    char flags[128], command[512];
    snprintf(flags, sizeof flags, "--train_steps %d" SCALING_FLAGS, steps + 2);
    char one_tower[256];
    snprintf(one_tower, sizeof one_tower, ON_POCL_ONE "%s " LAB02 " --num_gpus 1" SCALING_FLAGS, bench_one_core());
    const char *sides[2] = {one_tower, TWO_TOWERS};
    double one_r[BENCH_MAX_ROUNDS], both_r[BENCH_MAX_ROUNDS], two_r[BENCH_MAX_ROUNDS], two_gpu_r[BENCH_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        double figures[2];
        run_alternated(sides, 2, steps, figures);
        one_r[r] = figures[0];
        two_r[r] = figures[1];
        snprintf(command, sizeof command, "POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=2 " ON_POCL LAB02
                 " --num_gpus 1 %s", flags);
        both_r[r] = run_images_per_second(command);
        snprintf(command, sizeof command, TWO_TOWERS " --controller /gpu:0 --train_steps %d", steps + 2);
        two_gpu_r[r] = run_images_per_second(command);
    }
    printf("  ch2 rows: %d rounds; 1 tower and 2 towers alternated in %d runs each of %d steps after 2 of warm-up, "
           "the others a run of %d; cores: CPUs %s for every side but 1 tower; 1 tower: a PoCL pool of 1 thread, the "
           "process on one CPU (%s); 2 towers, and 1 device on 2 cores: a pool of 2 threads\n", rounds,
           bench_alternations(), steps / bench_alternations(), steps, bench_cores(),
           *bench_one_core() ? bench_one_core() : "unpinned");
    row_rounds("scaling", "ch2: 2 towers (2 cores) vs 1 device (1 core)", "ch2 2 towers on 2 cores", "img/s", two_r,
               one_r, rounds, "1 tower");
    target_line("ch2 target: 2 towers at least 1.8x 1 device", two_r, one_r, rounds, 1.8);
    row_rounds("scaling", "ch2: 2 towers vs 1 device, both on 2 cores", "ch2 2 towers (both 2 cores)", "img/s", two_r,
               both_r, rounds, "1 device");
    row_rounds("scaling", "ch2: controller /gpu:0 vs /cpu:0 (2 towers)", "ch2 controller on /gpu:0", "img/s",
               two_gpu_r, two_r, rounds, "on /cpu:0");
    /* A run of its own: a traced step is slower, and no timed run is traced. */
    run_images_per_second(TWO_TOWERS " --train_steps 5 --trace build/bench/towers.json");
    breakdown b = read_breakdown("build/bench/towers.json");
    if (isnan(b.span_us) || b.ndevices == 0) {
        note("%s", "no trace of the towers: breakdown skipped");
        return;
    }
    printf("  ch2 step breakdown (2 towers, steps 2-4 of a traced run, per step): wall %.1f ms; each tower's "
           "device busy %.1f ms (%.0f%%); no device busy (all wait on the host: feeding, the last averages, "
           "Adam) %.1f ms (%.0f%%); on the controller, mostly while the towers compute: copies %.1f ms, "
           "averaging and Adam %.1f ms\n",
           b.span_us / 3e3, b.device_us / b.ndevices / 3e3, 100 * b.device_us / b.ndevices / b.span_us,
           b.idle_us / 3e3, 100 * b.idle_us / b.span_us, b.copy_us / 3e3, b.controller_us / 3e3);
    const char *parts[] = {"ch2 step wall", "ch2 tower device busy", "ch2 no device busy", "ch2 copies",
                           "ch2 controller ops"};
    double ms[] = {b.span_us / 3e3, b.device_us / b.ndevices / 3e3, b.idle_us / 3e3, b.copy_us / 3e3,
                   b.controller_us / 3e3};
    for (int i = 0; i < 5; i++)
        bench_csv_row(bench_results, "breakdown", parts[i], parts[i], "ms", ms[i], NULL, NAN);
}

/* Chapters 2-7: every scaling row, on the same two CPUs. */
static void bench_scaling_rows(void)
{
    bench_transport(); /* chapter 3: what a value that crosses tasks costs on the wire */
    if (!pocl_has_two_devices()) {
        note("%s", "no two PoCL devices (apt-get install pocl-opencl-icd): the ch2 and ch3 scaling rows are skipped");
        return;
    }
    bench_same_cores();
    bench_scaling();
    bench_between_graph();
    bench_replication(); /* chapter 3: in-graph across tasks against between-graph */
    if (allreduce_bench_ready())
        bench_allreduce_model();
    bench_pipeline();
}

/* The kernels, the machine's figures and chapter 1's step. */
static void bench_kernels(FILE *points)
{
    double bandwidth = memory_bandwidth_gbs();
    printf("memory bandwidth (memcpy, read + write): %.1f GB/s\n", bandwidth);
    bench_gemm();
    printf("roofline: GEMM peak %.1f GFLOP/s (OpenBLAS sgemm 1024^3), %.1f GB/s: ridge at %.1f FLOP/byte\n",
           openblas_gflops, bandwidth, openblas_gflops / bandwidth);
    bench_csv_row(bench_results, "machine", "memory bandwidth", "memory bandwidth", "GB/s", bandwidth, NULL, NAN);
    bench_csv_row(bench_results, "machine", "GEMM peak", "GEMM peak", "GFLOP/s", openblas_gflops, NULL, NAN);
    bench_conv();
    bench_training(gpu_label, openblas_gflops);
    fprintf(points, "# peak %.3f bandwidth %.3f\n", openblas_gflops, bandwidth);
}

static const char usage[] =
    "usage: bench [RESULTS.csv | --training | --scaling | --pipeline]\nRun by `make bench` from the repository root: measures "
    "flowlab's\nkernels and training steps beside OpenBLAS, CLBlast and PyTorch, prints one table\n"
    "and writes the rows as CSV (default build/bench/results.csv). --training measures only\n"
    "chapter 1's step beside PyTorch (speed and peak memory), prints its two targets and\n"
    "writes build/bench/training.csv. --scaling measures only the scaling rows of chapters\n"
    "2-7 (build/bench/scaling.csv); --pipeline only chapter 7's (build/bench/pipeline.csv).\nThe scaling rows run BENCH_ROUNDS rounds (3) of 40 steps\n"
    "(10 with BENCH_QUICK=1) and print each figure as its range over the rounds.\n";

int main(int argc, char **argv)
{
    /* --training: chapter 1's step and its targets alone (a minute, not the whole bench);
     * --scaling: chapters 2-7's rows alone. Either writes a CSV of its own and no roofline:
     * the last full run's stay for bench-charts. */
    const char *mode = argc > 1 && argv[1][0] == '-' ? argv[1] : "";
    bool training_only = strcmp(mode, "--training") == 0, scaling_only = strcmp(mode, "--scaling") == 0;
    bool pipeline_only = strcmp(mode, "--pipeline") == 0;
    const char *csv_path = training_only ? "build/bench/training.csv" : scaling_only ? "build/bench/scaling.csv"
                           : pipeline_only ? "build/bench/pipeline.csv" : argc > 1 ? argv[1] : "build/bench/results.csv";
    if (mode[0] && !training_only && !scaling_only && !pipeline_only) {
        printf("%s", usage);
        return strcmp(mode, "--help") == 0 ? 0 : 2;
    }
    bench_results = fopen(csv_path, "w");
    roofline = fopen(mode[0] ? "/dev/null" : "build/bench/roofline.csv", "w");
    if (!bench_results || !roofline) {
        fprintf(stderr, "bench: cannot write %s or build/bench/roofline.csv (run from the repository root)\n",
                csv_path);
        return 1;
    }
    bench_csv_header(bench_results);
    fl_device_info devices[8];
    int n = fl_list_devices(devices, 8);
    if (n < 2) {
        fprintf(stderr, "bench: no /gpu:0 (%s)\n", fl_last_error()); /* the reason has the hint */
        return 1;
    }
    printf("flowlab bench on %s (%d cores); /gpu:0 is %s\n", devices[0].description, devices[0].compute_units,
           devices[1].description);
    if (strcmp(devices[1].backend, "cuda") == 0)
        gpu_label = "CUDA";
    printf("%-9s %-44s %13s %-8s %13s %-10s %11s\n", "group", "measurement", "flowlab", "unit", "baseline", "",
           "ratio");
    if (training_only) {
        openblas_gflops = gflops(&gemms[0], time_openblas(&gemms[0]));
        bench_training(gpu_label, openblas_gflops);
    } else if (scaling_only) {
        bench_scaling_rows();
    } else if (pipeline_only) {
        bench_pipeline();
    } else {
        bench_kernels(roofline);
        bench_scaling_rows();
    }
    fclose(roofline);
    fclose(bench_results);
    printf("rows written to %s\n", csv_path);
    return 0;
}
