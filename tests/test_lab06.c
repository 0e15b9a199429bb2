/* test_lab06.c: chapter 6's lab (allreduce on MPI) and its ring, run as a
 * student runs them, under `mpirun` with a `timeout`: flags and their errors,
 * 2 processes training to a falling loss with bitwise-equal variables on
 * both ranks, the ring giving MPI_Allreduce's result, 1 process of batch B
 * printing the losses of 2 of B/2, a resumed run, the ring's own check
 * against MPI_Allreduce on 1, 2 and 3 ranks, the same training with the
 * gradients reduced during the backward pass or after it, fused or not, and
 * a trace whose collectives overlap the backward convolutions only with
 * --overlap on, and 3 ranks ending bitwise alike run after run. Skipped
 * where MPI is absent. */
#include "flowlab.h"
#include "lab_runner.h"

static char ring_check[600];

/* Two processes add the same float32 numbers in another order than one:
 * the printed losses agree to 1e-6 for the first steps and drift apart
 * later (7.8e-5 by step 6 when this was written), so 5 steps are compared. */
#define SAME_LOSS_TOLERANCE 1e-4
#define SAME_LOSS_STEPS 5

/* On a GPU the same run twice differs by about 2e-4 after 10 steps (cuDNN's
 * kernels are not bitwise reproducible; measured on an H100). */
#define GPU_LOSS_TOLERANCE 1e-3

#define QUICK "--max_examples 256 --batch_size 32 --log_every 1 --seed 5 --train_steps 10"

/* "timeout mpirun -np N PROGRAM ARGS", both output streams captured.
 * --oversubscribe: 3 ranks on this machine's 2 cores. LeakSanitizer is off
 * for the ranks alone (under SANITIZE=1; elsewhere the option does nothing):
 * Open MPI never frees some of its own allocations (ompi_op_base_op_select's,
 * and its plugins', reported from "<unknown module>" once they are unloaded,
 * so no suppression can name them), which would fail every run. ASan's and
 * UBSan's other checks stay on; the flag tests run the lab with leaks checked. */
static run_result mpirun(int ranks, const char *program, const char *args)
{
    run_result r = {0};
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 180 mpirun --oversubscribe -np %d "
             "-x ASAN_OPTIONS=detect_leaks=0 %s %s", ranks, program, args);
    r.status = run_command(cmd, &r.out);
    parse_steps(&r);
    return r;
}

/* The checksums "rank R of N: variables checksum X" in out, by rank;
 * returns how many ranks printed one. */
static int checksums(const char *out, char (*sums)[17], int max)
{
    int found = 0;
    for (int k = 0; k < max; k++)
        sums[k][0] = '\0';
    for (const char *p = out; p && (p = strstr(p, "rank ")); p++) {
        int rank, size;
        char sum[17];
        if (sscanf(p, "rank %d of %d: variables checksum %16s", &rank, &size, sum) == 3 &&
            rank >= 0 && rank < max && !sums[rank][0]) {
            snprintf(sums[rank], sizeof sums[rank], "%s", sum);
            found++;
        }
    }
    return found;
}

/* True when ranks 0..n-1 all printed rank 0's checksum. */
static bool all_ranks_equal(const run_result *r, int n, char *sum0)
{
    char sums[8][17];
    bool equal = checksums(r->out, sums, 8) == n;
    for (int k = 1; equal && k < n; k++)
        equal = strcmp(sums[k], sums[0]) == 0;
    snprintf(sum0, 17, "%s", sums[0]);
    return equal;
}

static void test_flags(void)
{
    run_result r = run_lab("--help");
    ok(r.status == 0, "--help exits 0");
    contains(r.out, "--allreduce mpi|ring|shared|nccl", "--help documents --allreduce");
    contains(r.out, "mpirun -np N", "and how to start the lab");
    contains(r.out, "--overlap on|off", "--help documents --overlap");
    contains(r.out, "--fusion_threshold BYTES", "and --fusion_threshold");
    free(r.out);

    static const bad_flag_case bad[] = {
        {"--allreduce tree", "--allreduce"},     {"--allreduce", "--allreduce"},
        {"--allreduce shm", "--allreduce"},
        {"--device /tpu:0", "--device"},         {"--device /job:worker/task:0/gpu:0", "--device"},
        {"--batch_size 0", "--batch_size"},      {"--learning_rate -1", "--learning_rate"},
        {"--num_gpus 2", "--num_gpus"},          {"--train_steps x", "--train_steps"},
        {"--overlap yes", "--overlap"},          {"--overlap", "--overlap"},
        {"--fusion_threshold -1", "--fusion_threshold"}, {"--fusion_threshold 64MB", "--fusion_threshold"},
    };
    test_bad_flags(bad, sizeof bad / sizeof bad[0]);
}

