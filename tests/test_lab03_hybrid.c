/* test_lab03_hybrid.c: chapter 3's hybrid (between_graph --num_gpus K), run
 * through the launcher on loopback ports it picks free. Two synchronous
 * workers with two towers each (PoCL's two devices per worker, batch 32 per
 * worker) follow chapter 2's four towers (batch 64, same seed and data
 * order): the workers' first losses average to the towers' first loss within
 * 1e-4 and, after 20 steps, both workers' test accuracy is within 0.005 of
 * the towers' (the stated tolerances; in practice every printed digit
 * agrees). A worker pushes once per step, so it moves as many bytes as a
 * one-tower worker. Its towers run on its own devices, the variables on the
 * ps; --print_stats reports the graphs and bytes. Bad --num_gpus values are
 * refused by name. Deadlines: timeout 300. */
#include "lab_runner.h"
#include "sync_equivalence.h"

static char launcher[600], towers[600];

#define QUICK "--train_steps 20 --log_every 5 --max_examples 2000"
/* Both sides on PoCL: one backend keeps the arithmetic the same. */
#define POCL2 "POCL_DEVICES='pthread pthread' POCL_MAX_PTHREAD_COUNT=1 FLOWLAB_BACKEND=opencl"
#define POCL4 "POCL_DEVICES='pthread pthread pthread pthread' POCL_MAX_PTHREAD_COUNT=1 FLOWLAB_BACKEND=opencl"

/* The "MB moved per step" of a worker's progress line for step `step`. */
static double megabytes_at(const char *out, int task, int step)
{
    char key[64];
    snprintf(key, sizeof key, "worker %d: step %d, ", task, step);
    const char *p = out ? strstr(out, key) : NULL;
    const char *images = p ? strstr(p, "images/sec, ") : NULL;
    return images ? atof(images + strlen("images/sec, ")) : -1;
}

/* --print_stats: a worker's graph holds its 2 towers, the one process's
 * all 4 (more nodes); the worker's bytes are its pull and push, about
 * 26.2 MB per step, and the one process moves none to other tasks. */
static void check_stats(const char *hybrid, const char *ingraph)
{
    const char *worker = hybrid ? strstr(hybrid, "worker0: stats: ") : NULL;
    const char *single = ingraph ? strstr(ingraph, "stats: ") : NULL;
    double worker_nodes = printed_number(worker, "graph_nodes="), single_nodes = printed_number(single, "graph_nodes=");
    double worker_bytes = printed_number(worker, "bytes_per_step="), single_bytes = printed_number(single, "bytes_per_step=");
    ok(worker_nodes > 0 && single_nodes > worker_nodes, "--print_stats: 4 towers in one graph (%.0f nodes) outgrow a "
       "2-tower worker's graph (%.0f)", single_nodes, worker_nodes);
    ok(fabs(worker_bytes - 26.2e6) < 0.05 * 26.2e6 && single_bytes == 0, "--print_stats: a worker moves %.0f bytes per "
       "step, about 26.2 MB; one process %.0f", worker_bytes, single_bytes);
}

