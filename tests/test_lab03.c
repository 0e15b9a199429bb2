/* test_lab03.c: chapter 3's lab as a student runs it, through
 * labs/tools/launch_cluster: one ps and two workers, then two ps tasks
 * with the variables split between them, train to a falling loss and the
 * ps tasks exit by themselves, each worker cutting its own graph into
 * pieces (issue 36), also synchronously (chapter 4's --sync_replicas, backups included; workers that
 * disagree on it refused); bad
 * flags are refused by name; the launcher
 * reports a failing worker and a ps that never exits, and stops the rest.
 * Every run has a deadline (the launcher's and timeout's). */
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "lab_runner.h"
#include "loopback.h"

static char launcher[600];

static run_result launch(const char *launcher_flags, const char *program_and_args)
{
    run_result r = {0};
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 300 %s %s -- %s", launcher, launcher_flags, program_and_args);
    r.status = run_command(cmd, &r.out);
    return r;
}

/* The losses worker `task` printed ("worker 1: step 10, global step 19, loss 1.40 ..."). */
static int worker_losses(const char *out, int task, double *losses, int max)
{
    char prefix[64];
    int n = 0;
    snprintf(prefix, sizeof prefix, "worker %d: step ", task);
    for (const char *p = out; p && (p = strstr(p, prefix)) && n < max; p++) {
        const char *loss = strstr(p, "loss ");
        if (loss)
            losses[n++] = atof(loss + 5);
    }
    return n;
}

/* When a launch fails, the lines that say why, first: the launcher's own
 * (which task exited with which status) and any sanitizer's verdict. The
 * whole output, often long, is printed after by the failing check. */
static void diag_why_launch_failed(const char *out)
{
    for (const char *line = out; line && *line;) {
        size_t len = strcspn(line, "\n");
        char text[400];
        snprintf(text, sizeof text, "%.*s", (int)(len < sizeof text - 1 ? len : sizeof text - 1), line);
        if (strstr(text, "launch_cluster: ") || strstr(text, "Sanitizer") || strstr(text, "SUMMARY: "))
            diag("%s", text);
        line += len + (line[len] == '\n');
    }
}

/* Asynchronous runs log every 3 steps: a worker slowed by a loaded
 * machine may take few of the 30 global steps, and needs two lines. */
static void check_training(const char *what, const run_result *r, int num_ps)
{
    ok(r->status == 0, "%s: the launcher exits 0 (every task exited 0)", what);
    if (r->status != 0)
        diag_why_launch_failed(r->out);
    for (int task = 0; task < 2; task++) {
        double losses[32];
        int n = worker_losses(r->out ? r->out : "", task, losses, 32);
        ok(n >= 2 && losses[n - 1] < losses[0] - 0.3, "%s: worker %d's loss falls (%.3f -> %.3f over %d lines)", what,
           task, n ? losses[0] : 0, n ? losses[n - 1] : 0, n);
        char accuracy[64];
        snprintf(accuracy, sizeof accuracy, "worker %d: test accuracy 0.", task);
        contains(r->out, accuracy, "and it reports a test accuracy");
    }
    for (int k = 0; k < num_ps; k++) {
        char done[64];
        snprintf(done, sizeof done, "ps%d: ps %d: held ", k, k);
        contains(r->out, done, "the ps exits by itself once both workers have said goodbye");
    }
    ok(r->out && !strstr(r->out, "saying goodbye"), "%s: no worker lost its goodbye", what);
}