static void test_two_processes(void)
{
    run_result mpi = mpirun(2, lab, QUICK);
    ok(mpi.status == 0, "mpirun -np 2: 10 steps, exit 0");
    if (mpi.status != 0)
        diag("%s", mpi.out ? mpi.out : "");
    contains(mpi.out, "2 processes, each training on its own", "it says where the ranks train");
    double first = mpi.nsteps ? mpi.loss[0] : 0, last = mpi.nsteps ? mpi.loss[mpi.nsteps - 1] : 0;
    ok(mpi.nsteps == 10 && first > 2.0 && last < 0.9 * first,
       "rank 0 alone prints the steps, and the loss falls (%.3f -> %.3f)", first, last);
    contains(mpi.out, "images/sec", "progress lines report images per second");
    contains(mpi.out, "Test accuracy: 0.", "rank 0 prints the test accuracy");
    char sum[17], ring_sum[17];
    ok(all_ranks_equal(&mpi, 2, sum), "both ranks' variables are bitwise equal after 10 steps "
       "(checksum %s)", sum);

    run_result ring = mpirun(2, lab, QUICK " --allreduce ring");
    bool same = ring.status == 0 && ring.nsteps == mpi.nsteps;
    for (int i = 0; same && i < ring.nsteps; i++)
        same = strcmp(ring.line[i], mpi.line[i]) == 0;
    ok(same, "--allreduce ring prints MPI_Allreduce's losses, digit for digit");
    ok(all_ranks_equal(&ring, 2, ring_sum) && strcmp(ring_sum, sum) == 0,
       "and ends with the same variables, bitwise (2 ranks: a + b == b + a)");
    if (ring.status != 0)
        diag("%s", ring.out ? ring.out : "");
    free(ring.out);

    run_result one = mpirun(1, lab, QUICK);
    double worst = 0;
    same = one.status == 0 && one.nsteps == mpi.nsteps;
    for (int i = 0; same && i < SAME_LOSS_STEPS; i++) {
        double d = fabs(one.loss[i] - mpi.loss[i]) / fabs(one.loss[i]);
        worst = d > worst ? d : worst;
    }
    ok(same && worst <= SAME_LOSS_TOLERANCE, "1 process of batch 32 prints the first %d losses "
       "of 2 of batch 16 within %.0e (worst relative difference %.2g)", SAME_LOSS_STEPS,
       SAME_LOSS_TOLERANCE, worst);
    free(one.out);
    free(mpi.out);
}

static void test_three_and_errors(void)
{
    char sum[17];
    const char *three = "--max_examples 256 --batch_size 30 --log_every 2 --train_steps 4 --print_stats";
    char args[256];
    snprintf(args, sizeof args, "%s --allreduce ring", three);
    run_result r = mpirun(3, lab, args);
    ok(r.status == 0 && r.nsteps >= 2 && all_ranks_equal(&r, 3, sum),
       "mpirun -np 3 --allreduce ring: the three ranks' variables are bitwise equal (%s)", sum);
    if (r.status != 0)
        diag("%s", r.out ? r.out : "");
    snprintf(args, sizeof args, "%s --allreduce shared", three);
    run_result shared = mpirun(3, lab, args);
    ok(shared.status == 0 && shared.nsteps >= 2 && all_ranks_equal(&shared, 3, sum),
       "mpirun -np 3 --allreduce shared: the three ranks' variables are bitwise equal (%s)", sum);
    contains(shared.out, "gradients summed by shared memory (MPI_Win_allocate_shared)", "it says how it sums");
    /* each rank reads and writes 2(N-1)/N of the gradients in the others' buffers, as the ring sends them */
    double ring_bytes = printed_number(r.out, "bytes_per_step="), shared_bytes = printed_number(shared.out,
                                                                                               "bytes_per_step=");
    ok(ring_bytes > 4.0 * 2 / 3 * 13e6 && shared_bytes == ring_bytes,
       "--print_stats: the window moves the ring's bytes per step (%.0f and %.0f)", shared_bytes, ring_bytes);
    if (shared.status != 0)
        diag("%s", shared.out ? shared.out : "");
    free(shared.out);
    free(r.out);

    r = mpirun(2, lab, "--max_examples 64 --batch_size 33 --train_steps 1");
    ok(r.status == 2 && r.out && strstr(r.out, "--batch_size 33 does not split evenly into 2"),
       "a global batch that does not split into 2 processes exits 2 naming --batch_size");
    free(r.out);
}

