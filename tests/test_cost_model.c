/* test_cost_model.c: chapter 6's alpha-beta model (labs/06-allreduce/
 * cost_model.c) against cases worked by hand, its edge cases (one worker,
 * overlap), its shape (monotone in N, the ring's bytes bounded), the fit of
 * alpha and bandwidth the bench uses, chapter 1's byte count, and the
 * program labs/tools/cost_model with its flags. No timing here: the check
 * against a measured 2-process run is `make bench`'s (bench_allreduce.c). */
#include "lab_runner.h"
#include "../labs/06-allreduce/cost_model.c" /* its functions, linked into this test */

#define EXACT 1e-12

static const cost_network net = {.alpha_s = 10e-6, .bandwidth_Bps = 1e9};

static void test_ring_by_hand(void)
{
    ok(ring_allreduce_seconds(1, 1e6, net) == 0, "ring, 1 worker: nothing to send, 0 s");
    /* 2 messages of alpha, and 2 (1/2) of the bytes: 20 us + 1 ms */
    is_near(ring_allreduce_seconds(2, 1e6, net), 20e-6 + 1e-3, EXACT, "ring, 2 workers, 1 MB at 1 GB/s and "
            "10 us: 2 alpha + bytes/B = 1.020 ms");
    /* 6 alpha + 2 (3/4) bytes / B = 60 us + 1.5 ms */
    is_near(ring_allreduce_seconds(4, 1e6, net), 60e-6 + 1.5e-3, EXACT, "ring, 4 workers: 6 alpha + 1.5 "
            "bytes/B = 1.560 ms");
    cost_network no_latency = {0, 1e9};
    is_near(ring_allreduce_seconds(512, 1e9, no_latency), 2.0 * 511 / 512, EXACT,
            "ring, 512 workers, 1 GB at 1 GB/s, alpha 0: 2 (N-1)/N s");
}

static void test_ps_by_hand(void)
{
    /* 8 workers, 2 shards: each shard carries 4 MB each way, a worker 1 MB, then 1 MB */
    is_near(parameter_server_seconds(8, 2, 1e6, net), 4e-3 + 20e-6, EXACT,
            "ps, 8 workers, 2 shards, 1 MB: the shard's 4 MB at 1 GB/s + 2 alpha = 4.020 ms");
    is_near(parameter_server_seconds(1, 4, 1e6, net), 2e-3 + 20e-6, EXACT,
            "ps, 1 worker, 4 shards: the worker's own link limits, its push then its pull: 2.020 ms");
    is_near(parameter_server_seconds(8, 8, 1e6, net), 2e-3 + 20e-6, EXACT,
            "ps, as many shards as workers: 2 bytes/B + 2 alpha, like the 1-worker case");
    is_near(parameter_server_sync_seconds(8, 2, 1e6, net), 8e-3 + 20e-6, EXACT,
            "synchronous ps, 8 workers, 2 shards: every push, then every pull: 8.020 ms");
}

static void test_steps(void)
{
    cost_workload w = {.compute_s = 1.0, .gradient_bytes = 1e6, .overlap = 0};
    is_near(step_seconds(w, 0.3), 1.3, EXACT, "no overlap: compute, then the communication");
    w.overlap = 0.5;
    is_near(step_seconds(w, 0.3), 1.0, EXACT, "overlap 0.5: 0.3 s of communication hides behind the last "
            "0.5 s of compute");
    is_near(step_seconds(w, 0.8), 1.3, EXACT, "overlap 0.5: 0.8 s sticks out by 0.3 s");
    w.overlap = 0;
    ok(ring_step_seconds(1, w, net) == w.compute_s && scaling_efficiency(w, ring_step_seconds(1, w, net)) == 1,
       "ring at N = 1: the step is the compute, efficiency exactly 1");
    is_near(job_images_per_second(4, 64, 0.5), 512, EXACT, "4 workers of 64 images in 0.5 s: 512 images/sec");
}

