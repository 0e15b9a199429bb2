/* test_lab02.c: chapter 2's lab (in-graph towers) and exercises, run as a
 * student runs them. It execs the built programs (the Makefile builds them
 * before this test) with PoCL asked for two single-core devices, /gpu:0 and
 * /gpu:1: flags and their errors, two towers whose loss falls, two towers of
 * B/2 printing the losses of one tower of B from the same seed, a controller
 * on /gpu:0, no copy between the controller and the towers, the
 * no-accelerator fallback, and the exercises' solutions.
 * Parts that need two devices are skipped, with the reason, without PoCL. */
#include "flowlab.h"
#include "lab_runner.h"
#include "../labs/tools/trace_events.h"

/* Two towers add the same float32 numbers in another order than one tower:
 * the printed losses (6 decimals) agreed exactly when this was written; a
 * relative 1e-4 leaves room for other OpenCL drivers. */
#define SAME_LOSS_TOLERANCE 1e-4

static double accuracy_of(const run_result *r)
{
    double acc = -1;
    const char *line = r->out ? strstr(r->out, "Test accuracy: ") : NULL;
    if (!line || sscanf(line, "Test accuracy: %lf", &acc) != 1)
        return -1;
    return acc;
}

static void test_flags(int naccelerators)
{
    run_result r = run_lab("--help");
    ok(r.status == 0, "--help exits 0");
    contains(r.out, "--num_gpus", "--help documents --num_gpus");
    contains(r.out, "--controller", "--help documents --controller");
    contains(r.out, "--ps_hosts", "--help documents the cluster mode's --ps_hosts");
    contains(r.out, "--worker_hosts", "and --worker_hosts");
    free(r.out);

    static const bad_flag_case bad[] = {
        {"--num_gpus 0", "--num_gpus"},          {"--num_gpus two", "--num_gpus"},
        {"--controller /tpu:0", "--controller"}, {"--device /gpu:0", "--device"},
        {"--batch_size 0", "--batch_size"},      {"--learning_rate -1", "--learning_rate"},
        {"--warmup_steps 8", "--warmup_steps"}, /* chapter 1's lab only */
        {"--ps_hosts 127.0.0.1:1", "--ps_hosts"}, /* cluster mode needs workers too */
        {"--worker_hosts 127.0.0.1:1", "--ps_hosts"}, /* ... and a ps for the variables */
        {"--ps_hosts 127.0.0.1:1 --worker_hosts 127.0.0.1:2,127.0.0.1:3 --num_gpus 3", "--worker_hosts"},
        {"--ps_hosts 127.0.0.1:1 --worker_hosts 127.0.0.1:2 --checkpoint_dir ckpt", "--checkpoint_dir"},
    };
    test_bad_flags(bad, sizeof bad / sizeof bad[0]);

    if (naccelerators != 2) {
        printf("ok %d # SKIP needs exactly two accelerators (PoCL's two pthread devices); "
               "found %d\n", ++tap_count, naccelerators);
        printf("ok %d # SKIP needs two accelerators for two towers\n", ++tap_count);
        return;
    }
    r = run_lab("--num_gpus 3");
    ok(r.status == 2 && r.out && strstr(r.out, "--num_gpus") && strstr(r.out, "/gpu:0") &&
           strstr(r.out, "/gpu:1"),
       "--num_gpus 3 with two devices exits 2 naming /gpu:0 and /gpu:1");
    if (r.out)
        diag("%s", strtok(r.out, "\n"));
    free(r.out);
    r = run_lab("--num_gpus 2 --batch_size 33");
    ok(r.status == 2 && r.out && strstr(r.out, "--batch_size"),
       "a global batch that does not split into 2 towers exits 2 naming --batch_size");
    if (r.out)
        diag("%s", strtok(r.out, "\n"));
    free(r.out);
}

#define QUICK "--max_examples 256 --batch_size 32 --log_every 1 --seed 5 --train_steps 10"

