/* cost_model.c: chapter 6's cost model as a program. Given one worker's
 * measured compute time per step, the gradient bytes (chapter 1's model by
 * default, counted from its graph) and a network, it prints the predicted
 * step time, images/sec and scaling efficiency at N = 1 to 512 workers for
 * ring allreduce and for parameter servers, and can write them as CSV.
 * The formulas and their assumptions are in labs/06-allreduce/cost_model.h. */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../06-allreduce/cost_model.h"

static const char program[] = "cost_model";

typedef struct {
    cost_workload work;
    cost_network net;
    int batch_size, shards, max_workers;
    int cores; /* --cores: the workers share this many; 0: each has its own */
    bool ps_sync; /* --ps_sync: each pull waits for every push */
    const char *csv_path;
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s --compute_ms T [flags]\n"
            "Predicts one synchronous data-parallel step at N = 1 to --max_workers workers\n"
            "with ring allreduce and with parameter servers (the alpha-beta model of\n"
            "labs/06-allreduce/cost_model.h): step time, images/sec and scaling efficiency\n"
            "(throughput at N over N times one worker's alone).\n"
            "  --compute_ms T      one worker's forward, backward and update, measured (required;\n"
            "                      `make bench` prints this machine's as \"ch6 compute per step\")\n"
            "  --bytes B           gradient bytes per step (default: chapter 1's model, counted\n"
            "                      from its graph: 3,274,634 float32 variables, 13,098,536 bytes)\n"
            "  --batch_size N      images per worker per step, for images/sec (default 128)\n"
            "  --alpha_us A        seconds per message, in microseconds (default 25: a cluster's\n"
            "                      Ethernet and its software; `make bench` measures this machine's)\n"
            "  --bandwidth_gbit G  a link's bandwidth each way in Gbit/s (default 25, the\n"
            "                      network of the Horovod paper's benchmarks)\n"
            "  --ps_shards M       parameter-server shards, each with a link of its own (default 8)\n"
            "  --overlap F         share of the compute that communication may hide behind,\n"
            "                      0 to 1 (default 0: communication after the backward pass)\n"
            "  --ps_sync           synchronous parameter servers: each pull waits for every push,\n"
            "                      so the busiest link's two directions take turns (default: they\n"
            "                      work at once, as asynchronous workers keep them busy)\n"
            "  --cores C           the workers share C cores, as on one machine: past C workers,\n"
            "                      each one's compute takes N/C times as long (default: each\n"
            "                      worker has a machine of its own)\n"
            "  --max_workers N     the largest N (default 512)\n"
            "  --csv PATH          also write every N from 1 to --max_workers as CSV\n",
            program);
}

/* A number flag's value, or exit 2 naming the flag and what it accepts. */
static double number_flag(const char *flag, const char *value, double low, double high,
                          const char *accepts)
{
    char *end = NULL;
    errno = 0;
    double v = value ? strtod(value, &end) : NAN;
    if (!value || end == value || *end != '\0' || errno != 0 || !(v >= low && v <= high)) {
        fprintf(stderr, "%s: %s %s: %s (see --help)\n", program, flag, value ? value : "needs a value",
                accepts);
        exit(2);
    }
    return v;
}

static int whole_flag(const char *flag, const char *value, int low, int high)
{
    char accepts[96];
    snprintf(accepts, sizeof accepts, "give a whole number from %d to %d", low, high);
    double v = number_flag(flag, value, low, high, accepts);
    if (v != floor(v)) {
        fprintf(stderr, "%s: %s %s: %s (see --help)\n", program, flag, value, accepts);
        exit(2);
    }
    return (int)v;
}

/* A path flag's value, or exit 2 when it has none. */
static const char *path_flag(const char *flag, const char *value)
{
    if (!value || !value[0] || strncmp(value, "--", 2) == 0) {
        fprintf(stderr, "%s: %s needs a value: the path of the file to write (see --help)\n", program,
                flag);
        exit(2);
    }
    return value;
}

/* One flag and its value; returns how many arguments it took, 0 if unknown. */
static int parse_one(options *o, const char *flag, const char *value)
{
    if (strcmp(flag, "--ps_sync") == 0)
        return o->ps_sync = true, 1;
    if (strcmp(flag, "--compute_ms") == 0)
        o->work.compute_s = number_flag(flag, value, 1e-6, 1e9, "give milliseconds above 0") / 1e3;
    else if (strcmp(flag, "--bytes") == 0)
        o->work.gradient_bytes = number_flag(flag, value, 1, 1e15, "give a byte count of 1 or more");
    else if (strcmp(flag, "--batch_size") == 0)
        o->batch_size = whole_flag(flag, value, 1, 1 << 24);
    else if (strcmp(flag, "--alpha_us") == 0)
        o->net.alpha_s = number_flag(flag, value, 0, 1e9, "give microseconds, 0 or more") / 1e6;
    else if (strcmp(flag, "--bandwidth_gbit") == 0)
        o->net.bandwidth_Bps = number_flag(flag, value, 1e-6, 1e9, "give Gbit/s above 0") * 1e9 / 8;
    else if (strcmp(flag, "--ps_shards") == 0)
        o->shards = whole_flag(flag, value, 1, 1 << 20);
    else if (strcmp(flag, "--overlap") == 0)
        o->work.overlap = number_flag(flag, value, 0, 1, "give a share from 0 to 1");
    else if (strcmp(flag, "--cores") == 0)
        o->cores = whole_flag(flag, value, 1, 1 << 20);
    else if (strcmp(flag, "--max_workers") == 0)
        o->max_workers = whole_flag(flag, value, 2, 1 << 20);
    else if (strcmp(flag, "--csv") == 0)
        o->csv_path = path_flag(flag, value);
    else
        return 0;
    return 2;
}