/* Over N = 1..512: the ring's time never falls, its bandwidth term stays
 * under 2 bytes/B, efficiencies never rise, and ps with M fixed grows. */
static void test_shape(void)
{
    cost_workload w = {.compute_s = 0.05, .gradient_bytes = 13098536, .overlap = 0};
    cost_network cluster = {25e-6, 25e9 / 8};
    bool ring_rises = true, ring_bounded = true, falls = true;
    for (int n = 2; n <= 512; n++) {
        double t = ring_allreduce_seconds(n, w.gradient_bytes, cluster);
        ring_rises = ring_rises && t >= ring_allreduce_seconds(n - 1, w.gradient_bytes, cluster);
        ring_bounded = ring_bounded && t - 2 * (n - 1) * cluster.alpha_s <= 2 * w.gradient_bytes / cluster.bandwidth_Bps;
        falls = falls && ring_step_seconds(n, w, cluster) >= ring_step_seconds(n - 1, w, cluster) &&
                parameter_server_step_seconds(n, 8, w, cluster) >= parameter_server_step_seconds(n - 1, 8, w, cluster);
    }
    ok(ring_rises, "ring time never falls as N grows from 1 to 512");
    ok(ring_bounded, "and its bandwidth term stays under 2 bytes/B: each worker sends under twice its bytes");
    ok(falls, "step times never fall (efficiencies never rise) with N, ring and 8 ps shards alike");
    double ps64 = parameter_server_seconds(64, 8, w.gradient_bytes, cluster);
    double ps128 = parameter_server_seconds(128, 8, w.gradient_bytes, cluster);
    is_near(ps128 - 2 * cluster.alpha_s, 2 * (ps64 - 2 * cluster.alpha_s), 1e-9,
            "8 shards: past 8 workers a shard's link time doubles with N");
}

/* Inception V3 (95.4 MB of float32 gradients) at 64 images per step on a
 * P100 (142 images/sec, TensorFlow's 2017 benchmarks: 0.451 s), 25 Gbit/s
 * and 25 us: the ring's prediction at 128 workers lands near the 88% the
 * Horovod paper measured there. A property of the arithmetic, not a timing. */
static void test_published_case(void)
{
    cost_workload w = {.compute_s = 64 / 142.0, .gradient_bytes = 23851784 * 4.0, .overlap = 0};
    cost_network cluster = {25e-6, 25e9 / 8};
    double ring = scaling_efficiency(w, ring_step_seconds(128, w, cluster));
    double ps = scaling_efficiency(w, parameter_server_step_seconds(128, 8, w, cluster));
    ok(fabs(ring - 0.88) <= 0.03, "Inception V3 on 128 workers: ring efficiency %.3f, within 3 points of "
       "Horovod's published 0.88", ring);
    ok(ps < 0.6 && ps < ring, "8 ps shards there: %.3f, far under the ring", ps);
}

static void test_fit(void)
{
    cost_network fitted;
    /* made from alpha 0.5 us and 2 GB/s: t = 2 alpha + bytes / B */
    double small = 2 * 0.5e-6 + 4 / 2e9, large = 2 * 0.5e-6 + 13098536 / 2e9;
    ok(fit_two_worker_allreduce(4, small, 13098536, large, &fitted) == 0, "the fit takes two timings");
    is_near(fitted.alpha_s * 1e6, 0.5, 1e-9, "and gives back alpha (0.5 us)");
    is_near(fitted.bandwidth_Bps / 1e9, 2.0, 1e-9, "and bandwidth (2 GB/s)");
    ok(fit_two_worker_allreduce(4, 1e-3, 13098536, 1e-4, &fitted) == -1,
       "a large message faster than a tiny one is no network: -1");
    ok(fit_two_worker_allreduce(4, 0, 4, 1e-3, &fitted) == -1, "nor two timings of one size");
}