static void test_towers(void)
{
    run_result two = run_lab(QUICK " --num_gpus 2");
    ok(two.status == 0, "two towers train for 10 steps and exit 0");
    if (two.status != 0)
        diag("%s", two.out ? two.out : "");
    contains(two.out, "2 towers on /gpu:0 /gpu:1; variables and updates on /cpu:0",
             "it says where the towers and the variables are");
    double first = two.nsteps ? two.loss[0] : 0, last = two.nsteps ? two.loss[two.nsteps - 1] : 0;
    ok(two.nsteps == 10 && first > 2.0 && last < 0.9 * first, "the loss falls (%.3f -> %.3f)",
       first, last);
    double acc = accuracy_of(&two);
    ok(acc > 0.2 && acc <= 1.0, "it prints the test accuracy (%.4f), better than chance", acc);
    ok(two.out && strstr(two.out, "images/sec"), "progress lines report images per second");

    run_result one = run_lab(QUICK " --num_gpus 1");
    double worst = 0;
    bool same = one.status == 0 && one.nsteps == two.nsteps && one.nsteps > 0;
    for (int i = 0; same && i < one.nsteps; i++) {
        double d = fabs(one.loss[i] - two.loss[i]) / fabs(one.loss[i]);
        worst = d > worst ? d : worst;
        same = one.step[i] == two.step[i];
    }
    ok(same && worst <= SAME_LOSS_TOLERANCE,
       "2 towers of batch 16 print the losses of 1 tower of batch 32 within %.0e "
       "(worst relative difference %.2g)", SAME_LOSS_TOLERANCE, worst);
    free(one.out);

    run_result gpu = run_lab("--max_examples 256 --batch_size 32 --log_every 1 --seed 5 "
                             "--train_steps 3 --num_gpus 2 --controller /gpu:0");
    same = gpu.status == 0 && gpu.nsteps == 3;
    worst = 0;
    for (int i = 0; same && i < 3; i++) {
        double d = fabs(gpu.loss[i] - two.loss[i]) / fabs(two.loss[i]);
        worst = d > worst ? d : worst;
    }
    ok(same && worst <= SAME_LOSS_TOLERANCE && strstr(gpu.out, "variables and updates on /gpu:0"),
       "with the controller on /gpu:0 the losses are the same (worst relative difference %.2g)",
       worst);
    if (gpu.status != 0)
        diag("%s", gpu.out ? gpu.out : "");
    free(gpu.out);
    free(two.out);
}

/* Copies in a traced run's steps 2-4, counted by direction. */
typedef struct {
    int to_towers, from_towers;
    double from_towers_mb;
} copy_count;

static copy_count count_copies(const char *path)
{
    copy_count c = {-1, -1, 0};
    trace_events t;
    if (trace_events_read(path, &t) != 0)
        return c;
    c.to_towers = c.from_towers = 0;
    for (int i = 0; i < t.count; i++) {
        const trace_event *e = &t.events[i];
        if (strcmp(e->cat, "Copy") != 0)
            continue;
        bool back = strncmp(e->from, "/gpu:", 5) == 0 && strcmp(t.lanes[e->lane], "/cpu:0") == 0;
        c.from_towers += back;
        c.from_towers_mb += back ? e->bytes / 1e6 : 0;
        c.to_towers += strcmp(e->from, "/cpu:0") == 0;
    }
    trace_events_free(&t);
    return c;
}

/* Issue 42 item 3: the controller's fused updates (on /cpu:0) in a traced
 * run's steps 2-4 that overlap a kernel of either tower: a variable's mean
 * and update start once both towers have its gradient, while they go on
 * with the layers below. An update made only after the whole backward pass
 * overlaps none. -1 when the trace cannot be read. */