/* With 3 ranks a float sum depends on where a bucket's chunks start, so
 * buckets agreed from whatever happened to be ready made the checksum change
 * from run to run. The buckets are planned from the tensors' sizes now: two
 * runs with --overlap on, and one with it off, end with the same variables. */
static void test_three_reproducible(void)
{
    const char *args = "--max_examples 240 --batch_size 30 --log_every 2 --seed 5 --train_steps 6";
    char sums[3][17], off_args[256];
    snprintf(off_args, sizeof off_args, "%s --overlap off", args);
    run_result runs[3] = {mpirun(3, lab, args), mpirun(3, lab, args), mpirun(3, lab, off_args)};
    bool equal = true;
    for (int i = 0; i < 3; i++) {
        equal = runs[i].status == 0 && all_ranks_equal(&runs[i], 3, sums[i]) && equal;
        if (runs[i].status != 0)
            diag("%s", runs[i].out ? runs[i].out : "");
    }
    ok(equal && strcmp(sums[0], sums[1]) == 0, "mpirun -np 3, twice: the same variables, bitwise (%s, %s)", sums[0],
       sums[1]);
    ok(equal && strcmp(sums[0], sums[2]) == 0, "and --overlap off ends with them too (%s)", sums[2]);
    for (int i = 0; i < 3; i++)
        free(runs[i].out);
}

/* Rank 0 saves and restores; the broadcast hands the restored variables
 * (Adam's slots and the global step too) to rank 1, so 4 steps, a restart
 * and 2 more end exactly where 6 steps in one run do. */
static void test_resume(void)
{
    char args[1024], resumed_sum[17], unbroken_sum[17];
    const char *quick = "--max_examples 256 --batch_size 32 --log_every 1 --seed 5";
    snprintf(args, sizeof args, "%s --train_steps 4 --checkpoint_dir %s/ckpt", quick, tmp_dir);
    run_result first = mpirun(2, lab, args);
    snprintf(args, sizeof args, "%s --train_steps 6 --checkpoint_dir %s/ckpt", quick, tmp_dir);
    run_result resumed = mpirun(2, lab, args);
    snprintf(args, sizeof args, "%s --train_steps 6", quick);
    run_result unbroken = mpirun(2, lab, args);
    ok(first.status == 0 && resumed.status == 0 && resumed.out &&
           strstr(resumed.out, "Restored from model.ckpt-4, resuming at step 4") &&
           resumed.nsteps == 2 && resumed.step[0] == 4,
       "a second run with --checkpoint_dir resumes at step 4 and runs steps 4 and 5");
    ok(all_ranks_equal(&resumed, 2, resumed_sum) && all_ranks_equal(&unbroken, 2, unbroken_sum) &&
           strcmp(resumed_sum, unbroken_sum) == 0,
       "both ranks end with the variables of an unbroken 6-step run, bitwise (%s)", resumed_sum);
    if (resumed.status != 0)
        diag("%s", resumed.out ? resumed.out : "");
    free(first.out);
    free(resumed.out);
    free(unbroken.out);
}

/* With 2 ranks every element's sum is a + b whatever the buckets, so
 * reducing during the backward pass or after it, fused or one collective
 * per tensor, by MPI, the ring or the shared window, must train exactly alike: the losses
 * digit for digit and the variables bitwise (the default run's). */
static void test_overlap_and_fusion(void)
{
    static const char *const variants[] = {
        "--overlap off", "--fusion_threshold 0", "--fusion_threshold 100000",
        "--overlap off --fusion_threshold 0", "--allreduce ring --overlap off",
        "--allreduce ring --fusion_threshold 0", "--allreduce shared", "--allreduce shared --overlap off",
        "--allreduce shared --fusion_threshold 0",
    };
    run_result base = mpirun(2, lab, QUICK);
    char base_sum[17], sum[17];
    bool base_ok = base.status == 0 && base.nsteps == 10 && all_ranks_equal(&base, 2, base_sum);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        char args[512];
        snprintf(args, sizeof args, QUICK " %s", variants[v]);
        run_result r = mpirun(2, lab, args);
        bool same = base_ok && r.status == 0 && r.nsteps == base.nsteps;
        for (int i = 0; same && i < r.nsteps; i++)
            same = strcmp(r.line[i], base.line[i]) == 0;
        ok(same, "%s: the default run's losses, digit for digit (%s -> %s)", variants[v],
           r.nsteps ? r.line[0] : "none", r.nsteps ? r.line[r.nsteps - 1] : "none");
        ok(all_ranks_equal(&r, 2, sum) && strcmp(sum, base_sum) == 0,
           "%s: both ranks end with the default run's variables, bitwise (%s)", variants[v], sum);
        if (r.status != 0)
            diag("%s", r.out ? r.out : "");
        free(r.out);
    }
    free(base.out);
}