static void test_same_as_four_towers(void)
{
    char cmd[2048];
    run_result hybrid = {0}, ingraph = {0}, single = {0};
    snprintf(cmd, sizeof cmd, POCL4 " timeout 300 %s --num_gpus 4 --batch_size 64 --print_stats " QUICK, towers);
    ingraph.status = run_command(cmd, &ingraph.out);
    if (ingraph.status != 0 && ingraph.out && strstr(ingraph.out, "--num_gpus 4:")) {
        skip("the hybrid against 4 towers", ingraph.out); /* no PoCL: the lab says what it found */
        free(ingraph.out);
        return;
    }
    snprintf(cmd, sizeof cmd, POCL2 " timeout 300 %s --ps 1 --workers 2 -- %s --sync_replicas true --num_gpus 2 "
             "--batch_size 32 --print_stats " QUICK, launcher, lab);
    hybrid.status = run_command(cmd, &hybrid.out);
    ok(hybrid.status == 0 && ingraph.status == 0, "2 workers x 2 towers and 4 in-graph towers both exit 0");
    workers_match_towers(hybrid.out, ingraph.out, "2 workers x 2 towers against 4 towers, 20 steps");
    contains(hybrid.out, "step 20, global step 20,", "the global step advanced once per step (20 steps)");
    check_stats(hybrid.out, ingraph.out);

    snprintf(cmd, sizeof cmd, POCL2 " timeout 300 %s --ps 1 --workers 2 -- %s --sync_replicas true --batch_size 32 "
             "--train_steps 5 --log_every 5 --max_examples 2000", launcher, lab);
    single.status = run_command(cmd, &single.out);
    double hybrid_mb = megabytes_at(hybrid.out, 0, 5), single_mb = megabytes_at(single.out, 0, 5);
    ok(single.status == 0 && hybrid_mb > 1 && fabs(hybrid_mb - single_mb) < 0.05 * single_mb,
       "a 2-tower worker pushes once: it moves the bytes of a 1-tower worker per step (%.1f MB vs %.1f MB)",
       hybrid_mb, single_mb);
    if (hybrid.status != 0 || ingraph.status != 0 || single.status != 0)
        diag("%s\n%s\n%s", hybrid.out ? hybrid.out : "", ingraph.out ? ingraph.out : "", single.out ? single.out : "");
    free(hybrid.out);
    free(ingraph.out);
    free(single.out);
}

static void test_placement(void)
{
    char cmd[2048];
    run_result r = {0};
    snprintf(cmd, sizeof cmd, POCL2 " timeout 300 %s --ps 1 --workers 2 -- %s --num_gpus 2 --batch_size 16 "
             "--train_steps 2 --max_examples 200 --log_device_placement", launcher, lab);
    r.status = run_command(cmd, &r.out);
    ok(r.status == 0, "a 2-tower run that logs its placement exits 0");
    contains(r.out, "worker1: tower_0/model/conv_1/Conv2D: (Conv2D): /job:worker/task:1/gpu:0",
             "worker 1's tower 0 runs on its own /gpu:0");
    contains(r.out, "worker1: tower_1/model/conv_1/Conv2D: (Conv2D): /job:worker/task:1/gpu:1",
             "worker 1's tower 1 runs on its own /gpu:1");
    contains(r.out, "worker1: average_gradients/AddN: (AddN): /job:worker/task:1/cpu:0",
             "worker 1 averages its towers on its host");
    contains(r.out, "worker1: model/conv_1/kernel: (VariableV2): /job:ps/task:0/cpu:0",
             "the towers' shared variables live on the ps");
    if (r.status != 0)
        diag("%s", r.out ? r.out : "");
    free(r.out);
}

static void test_bad_num_gpus(void)
{
    const char *cluster = "--ps_hosts 127.0.0.1:1 --worker_hosts 127.0.0.1:2 --job_name worker ";
    char args[400];
    snprintf(args, sizeof args, "%s--num_gpus 9", cluster);
    run_result r = run_lab(args);
    ok(r.status == 2 && r.out && strstr(r.out, "--num_gpus"), "--num_gpus 9 (over 8 towers) is refused by name");
    free(r.out);
    snprintf(args, sizeof args, "%s--num_gpus 3 --batch_size 32", cluster);
    r = run_env(POCL4, args);
    ok(r.status == 2 && r.out && strstr(r.out, "--batch_size 32 does not split evenly into --num_gpus 3"),
       "a batch that does not split into the towers is refused");
    free(r.out);
    snprintf(args, sizeof args, "%s--num_gpus 3 --batch_size 30", cluster);
    r = run_env(POCL2, args);
    ok(r.status == 2 && r.out && strstr(r.out, "--num_gpus 3: this task has 2 accelerators"),
       "more towers than the worker's accelerators is refused, saying how many there are");
    if (r.status != 2)
        diag("%s", r.out ? r.out : "");
    free(r.out);
}

/* The launcher and chapter 2's lab, beside the lab under test. */
static void name_programs(void)
{
    snprintf(launcher, sizeof launcher, "%s/labs/tools/launch_cluster", build_dir);
    snprintf(towers, sizeof towers, "%s/labs/02-in-graph-towers/in_graph_towers", build_dir);
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_lab03_hybrid", "labs/03-between-graph/between_graph");
    name_programs();
    test_bad_num_gpus();
    test_placement();
    test_same_as_four_towers();
    lab_runner_finish();
    return done_testing();
}