static void test_training(void)
{
    char args[1200], dot[400];
    snprintf(dot, sizeof dot, "%s/cluster.dot", tmp_dir);
    snprintf(args, sizeof args, "%s --device /cpu:0 --train_steps 30 --batch_size 64 --max_examples 1024 --log_every 3 "
             "--graph %s --graph_detail nodes", lab, dot);
    run_result r = launch("--ps 1 --workers 2 --grace 20 --deadline 240", args);
    check_training("1 ps, 2 workers", &r, 1);
    char *picture = read_file(dot);
    int on_ps = 0;
    for (const char *p = picture; p && (p = strstr(p, "/job:ps/task:0/cpu:0")); p++)
        on_ps++;
    ok(on_ps > 20 && picture && strstr(picture, "/job:worker/task:0/cpu:0"),
       "--graph: the chief's picture shows the variables on /job:ps/task:0 (%d mentions) and the model on "
       "/job:worker/task:0/cpu:0", on_ps);
    free(picture);
    /* Some line "worker K: step S, global step G" with G > S: the other worker's updates count too. */
    long most_ahead = 0;
    for (const char *p = r.out; p && (p = strstr(p, ": step ")); p++) {
        long step, global;
        if (sscanf(p, ": step %ld, global step %ld", &step, &global) == 2 && global - step > most_ahead)
            most_ahead = global - step;
    }
    ok(most_ahead > 0, "the global step counts both workers' updates (up to %ld ahead of a worker's own)",
       most_ahead);
    free(r.out);

    snprintf(args, sizeof args, "%s --device /cpu:0 --train_steps 30 --batch_size 64 --max_examples 1024 "
             "--log_every 3 --ps_strategy greedy --partitions 2", lab);
    r = launch("--ps 2 --workers 2 --grace 20 --deadline 240", args);
    check_training("2 ps (greedy, dense_1's kernel in 2 parts), 2 workers", &r, 2);
    /* Unpartitioned, the greedy setter puts dense_1's 12.8 MB kernel (and
     * its Adam slots, 38.4 MB) on one ps and about 1 MB on the other. */
    double held[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        char line[64];
        snprintf(line, sizeof line, "ps%d: ps %d: held ", k, k);
        const char *at = r.out ? strstr(r.out, line) : NULL;
        if (at)
            sscanf(at + strlen(line), "%*d variables (%lf MB)", &held[k]);
    }
    ok(held[0] > 15 && held[1] > 15, "--partitions 2: each ps holds half of dense_1's kernel and its slots "
       "(%.1f and %.1f MB)", held[0], held[1]);
    free(r.out);
}

/* Issue 36 item 2, stage A: each worker cuts its own graph; the ps tasks
 * run the pieces with the variables and their updates. */
static void test_training_through_partitions(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 300 %s --ps 2 --workers 2 --grace 20 "
             "--deadline 240 -- %s --device /cpu:0 --train_steps 30 --batch_size 64 --max_examples 1024 "
             "--log_every 3", launcher, lab);
    run_result r = {0};
    r.status = run_command(cmd, &r.out);
    check_training("each worker's own pieces", &r, 2);
    contains(r.out, "ps0: ps 0: registered partition 2 from", "each worker registered a piece on ps 0");
    ok(r.out && strstr(r.out, "variables live on this task)") && !strstr(r.out, "(0 nodes"),
       "the later piece finds the variables the first one's run made on the ps");
    free(r.out);
}

/* The last "worker K: step S, global step G, ... N stale steps dropped"
 * line of worker K: 0 when it printed none. */
static int last_progress(const char *out, int task, long *step, long *global, long *stale)
{
    char prefix[64];
    int found = 0;
    snprintf(prefix, sizeof prefix, "worker %d: step ", task);
    for (const char *p = out; p && (p = strstr(p, prefix)); p++) {
        const char *dropped = strstr(p, "MB moved per step, ");
        found = sscanf(p + strlen(prefix), "%ld, global step %ld", step, global) == 2 && dropped &&
                sscanf(dropped, "MB moved per step, %ld stale", stale) == 1;
    }
    return found;
}

/* Issue 36 item 2, stage B: chapter 4's synchronous training, each worker
 * cutting its own graph: the accumulator ops on the ps tasks. */