static void test_chapter1_bytes(void)
{
    /* conv_1 5*5*1*32 + 32, conv_2 5*5*32*64 + 64, dense_1 3136*1024 + 1024,
     * dense_2 1024*10 + 10 = 3,274,634 float32 */
    double want = 4.0 * (800 + 32 + 51200 + 64 + 3211264 + 1024 + 10240 + 10);
    ok(chapter1_gradient_bytes() == want, "chapter 1's gradients, counted from its graph: %.0f bytes (want %.0f)",
       chapter1_gradient_bytes(), want);
}

static void test_program(const char *argv0)
{
    char path[600];
    const char *at = strstr(argv0, "/tests/test_cost_model");
    snprintf(path, sizeof path, "%.*s/labs/tools/cost_model", at ? (int)(at - argv0) : 5, at ? argv0 : "build");
    if (access(path, X_OK) != 0) {
        skip("labs/tools/cost_model", "it is not built; `make labs` builds it");
        return;
    }
    lab_runner_start(argv0, "test_cost_model", "labs/tools/cost_model");
    run_result r = run_lab("--help");
    ok(r.status == 0 && r.out && strstr(r.out, "--compute_ms") && strstr(r.out, "--ps_shards"),
       "--help exits 0 and lists the flags");
    free(r.out);
    static const bad_flag_case bad[] = {
        {"--bytes 1000", "--compute_ms"},       {"--compute_ms x", "--compute_ms"},
        {"--compute_ms 0", "--compute_ms"},     {"--compute_ms 5 --overlap 2", "--overlap"},
        {"--compute_ms 5 --ps_shards 0", "--ps_shards"}, {"--compute_ms 5 --max_workers 1.5", "--max_workers"},
        {"--compute_ms 5 --bandwidth_gbit -1", "--bandwidth_gbit"}, {"--compute_ms 5 --csv", "--csv"},
        {"--compute_ms 5 --frob 1", "--frob"},
    };
    test_bad_flags(bad, sizeof bad / sizeof bad[0]);
    r = run_lab("--compute_ms 5 --csv /nonexistent/dir/x.csv");
    ok(r.status == 1 && r.out && strstr(r.out, "--csv /nonexistent/dir/x.csv: No such file"),
       "a CSV path it cannot write: exit 1 naming --csv and why, before any table");
    ok(r.out && !strstr(r.out, "workers |"), "and no table printed");
    free(r.out);

    char args[800];
    snprintf(args, sizeof args, "--compute_ms 100 --alpha_us 10 --bandwidth_gbit 8 --csv %s/model.csv", tmp_dir);
    r = run_lab(args);
    ok(r.status == 0 && r.out && strstr(r.out, "13098536 gradient bytes") && strstr(r.out, "    512 |"),
       "the table: chapter 1's bytes by default, rows to 512 workers");
    free(r.out);
    snprintf(args, sizeof args, "%s/model.csv", tmp_dir);
    char *csv = read_file(args);
    int lines = 0;
    for (const char *p = csv; p && (p = strchr(p, '\n')); p++)
        lines++;
    cost_workload w = {.compute_s = 0.1, .gradient_bytes = 13098536, .overlap = 0};
    double want = ring_step_seconds(2, w, (cost_network){10e-6, 1e9}) * 1e3;
    const char *two = csv ? strstr(csv, "\n2,") : NULL;
    double got = NAN;
    if (two)
        sscanf(two, "\n2,%lf", &got);
    ok(lines == 513 && fabs(got - want) < 1e-3,
       "the CSV: a header and N = 1..512; its N = 2 ring step is cost_model.h's (%.4f ms, want %.4f)", got, want);
    free(csv);
    lab_runner_finish();
}

int main(int argc, char **argv)
{
    (void)argc;
    test_ring_by_hand();
    test_ps_by_hand();
    test_steps();
    test_shape();
    test_published_case();
    test_fit();
    test_chapter1_bytes();
    test_program(argv[0]);
    return done_testing();
}
