/* test_sync_replicas.c: chapter 4's replicas through the lab, against one process.
 * Two workers with batch B each, --sync_replicas, follow chapter 2's two
 * towers with batch B each (same seed, same data): the first step's mean
 * loss agrees to 1e-4 and the test accuracy after 20 steps to 0.005 (the
 * stated tolerance; in practice they agree to every printed digit). With
 * three workers aggregating two, the third is a backup: training completes
 * and its late gradients are dropped and counted. Asynchronous training by
 * two workers reaches chapter 1's test accuracy, for the same number of
 * examples seen, within 0.08 (the stated margin: 1024 test images, and
 * async updates computed on stale weights). Deadlines: timeout 300. */
#include "lab_runner.h"
#include "sync_equivalence.h"

static char launcher[600], towers[600];

#define QUICK "--train_steps 20 --log_every 5 --max_examples 2000"

static void test_same_as_towers(void)
{
    char cmd[2048];
    run_result sync = {0}, ingraph = {0};
    /* Both on PoCL, even where CUDA would be chosen: the towers need two
     * devices, and one backend on both sides keeps the arithmetic the same. */
    snprintf(cmd, sizeof cmd, "POCL_DEVICES='pthread pthread' POCL_MAX_PTHREAD_COUNT=1 FLOWLAB_BACKEND=opencl "
             "timeout 300 %s --num_gpus 2 --batch_size 64 " QUICK, towers);
    ingraph.status = run_command(cmd, &ingraph.out);
    if (ingraph.status != 0 && ingraph.out && strstr(ingraph.out, "--num_gpus 2:")) {
        const char *checks[] = {"both runs exit 0", "the workers' first losses average to the towers' first loss",
                                "after 20 steps both workers hold the towers' model",
                                "the global step advanced once per step", "no gradient was stale"};
        for (int i = 0; i < 5; i++)
            skip(checks[i], ingraph.out); /* the lab's own words: how many devices there are */
        free(ingraph.out);
        return;
    }
    snprintf(cmd, sizeof cmd, "FLOWLAB_BACKEND=opencl timeout 300 %s --ps 1 --workers 2 -- %s --sync_replicas true "
             "--batch_size 32 " QUICK, launcher, lab);
    sync.status = run_command(cmd, &sync.out);
    ok(sync.status == 0 && ingraph.status == 0, "both runs exit 0");
    workers_match_towers(sync.out, ingraph.out, "2 workers against 2 towers, 20 steps");
    contains(sync.out, "step 20, global step 20,", "the global step advanced once per step (20 steps, 2 workers)");
    contains(sync.out, "0 stale steps dropped (0 variable updates)", "no gradient was stale with every worker needed");
    if (sync.status != 0 || ingraph.status != 0)
        diag("%s\n%s", sync.out ? sync.out : "", ingraph.out ? ingraph.out : "");
    free(sync.out);
    free(ingraph.out);
}

static void test_backup_worker(void)
{
    char cmd[2048];
    run_result r = {0};
    snprintf(cmd, sizeof cmd, "timeout 300 %s --ps 1 --workers 3 -- %s --sync_replicas true "
             "--replicas_to_aggregate 2 --batch_size 16 --train_steps 12 --log_every 4 --max_examples 1000",
             launcher, lab);
    r.status = run_command(cmd, &r.out);
    ok(r.status == 0, "3 workers aggregating 2 per step: all exit 0");
    long dropped = 0;
    for (int task = 0; task < 3; task++) {
        char key[64];
        snprintf(key, sizeof key, "worker %d: test accuracy", task);
        ok(r.out && strstr(r.out, key), "worker %d finished", task);
        const char *p = r.out;
        char line_key[64];
        snprintf(line_key, sizeof line_key, "worker %d: step ", task);
        long last = 0;
        while (p && (p = strstr(p, line_key))) {
            const char *d = strstr(p, "MB moved per step, ");
            if (d)
                last = atol(d + strlen("MB moved per step, "));
            p++;
        }
        dropped += last;
    }
    ok(dropped > 0, "the backup's late gradients were dropped and counted (%ld steps in all)", dropped);
    if (r.status != 0)
        diag("%s", r.out ? r.out : "");
    free(r.out);
}

/* Chapter 1 for 300 steps of 32 against 2 asynchronous workers whose
 * global step reaches 300 (150 steps of 32 each): the same examples seen.
 * Not fewer: at 150 steps the model is still moving fast, and how stale
 * each worker's weights were (the scheduler's doing) spread the async
 * accuracy over 16 runs from 0.73 to 0.80 against chapter 1's 0.80; at
 * 300 it lay within 0.012 of chapter 1's 0.829 in 8 runs then. With
 * today's kernels on a 2-core Zen 4 (session 22) 9 quiet runs spread from
 * 0.79 to 0.84 against chapter 1's 0.823, and one under CI's load fell to
 * 0.770: hence 0.08. That training loses no update is
 * test_between_graph_partitions' check; this one asks that it learns. */
static void test_async_reaches_chapter1(void)
{
    char cmd[2048], chapter1[600];
    run_result async = {0}, single = {0};
    const char *flags = "--device /cpu:0 --train_steps 300 --batch_size 32 --max_examples 2048 --log_every 50 --seed 1";
    snprintf(chapter1, sizeof chapter1, "%s/labs/01-single-device/single_device", build_dir);
    snprintf(cmd, sizeof cmd, "timeout 300 %s %s", chapter1, flags);
    single.status = run_command(cmd, &single.out);
    snprintf(cmd, sizeof cmd, "timeout 300 %s --ps 1 --workers 2 -- %s %s", launcher, lab, flags);
    async.status = run_command(cmd, &async.out);
    ok(single.status == 0 && async.status == 0, "chapter 1 and 2 asynchronous workers both finish");
    double want = printed_number(single.out, "Test accuracy: ");
    double a0 = printed_number(async.out, "worker 0: test accuracy "), a1 = printed_number(async.out, "worker 1: test accuracy ");
    ok(want > 0.5 && fabs(a0 - want) <= 0.08 && fabs(a1 - want) <= 0.08,
       "asynchronous training reaches chapter 1's test accuracy within 0.08 (%.4f, %.4f vs %.4f)", a0, a1, want);
    if (single.status != 0 || async.status != 0)
        diag("%s\n%s", single.out ? single.out : "", async.out ? async.out : "");
    free(single.out);
    free(async.out);
}

static void test_flags(void)
{
    run_result r = run_lab("--ps_hosts 127.0.0.1:1 --worker_hosts 127.0.0.1:2 --job_name worker "
                           "--sync_replicas maybe");
    ok(r.status == 2 && r.out && strstr(r.out, "--sync_replicas"), "--sync_replicas maybe is refused by name");
    free(r.out);
    r = run_lab("--ps_hosts 127.0.0.1:1 --worker_hosts 127.0.0.1:2 --job_name worker --sync_replicas true "
                "--replicas_to_aggregate 2");
    ok(r.status == 2 && r.out && strstr(r.out, "--replicas_to_aggregate 2 is more than --total_num_replicas 1"),
       "aggregating more replicas than take part is refused");
    free(r.out);
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_sync_replicas", "labs/03-between-graph/between_graph");
    snprintf(launcher, sizeof launcher, "%s/labs/tools/launch_cluster", build_dir);
    snprintf(towers, sizeof towers, "%s/labs/02-in-graph-towers/in_graph_towers", build_dir);
    test_flags();
    test_same_as_towers();
    test_backup_worker();
    test_async_reaches_chapter1();
    lab_runner_finish();
    return done_testing();
}