static void test_sync_through_partitions(void)
{
    char cmd[2048];
    const char *run = "--device /cpu:0 --train_steps 30 --batch_size 64 --max_examples 1024 --log_every 5 "
                      "--sync_replicas true";
    snprintf(cmd, sizeof cmd, "timeout 300 %s --ps 2 --workers 2 --grace 20 "
             "--deadline 240 -- %s %s", launcher, lab, run);
    run_result r = {0};
    r.status = run_command(cmd, &r.out);
    check_training("synchronous, each worker's own pieces", &r, 2);
    for (int task = 0; task < 2; task++) {
        long step = 0, global = 0, stale = -1;
        ok(last_progress(r.out, task, &step, &global, &stale) && step == 30 && global == 30 && stale == 0,
           "2 of 2: worker %d's step 30 is global step 30, no stale step (step %ld, global %ld, %ld stale)", task,
           step, global, stale);
    }
    free(r.out);
    snprintf(cmd, sizeof cmd, "timeout 300 %s --ps 1 --workers 3 --grace 20 "
             "--deadline 240 -- %s %s --replicas_to_aggregate 2", launcher, lab, run);
    r.status = run_command(cmd, &r.out);
    check_training("2 of 3 (a backup), each worker's own pieces", &r, 1);
    long stale_in_all = 0;
    for (int task = 0; task < 3; task++) {
        long step = 0, global = 0, stale = -1;
        bool found = last_progress(r.out, task, &step, &global, &stale);
        bool chief_exact = task != 0 || (step == 30 && global == 30); /* one take per chief's step */
        ok(found && step <= global && chief_exact,
           "2 of 3: worker %d's steps are no more than the global step%s (step %ld, global %ld, %ld stale)", task,
           task == 0 ? ", the chief's exactly it" : "", step, global, stale);
        stale_in_all += stale > 0 ? stale : 0;
    }
    diag("2 of 3: %ld stale steps counted by the three workers (a backup's late gradients)", stale_in_all);
    free(r.out);
}

/* Workers that disagree on --sync_replicas, started by hand (a launcher
 * gives every task the same flags): the ps refuses the asynchronous worker's
 * piece, which exits 1 naming both workers and the flag; the chief, whose
 * step then waits for a gradient no one will send, is told at once when
 * that worker says goodbye, and the ps exits 0. Each task under timeout. */
static void test_mixed_sync_modes(void)
{
    char common[900], cmd[2400];
    int ps = loopback_free_port(), w0 = loopback_free_port(), w1 = loopback_free_port();
    snprintf(common, sizeof common, "timeout 120 %s --ps_hosts 127.0.0.1:%d --worker_hosts 127.0.0.1:%d,127.0.0.1:%d "
             "--device /cpu:0 --max_examples 512 --batch_size 32 --train_steps 20", lab, ps, w0, w1);
    snprintf(cmd, sizeof cmd, "(%s --job_name ps & P=$!; %s --job_name worker --task_index 0 --sync_replicas true & "
             "C=$!; %s --job_name worker --task_index 1 --sync_replicas false; echo \"worker 1 exited $?\"; wait $C; "
             "echo \"worker 0 exited $?\"; wait $P; echo \"ps exited $?\")", common, common, common);
    time_t start = time(NULL);
    run_result r = {0};
    r.status = run_command(cmd, &r.out);
    long took = (long)(time(NULL) - start);
    contains(r.out, "worker 1 exited 1", "mixed --sync_replicas: the asynchronous worker 1 exits 1");
    contains(r.out, "/job:worker/task:0 trains with --sync_replicas true, and /job:worker/task:1 with "
             "--sync_replicas false", "saying why, naming both workers and the flag");
    contains(r.out, "worker 0 exited 1", "the synchronous chief exits 1, released when worker 1 said goodbye");
    contains(r.out, "ps exited 0", "the ps exits 0");
    ok(took < 100, "no task waited for its deadline (%ld s; each task's timeout is 120 s)", took);
    free(r.out);
}

static void test_flags(void)
{
    run_result r = run_lab("--ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2 --job_name=wroker");
    ok(r.status == 2, "a misspelt --job_name exits 2");
    contains(r.out, "--job_name \"wroker\": not one of ps, worker, chief", "naming the flag and the choices");
    free(r.out);
    /* Not even a launcher's variables: as when run by hand, also inside an srun or mpirun. */
    r = run_env("env -u TF_CONFIG -u SLURM_PROCID -u OMPI_COMM_WORLD_RANK -u PMI_RANK", "--train_steps 1");
    ok(r.status == 2, "no cluster at all exits 2");
    contains(r.out, "no cluster: give --ps_hosts, --worker_hosts and --job_name, or TF_CONFIG", "saying what to give");
    free(r.out);
    /* A launcher's tasks (tests/slurm.t runs them): the ps are taken first, so one task is too few. */
    r = run_env("env -u TF_CONFIG -u OMPI_COMM_WORLD_RANK -u PMI_RANK SLURM_PROCID=0 SLURM_STEP_NUM_TASKS=1 "
                "SLURM_STEP_NODELIST=localhost SLURM_STEP_TASKS_PER_NODE=1", "--train_steps 1");
    ok(r.status == 2, "srun with one task and the default --num_ps 1 exits 2");
    contains(r.out, "1 ps task and 1 task in all (SLURM_STEP_NUM_TASKS)", "naming the launcher's variable");
    contains(r.out, "--num_ps", "and the flag that decides it");
    free(r.out);
    r = run_lab("--port_base 65536");
    ok(r.status == 2 && r.out && strstr(r.out, "--port_base: '65536'"), "a --port_base above 65535 is refused");
    free(r.out);
    r = run_lab("--help");
    contains(r.out, "--num_ps N", "--help documents --num_ps");
    contains(r.out, "--port_base P", "and --port_base");
    free(r.out);
    r = run_lab("--ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2 --job_name=worker --ps_strategy=random");
    ok(r.status == 2 && r.out && strstr(r.out, "--ps_strategy"), "an unknown --ps_strategy is refused by name");
    free(r.out);
}