static options parse_flags(int argc, char **argv)
{
    options o = {.net = {25e-6, 25e9 / 8}, .batch_size = 128, .shards = 8, .max_workers = 512};
    for (int i = 1; i < argc;) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        int used = parse_one(&o, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
        if (used == 0) {
            fprintf(stderr, "%s: unknown flag %s (see --help)\n", program, argv[i]);
            exit(2);
        }
        i += used;
    }
    if (o.work.compute_s <= 0) {
        fprintf(stderr, "%s: --compute_ms is required: one worker's measured step time "
                "(`make bench` prints it; see --help)\n", program);
        exit(2);
    }
    return o;
}

/* One N: ring and ps step seconds. */
typedef struct {
    double ring_s, ps_s;
} prediction;

static prediction predict(const options *o, int n)
{
    cost_workload w = o->work;
    if (o->cores > 0 && n > o->cores) /* N workers on C cores: each computes C/N of the time */
        w.compute_s *= (double)n / o->cores;
    double ps_s = o->ps_sync ? parameter_server_sync_seconds(n, o->shards, w.gradient_bytes, o->net)
                             : parameter_server_seconds(n, o->shards, w.gradient_bytes, o->net);
    return (prediction){ring_step_seconds(n, w, o->net), step_seconds(w, ps_s)};
}

static void print_table(const options *o)
{
    printf("%d-worker steps of %.1f ms compute and %.0f gradient bytes (%.1f MB), batch %d per "
           "worker, overlap %.2f;\nnetwork: alpha %.2f us, %.3g Gbit/s (%.3g GB/s) per link; %d ps "
           "shard%s\n",
           o->max_workers, o->work.compute_s * 1e3, o->work.gradient_bytes, o->work.gradient_bytes / 1e6,
           o->batch_size, o->work.overlap, o->net.alpha_s * 1e6, o->net.bandwidth_Bps * 8 / 1e9,
           o->net.bandwidth_Bps / 1e9, o->shards, o->shards == 1 ? "" : "s");
    printf("%7s | %10s %12s %10s | %10s %12s %10s\n", "workers", "ring ms", "ring img/s", "ring eff",
           "ps ms", "ps img/s", "ps eff");
    for (int n = 1; n <= o->max_workers; n *= 2) {
        prediction p = predict(o, n);
        printf("%7d | %10.2f %12.1f %9.1f%% | %10.2f %12.1f %9.1f%%\n", n, p.ring_s * 1e3,
               job_images_per_second(n, o->batch_size, p.ring_s), 100 * scaling_efficiency(o->work, p.ring_s),
               p.ps_s * 1e3, job_images_per_second(n, o->batch_size, p.ps_s),
               100 * scaling_efficiency(o->work, p.ps_s));
    }
}

/* Every N from 1 to max_workers into f, for a figure. */
static void write_csv(const options *o, FILE *f)
{
    fprintf(f, "workers,ring_step_ms,ring_images_per_sec,ring_efficiency,ps_step_ms,"
               "ps_images_per_sec,ps_efficiency\n");
    for (int n = 1; n <= o->max_workers; n++) {
        prediction p = predict(o, n);
        fprintf(f, "%d,%.4f,%.2f,%.5f,%.4f,%.2f,%.5f\n", n, p.ring_s * 1e3,
                job_images_per_second(n, o->batch_size, p.ring_s), scaling_efficiency(o->work, p.ring_s),
                p.ps_s * 1e3, job_images_per_second(n, o->batch_size, p.ps_s),
                scaling_efficiency(o->work, p.ps_s));
    }
}

/* Exits 1 naming --csv and why. */
static void csv_failed(const char *path)
{
    fprintf(stderr, "%s: --csv %s: %s\n", program, path, strerror(errno));
    exit(1);
}

int main(int argc, char **argv)
{
    options o = parse_flags(argc, argv);
    if (o.work.gradient_bytes <= 0)
        o.work.gradient_bytes = chapter1_gradient_bytes();
    if (o.work.gradient_bytes <= 0) {
        fprintf(stderr, "%s: cannot build chapter 1's model to count its bytes; give --bytes\n", program);
        return 1;
    }
    FILE *csv = o.csv_path ? fopen(o.csv_path, "w") : NULL; /* before the table: fail early */
    if (o.csv_path && !csv)
        csv_failed(o.csv_path);
    print_table(&o);
    if (csv) {
        write_csv(&o, csv);
        if (fclose(csv) != 0)
            csv_failed(o.csv_path);
    }
    return 0;
}