static int updates_during_towers(const char *path, int *updates)
{
    trace_events t;
    *updates = 0;
    if (trace_events_read(path, &t) != 0)
        return -1;
    int overlapping = 0;
    for (int i = 0; i < t.count; i++) {
        const trace_event *u = &t.events[i];
        if (strncmp(u->cat, "FusedApply", 10) != 0 || strcmp(t.lanes[u->lane], "/cpu:0") != 0)
            continue;
        (*updates)++;
        bool during = false;
        for (int k = 0; k < t.count && !during; k++) {
            const trace_event *e = &t.events[k];
            during = strncmp(t.lanes[e->lane], "/gpu:", 5) == 0 && e->start < u->start + u->dur &&
                     e->start + e->dur > u->start;
        }
        overlapping += during;
    }
    trace_events_free(&t);
    return overlapping;
}

/* Issue 42 item 1: PoCL's CPU devices keep their buffers in host memory
 * (cl/opencl_pool.c), so the controller's averaging and Adam read each
 * tower's gradients where they lie, and the towers read the controller's
 * variables and batch slices where they lie (session_copies.c's
 * wrap_value). FLOWLAB_OPENCL_HOST_MEMORY=0 brings the copies back: the
 * counts can fail, the losses are the same; the run also checks item 3. */
static void test_no_copies(void)
{
    char args[600], path[2][400];
    run_result r[2];
    const char *env[2] = {"", "FLOWLAB_OPENCL_HOST_MEMORY=0"};
    copy_count c[2];
    for (int k = 0; k < 2; k++) {
        snprintf(path[k], sizeof path[k], "%s/towers%d.json", tmp_dir, k);
        snprintf(args, sizeof args, QUICK " --num_gpus 2 --trace %s", path[k]);
        r[k] = run_env(env[k], args);
        c[k] = count_copies(path[k]);
    }
    ok(r[0].status == 0 && c[0].from_towers == 0 && c[0].to_towers == 0, "traced, 2 towers copy nothing in steps "
       "2-4: %d copies back to the controller, %d of its variables and slices to the towers", c[0].from_towers,
       c[0].to_towers);
    int updates = 0, during = updates_during_towers(path[0], &updates);
    ok(r[0].status == 0 && updates > 0 && during >= 1, "traced, %d of the controller's %d fused updates run while "
       "a tower still computes", during, updates);
    bool same = r[0].nsteps == 10 && r[1].nsteps == 10;
    for (int i = 0; same && i < 10; i++)
        same = r[0].loss[i] == r[1].loss[i];
    ok(r[1].status == 0 && c[1].from_towers > 0 && c[1].to_towers > 0 && same, "with FLOWLAB_OPENCL_HOST_MEMORY=0 "
       "the values are copied (%d copies back, %.1f MB; %d to the towers) and the 10 losses are the same",
       c[1].from_towers, c[1].from_towers_mb, c[1].to_towers);
    for (int k = 0; k < 2; k++)
        free(r[k].out);
}

/* Chapter 2's sentence, with its own two commands (book/outputs/02-two-towers.txt
 * and 02-one-tower.txt): every loss of the six steps within a relative
 * 1e-5, and the same test accuracy. */
#define BOOK_TOWERS "--max_examples 512 --batch_size 64 --train_steps 6 --log_every 1"
#define BOOK_TOLERANCE 1e-5

static void test_chapter_sentence(void)
{
    run_result two = run_lab(BOOK_TOWERS " --num_gpus 2"), one = run_lab(BOOK_TOWERS " --num_gpus 1");
    bool same = two.status == 0 && one.status == 0 && two.nsteps == 6 && one.nsteps == 6;
    double worst = 0;
    for (int i = 0; same && i < 6; i++) {
        double d = fabs(one.loss[i] - two.loss[i]) / fabs(one.loss[i]);
        worst = d > worst ? d : worst;
    }
    ok(same && worst <= BOOK_TOLERANCE && accuracy_of(&one) == accuracy_of(&two),
       "the chapter's two commands: 2 towers and 1 agree within %.0e over 6 steps (worst %.2g), "
       "the same accuracy (%.4f, %.4f)", BOOK_TOLERANCE, worst, accuracy_of(&two), accuracy_of(&one));
    free(two.out);
    free(one.out);
}