static void test_launcher_faults(void)
{
    /* A fake task: workers fail with status 3, a ps waits to be stopped. */
    run_result r = launch("--ps 1 --workers 2 --grace 1 --deadline 60",
                          "sh -c 'case \"$*\" in *job_name=ps*) sleep 60;; *) echo hello; exit 3;; esac' task");
    ok(r.status != 0, "a worker that fails makes the launcher fail");
    ok(r.out && strstr(r.out, "launch_cluster: worker") && strstr(r.out, "failed (it exited with status 3)"),
       "naming the worker and its status");
    /* The first worker to fail stops the other, maybe before it printed. */
    ok(r.out && (strstr(r.out, "worker0: hello") || strstr(r.out, "worker1: hello")),
       "task output comes out prefixed with the task's name");
    free(r.out);

    r = launch("--ps 1 --workers 1 --grace 1 --deadline 60",
               "sh -c 'case \"$*\" in *job_name=ps*) sleep 60;; *) exit 0;; esac' task");
    ok(r.status != 0, "a ps that does not exit after the workers finished fails the launch");
    contains(r.out, "ps0 still running 1 s after every worker finished; stopping it",
             "saying which ps, and after how long");
    free(r.out);
    r = launch("--ps 0 --workers 1 --deadline 1", "sh -c 'sleep 30' task");
    ok(r.status != 0, "the deadline stops a task that runs too long");
    contains(r.out, "the deadline (1 s) passed while waiting for worker0", "saying what it waited for");
    free(r.out);
}

/* Bad bytes at the ps while two workers train: sends them on a connection of
 * its own and waits (5 s at most) for the ps to close it. */
static bool throw_at(int port, const void *bytes, size_t len)
{
    int fd = loopback_connect(port, 5);
    bool closed = false;
    if (fd >= 0 && send(fd, bytes, len, MSG_NOSIGNAL) == (ssize_t)len) {
        char sink[4096];
        ssize_t n;
        while ((n = recv(fd, sink, sizeof sink, 0)) > 0)
            ;
        closed = n == 0;
    }
    close(fd);
    return closed;
}

/* SIGTERM to the launcher whose pid the file holds, if it still runs: the
 * launcher then stops every task it started. */
static void stop_by_pid_file(const char *path)
{
    char *text = read_file(path);
    pid_t pid = text ? (pid_t)atol(text) : 0;
    free(text);
    if (pid > 0 && kill(pid, 0) == 0)
        kill(pid, SIGTERM);
}