/* The trace's events on the lane of the collectives, and the backward
 * convolutions, as [start, end) in microseconds. */
typedef struct {
    double start, end;
} span;

static int spans_of(const char *json, const char *cat_prefix, span *out, int max)
{
    int n = 0;
    for (const char *line = json; line && *line && n < max; line = strchr(line, '\n')) {
        line += *line == '\n';
        const char *cat = strstr(line, "\"cat\":\""), *nl = strchr(line, '\n');
        const char *ts = strstr(line, "\"ts\":"), *dur = strstr(line, "\"dur\":");
        if (!cat || !ts || !dur || (nl && (cat > nl || dur > nl)))
            continue;
        if (strncmp(cat + 7, cat_prefix, strlen(cat_prefix)) != 0)
            continue;
        out[n].start = atof(ts + 5);
        out[n].end = out[n].start + atof(dur + 6);
        n++;
    }
    return n;
}

/* How many collectives run, for some part of their span, while a backward
 * convolution runs. The first bucket's collective may start a moment before
 * the convolution does (its gradients are ready first) and then run beside
 * it: the spans are compared, not the starts. */
static int collectives_during_backward_convs(const char *path, int *ncollectives, int *nconvs)
{
    static span collectives[512], convs[512];
    char *json = read_file(path);
    *ncollectives = json ? spans_of(json, "external", collectives, 512) : 0;
    *nconvs = json ? spans_of(json, "Conv2DBackprop", convs, 512) : 0;
    free(json);
    int during = 0;
    for (int c = 0; c < *ncollectives; c++) {
        bool inside = false;
        for (int k = 0; k < *nconvs && !inside; k++)
            inside = convs[k].start < collectives[c].end && collectives[c].start < convs[k].end;
        during += inside;
    }
    return during;
}

/* Steps 2 to 4 traced on rank 0: with --overlap on some collective runs
 * while a backward convolution is still running; with off, none does (the
 * device is idle while the main thread sums). Whether the communication
 * thread gets a core during a convolution is up to the scheduler, which on
 * a loaded machine (the sanitizers, prove -j2) may not give it one in a
 * short run: "on" is traced up to three times, and a lab that never
 * overlaps fails all three. */
static void test_overlap_trace(void)
{
    const char *modes[] = {"on", "off"};
    for (int m = 0; m < 2; m++) {
        char args[1024], path[512];
        snprintf(path, sizeof path, "%s/overlap_%s.json", tmp_dir, modes[m]);
        snprintf(args, sizeof args, "--max_examples 512 --batch_size 64 --log_every 1 --seed 5 "
                 "--train_steps 6 --overlap %s --trace %s", modes[m], path);
        run_result r = {0};
        int ncollectives = 0, nconvs = 0, during = -1;
        for (int attempt = 0; attempt < (m == 0 ? 3 : 1) && during <= 0; attempt++) {
            if (attempt > 0) {
                diag("--overlap on: no collective overlapped in traced run %d; tracing again", attempt);
                free(r.out);
            }
            r = mpirun(2, lab, args);
            during = r.status == 0 ? collectives_during_backward_convs(path, &ncollectives, &nconvs) : -1;
            if (r.status != 0)
                break;
        }
        ok(r.status == 0 && ncollectives > 0 && nconvs > 0,
           "--overlap %s --trace: the trace has the collectives' lane (%d) and the backward "
           "convolutions (%d)", modes[m], ncollectives, nconvs);
        if (m == 0)
            ok(during > 0, "--overlap on: %d collective%s run while a backward convolution runs",
               during, during == 1 ? "" : "s");
        else
            ok(during == 0, "--overlap off: no collective runs while a backward convolution "
               "runs (%d do)", during);
        if (r.status != 0)
            diag("%s", r.out ? r.out : "");
        free(r.out);
    }
    /* The graph divides the sums by N inside Adam's update (issue 42). */
    char path[512];
    snprintf(path, sizeof path, "%s/overlap_off.json", tmp_dir);
    char *trace = read_file(path);
    int fused = 0;
    for (const char *p = trace; p && (p = strstr(p, "\"op\":\"FusedApplyAdam\"")); p++)
        fused++;
    ok(fused >= 8, "the mean over the ranks is taken inside Adam's update: %d FusedApplyAdam in the trace "
       "(8 variables a step)", fused);
    free(trace);
}