static void test_no_accelerator(void)
{
    run_result r = run_env("FLOWLAB_BACKEND=host", "--max_examples 128 --batch_size 32 "
                                                   "--log_every 1 --seed 5 --train_steps 2");
    ok(r.status == 0 && r.nsteps == 2 && r.out &&
           strstr(r.out, "no accelerator here; building 1 tower on /cpu:0"),
       "with no accelerator it trains 1 tower on /cpu:0 and says so");
    if (r.status != 0)
        diag("%s", r.out ? r.out : "");
    ok(r.out && strstr(r.out, "(FLOWLAB_BACKEND=host turns accelerators off; see flowlab-devices)"),
       "giving the reason, not a package to install");
    free(r.out);
    r = run_env("FLOWLAB_BACKEND=host", "--num_gpus 2");
    ok(r.status == 2 && r.out && strstr(r.out, "/cpu:0"),
       "--num_gpus 2 with no accelerator exits 2 naming the device that exists");
    free(r.out);
}

/* The checkpoint paths of the shared training loop, with one tower on /cpu:0. */
static void test_checkpoint_dir_errors(void)
{
    char dir[400], args[1024];
    snprintf(dir, sizeof dir, "%s/damaged", tmp_dir);
    write_damaged_index(dir, "not a checkpoint index\n");
    snprintf(args, sizeof args, "--max_examples 64 --batch_size 32 --train_steps 2 "
             "--checkpoint_dir %s", dir);
    run_result r = run_env("FLOWLAB_BACKEND=host", args);
    ok(r.status == 1 && r.nsteps == 0 && r.out && strstr(r.out, "in_graph_towers: --checkpoint_dir"),
       "a damaged checkpoint index exits 1 naming the lab and --checkpoint_dir");
    ok(reports_no_leak(&r), "the lab frees everything when the restore fails");
    free(r.out);

    snprintf(dir, sizeof dir, "%s/damaged/checkpoint/ckpt", tmp_dir); /* under a file */
    snprintf(args, sizeof args, "--max_examples 64 --batch_size 32 --train_steps 2 "
             "--checkpoint_dir %s", dir);
    r = run_env("FLOWLAB_BACKEND=host", args);
    ok(r.status == 2 && r.nsteps == 0 && r.out && strstr(r.out, "--checkpoint_dir") &&
           strstr(r.out, dir),
       "a --checkpoint_dir that cannot be created exits 2 at once, naming the flag and path");
    free(r.out);
}

static void test_exercises(void)
{
    static const char *const names[][2] = {{"average_gradients", "average-gradients"},
                                           {"assign_to_device", "assign-to-device"},
                                           {"controller", "controller"}};
    test_exercise_checks("02-in-graph-towers", names, 3);
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_lab02", "labs/02-in-graph-towers/in_graph_towers");
    /* Two single-core PoCL devices, for this process and the labs it runs. */
    setenv("POCL_DEVICES", "pthread pthread", 1);
    setenv("POCL_MAX_PTHREAD_COUNT", "1", 1);
    fl_device_info devices[16];
    int naccelerators = fl_list_devices(devices, 16) - 1;
    diag("%d accelerator%s with POCL_DEVICES=\"pthread pthread\"", naccelerators,
         naccelerators == 1 ? "" : "s");

    test_flags(naccelerators);
    test_exercises();
    if (access(FL_DEFAULT_DATA_DIR, R_OK) != 0) {
        printf("ok %d # SKIP no data in %s (apt-get install dataset-fashion-mnist)\n",
               ++tap_count, FL_DEFAULT_DATA_DIR);
    } else {
        test_no_accelerator();
        test_checkpoint_dir_errors();
        if (naccelerators == 2) {
            test_towers();
            test_no_copies();
            test_chapter_sentence();
        } else
            printf("ok %d # SKIP two towers need two accelerators (PoCL's pthread devices); "
                   "found %d\n", ++tap_count, naccelerators);
    }
    lab_runner_finish();
    return done_testing();
}