static void test_bad_bytes_beside_training(void)
{
    char out[400], status[400], pid_file[400], cmd[2400];
    snprintf(out, sizeof out, "%s/attacked.txt", tmp_dir);
    snprintf(status, sizeof status, "%s/attacked.status", tmp_dir);
    snprintf(pid_file, sizeof pid_file, "%s/attacked.pid", tmp_dir);
    int port = loopback_free_ports(3); /* the ps at port, the workers at port+1, port+2 */
    /* In the background, its pid kept: whatever happens below, it is stopped by pid. */
    snprintf(cmd, sizeof cmd, "(sh -c 'echo $$ > %s; exec timeout 300 %s --ps 1 --workers 2 --base_port %d --grace 20 "
             "--deadline 240 -- %s --device /cpu:0 --train_steps 40 --batch_size 64 --max_examples 1024 "
             "--log_every 3' > %s 2>&1; echo $? > %s) &", pid_file, launcher, port, lab, out, status);
    if (system(cmd) != 0 || !wait_for_text(out, "worker 1: step 1,", 60)) {
        ok(false, "the cluster beside which bad bytes are thrown starts (waited 60 s for worker 1's first step)");
        stop_by_pid_file(pid_file);
        return;
    }
    static const char http[] = "GET / HTTP/1.0\r\n\r\n";
    unsigned char garbage[600], huge[20] = {'F', 'L', 'W', 'P', 2, 24, 0, 0, 0, 0, 0, 1,
                                                0, 0, 0, 0, 0x10, 0, 0, 0};
    for (int i = 0; i < 600; i++)
        garbage[i] = (unsigned char)(i * 53 + 7);
    int closed = throw_at(port, http, sizeof http - 1) + throw_at(port, garbage, sizeof garbage) +
                 throw_at(port, huge, sizeof huge);
    ok(closed == 3, "the ps closes each of 3 bad connections while two workers train (%d closed)", closed);
    ok(wait_for_text(status, "\n", 240), "the cluster finishes (waited for the launcher's exit status)");
    stop_by_pid_file(pid_file); /* nothing when it has finished; else the launcher stops its tasks */
    char *code = read_file(status);
    ok(code && atoi(code) == 0, "every task exited 0: the training beside the bad bytes was not disturbed");
    free(code);
    run_result r = {.out = read_file(out)};
    check_training("2 workers beside bad bytes", &r, 1);
    contains(r.out, "ps0: ps 0: closing 127.0.0.1:", "the ps logged each refusal, naming the peer");
    free(r.out);
}

/* Chapter 4's "Securing a cluster": the same training with a secret the
 * launcher makes for the run and TLS 1.3 on every connection (certificates
 * made now, tests/make_test_certs.sh), and a lab refusing a secret file
 * others can read. */
static void test_secure_training(void)
{
    char args[1600], certs[300], cmd[400], loose[400];
    snprintf(certs, sizeof certs, "%s/certs", tmp_dir);
    snprintf(cmd, sizeof cmd, "sh tests/make_test_certs.sh %s", certs);
    ok(system(cmd) == 0, "test certificates are made (%s)", cmd);
    snprintf(args, sizeof args, "%s --device /cpu:0 --train_steps 30 --batch_size 64 --max_examples 1024 "
             "--log_every 3 --tls_cert %s/task.pem --tls_key %s/task.key --tls_ca %s/ca.pem", lab, certs, certs,
             certs);
    run_result r = launch("--ps 1 --workers 2 --grace 20 --deadline 240 --make_secret", args);
    check_training("1 ps, 2 workers, a shared secret and TLS", &r, 1);
    contains(r.out, "launch_cluster: made a shared secret for this run: ", "the launcher made the run's secret");
    const char *path = r.out ? strstr(r.out, "for this run: ") : NULL;
    char secret_path[300] = "";
    if (path)
        sscanf(path + strlen("for this run: "), "%299s", secret_path);
    ok(secret_path[0] && access(secret_path, F_OK) != 0, "and removed it when the run ended (%s)", secret_path);
    free(r.out);
    snprintf(loose, sizeof loose, "%s/loose_secret", tmp_dir);
    FILE *f = fopen(loose, "w");
    if (f) {
        fputs("0123456789abcdef0123456789abcdef\n", f);
        fclose(f);
    }
    chmod(loose, 0644);
    snprintf(args, sizeof args, "--ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2 --job_name=ps "
             "--cluster_secret_file=%s", loose);
    r = run_lab(args);
    ok(r.status == 2 && r.out && strstr(r.out, "chmod 600"), "a lab refuses a secret file others can read, "
       "saying how to fix it (exit %d)", r.status);
    free(r.out);
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_lab03", "labs/03-between-graph/between_graph");
    snprintf(launcher, sizeof launcher, "%s/labs/tools/launch_cluster", build_dir);
    test_flags();
    test_launcher_faults();
    test_training();
    test_training_through_partitions();
    test_sync_through_partitions();
    test_mixed_sync_modes();
    test_bad_bytes_beside_training();
    test_secure_training();
    lab_runner_finish();
    return done_testing();
}