/* tests/mpi/ring_check on 1, 2 and 3 ranks: every size passes. */
static void test_ring_check(void)
{
    if (access(ring_check, X_OK) != 0) {
        skip("the ring equals MPI_Allreduce", "tests/mpi/ring_check is not built; `make tests` builds it");
        return;
    }
    for (int ranks = 1; ranks <= 3; ranks++) {
        run_result r = mpirun(ranks, ring_check, "");
        int passed = 0;
        for (const char *p = r.out; p && (p = strstr(p, "PASS size ")); p++)
            passed++;
        ok(r.status == 0 && passed == 12 && !strstr(r.out, "FAIL"),
           "on %d rank%s the ring equals MPI_Allreduce for 12 sizes from 0 to 3,274,635 "
           "(bitwise for N <= 2, else within (N-1)*FLT_EPSILON*sum|x|)", ranks,
           ranks == 1 ? "" : "s");
        if (r.status != 0 || passed != 12)
            diag("%s", r.out ? r.out : "(no output)");
        free(r.out);
    }
}

/* --allreduce nccl, on the CUDA backend. Where it can run (a CUDA build
 * with NCCL, a GPU), one rank trains on its GPU and ncclAllReduce sums over
 * that one rank, so the losses are MPI_Allreduce's on the same device, up
 * to cuDNN's run-to-run differences (its kernels are not bitwise
 * reproducible); where it cannot, the lab says why and what to use instead,
 * and the training test is skipped with that reason. */
static void test_nccl(void)
{
    setenv("FLOWLAB_BACKEND", "cuda", 1);
    run_result r = mpirun(1, lab, QUICK " --allreduce nccl");
    const char *why = r.out ? strstr(r.out, "--allreduce nccl: ") : NULL;
    if (r.status == 2 && why) {
        ok(strstr(why, "use --allreduce mpi or ring") != NULL,
           "--allreduce nccl where NCCL cannot run exits 2, says why and what to use instead");
        char reason[200];
        snprintf(reason, sizeof reason, "%.*s", (int)strcspn(why, "\n"), why);
        skip("ncclAllReduce training on a GPU", reason);
        free(r.out);
        setenv("FLOWLAB_BACKEND", "opencl", 1);
        return;
    }
    run_result mpi = mpirun(1, lab, QUICK);
    setenv("FLOWLAB_BACKEND", "opencl", 1);
    bool same = r.status == 0 && mpi.status == 0 && r.nsteps == 10 && mpi.nsteps == 10;
    double worst = 0;
    for (int i = 0; same && i < SAME_LOSS_STEPS; i++) {
        double d = fabs(r.loss[i] - mpi.loss[i]) / fabs(mpi.loss[i]);
        worst = d > worst ? d : worst;
    }
    contains(r.out, "gradients summed by ncclAllReduce", "--allreduce nccl says NCCL sums the gradients");
    ok(same && worst <= GPU_LOSS_TOLERANCE && r.loss[9] < 0.9 * r.loss[0],
       "--allreduce nccl on one GPU: the loss falls, and the first %d losses are MPI_Allreduce's within %.0e "
       "(worst relative difference %.2g)", SAME_LOSS_STEPS, GPU_LOSS_TOLERANCE, worst);
    if (!same)
        diag("%s", r.out ? r.out : "(no output)");
    free(r.out);
    free(mpi.out);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (system("command -v mpirun >/dev/null 2>&1") != 0)
        skip_all("MPI is not installed (apt-get install libopenmpi-dev openmpi-bin)");
    lab_runner_start(argv[0], "test_lab06", "labs/06-allreduce/allreduce");
    snprintf(ring_check, sizeof ring_check, "%s/tests/mpi/ring_check", build_dir);
    /* The bitwise checks need a device that computes alike run after run:
     * PoCL does; the CUDA backend's cuDNN kernels do not (test_nccl uses it). */
    setenv("FLOWLAB_BACKEND", "opencl", 1);
    /* Open MPI refuses to start as root without these (CI runs as root). */
    if (geteuid() == 0) {
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    test_flags();
    test_ring_check();
    if (access(FL_DEFAULT_DATA_DIR, R_OK) != 0) {
        skip("training with 2 processes",
             "no data in " FL_DEFAULT_DATA_DIR " (apt-get install dataset-fashion-mnist)");
    } else {
        test_two_processes();
        test_three_and_errors();
        test_three_reproducible();
        test_resume();
        test_overlap_and_fusion();
        test_overlap_trace();
        test_nccl();
    }
    lab_runner_finish();
    return done_testing();
}
