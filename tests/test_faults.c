/* test_faults.c: chapter 4's tasks that die. Each test starts the chapter 3
 * lab's ps and workers as processes of its own (pids kept, each task's
 * output in a file), kills one with SIGKILL mid-training, and checks what
 * the others do. Every wait has a deadline and says what it waited for. */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "lab_runner.h"
#include "loopback.h"
#include "stop_process.h"

#define MAX_TASKS 4

typedef struct {
    char name[16];    /* "ps0", "worker1" */
    char out[400];    /* its output file; a restart appends to it */
    char flags[1200]; /* its flags after the program */
    pid_t pid;        /* 0 once reaped */
} task;

typedef struct {
    char spec[200]; /* --ps_hosts ... --worker_hosts ... */
    task tasks[MAX_TASKS];
    int ntasks;
} cluster;

/* ---- processes ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts the task: the lab itself is the child (exec, no shell left
 * between), so its pid is the one a SIGKILL must reach. */
static void start(task *t)
{
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "exec env POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=1 %s %s >> %s 2>&1", lab,
             t->flags, t->out);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    t->pid = pid;
}

/* The task's exit status within seconds, or -1 after killing it at the
 * deadline (saying so). */
/* Waits for t to exit while it keeps printing: it is killed (and -1
 * returned) once its output has not grown for quiet_s seconds, or after
 * cap_s in all. A worker under AddressSanitizer on a loaded machine may take
 * minutes to finish, but one that prints nothing for quiet_s is stuck. */
static int wait_exit_while_printing(task *t, double quiet_s, double cap_s)
{
    double start = now_s(), deadline = start + quiet_s;
    off_t printed = -1;
    while (t->pid > 0) {
        int status;
        pid_t done = waitpid(t->pid, &status, WNOHANG);
        if (done == t->pid) {
            t->pid = 0;
            return decode_status(status);
        }
        struct stat st;
        if (stat(t->out, &st) == 0 && st.st_size != printed) {
            printed = st.st_size;
            deadline = now_s() + quiet_s < start + cap_s ? now_s() + quiet_s : start + cap_s;
        }
        if (now_s() > deadline) {
            diag("%s had not exited after %.0f s (its output unchanged for %.0f s at most): killed", t->name,
                 now_s() - start, quiet_s);
            kill(t->pid, SIGKILL);
            waitpid(t->pid, &status, 0);
            t->pid = 0;
            return -1;
        }
        usleep(50000);
    }
    return -1;
}

static int wait_exit(task *t, double seconds) { return wait_exit_while_printing(t, seconds, seconds); }

static void kill9(task *t)
{
    if (t->pid <= 0)
        return;
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
    t->pid = 0;
}

static void stop_all(cluster *c)
{
    for (int i = 0; i < c->ntasks; i++)
        kill9(&c->tasks[i]);
}

/* ---- what the tasks print ---- */

/* Polls the task's output until it holds text; false (and a diag naming
 * the task and the text) at the deadline or when the task has exited. */
static bool wait_for(const task *t, const char *text, double seconds)
{
    double deadline = now_s() + seconds;
    for (;;) {
        char *have = read_file(t->out);
        bool found = have && strstr(have, text);
        free(have);
        if (found)
            return true;
        if (now_s() > deadline || (t->pid > 0 && kill(t->pid, 0) != 0)) {
            diag("waited %.0f s for %s to print '%s'", seconds, t->name, text);
            return false;
        }
        usleep(100000);
    }
}

/* The number after the last occurrence of key in the task's output, or -1. */
static long last_number_after(const task *t, const char *key)
{
    char *text = read_file(t->out);
    long value = -1;
    for (const char *p = text; p && (p = strstr(p, key)); p += strlen(key))
        value = atol(p + strlen(key));
    free(text);
    return value;
}

/* The task's last lines of output, each as a TAP comment, so that a
 * failure says what the task said before it ended. */
static void last_words(const task *t, int lines)
{
    char *text = read_file(t->out);
    if (!text) {
        diag("%s printed nothing (%s)", t->name, t->out);
        return;
    }
    const char *start = text + strlen(text);
    for (int seen = 0; start > text && seen <= lines; start--)
        if (start[-1] == '\n' && ++seen > lines)
            break;
    diag("%s's last words:", t->name);
    for (char *line = strtok((char *)start, "\n"); line; line = strtok(NULL, "\n"))
        diag("  %s", line);
    free(text);
}

static void explain_failure(const task *t, int status)
{
    if (status != 0)
        last_words(t, 12);
}

/* N from the task's "global step A -> B: N steps lost since the last
 * checkpoint" ("1 step lost" for one), or -1 when it logged none. */
static long steps_lost(const task *t)
{
    char *text = read_file(t->out);
    const char *end = text ? strstr(text, " steps lost since the last checkpoint") : NULL;
    if (text && !end)
        end = strstr(text, " step lost since the last checkpoint");
    const char *start = end;
    while (start && start > text && start[-1] != ' ')
        start--;
    long lost = start ? atol(start) : -1;
    free(text);
    return lost;
}

/* Waits until the task has logged a global step of at least step. */
static bool wait_for_global_step(const task *t, long step, double seconds)
{
    double deadline = now_s() + seconds;
    while (last_number_after(t, ", global step ") < step) {
        if (now_s() > deadline || t->pid <= 0 || kill(t->pid, 0) != 0) {
            diag("waited %.0f s for %s to reach global step %ld (last seen %ld)", seconds, t->name, step,
                 last_number_after(t, ", global step "));
            return false;
        }
        usleep(100000);
    }
    return true;
}

/* ---- a cluster of the lab ---- */

static void add_task(cluster *c, const char *job, int index, const char *flags)
{
    task *t = &c->tasks[c->ntasks++];
    char spec[sizeof c->spec];
    snprintf(spec, sizeof spec, "%s", c->spec);
    snprintf(t->name, sizeof t->name, "%s%d", job, index);
    snprintf(t->out, sizeof t->out, "%s/%s%d.txt", tmp_dir, job, index);
    snprintf(t->flags, sizeof t->flags, "%s --job_name %s --task_index %d %s", spec, job, index, flags);
    unlink(t->out);
}

/* One ps and `workers` workers on free loopback ports, each worker with
 * the same training flags; nothing started yet. */
static bool make_cluster(cluster *c, int workers, const char *worker_flags)
{
    memset(c, 0, sizeof *c);
    int port = loopback_free_ports(1 + workers);
    if (port == 0)
        return false;
    int used = snprintf(c->spec, sizeof c->spec, "--ps_hosts 127.0.0.1:%d --worker_hosts ", port);
    for (int w = 0; w < workers; w++)
        used += snprintf(c->spec + used, sizeof c->spec - (size_t)used, "%s127.0.0.1:%d", w ? "," : "", port + 1 + w);
    add_task(c, "ps", 0, "");
    for (int w = 0; w < workers; w++)
        add_task(c, "worker", w, worker_flags);
    return true;
}

/* The ps first, then the workers once it serves, the chief (task 1) last:
 * training starts when the chief has initialized the model, so every
 * worker is connected by then. A worker that starts late, or finds no ps
 * yet and backs off for seconds, can otherwise see the others finish a
 * short run (a step takes milliseconds) before its first step. */
static void start_all(cluster *c)
{
    start(&c->tasks[0]);
    wait_for(&c->tasks[0], "serving variables", 30); /* on a timeout the tests' own waits say what is missing */
    for (int i = c->ntasks - 1; i >= 1; i--)
        start(&c->tasks[i]);
}

#define QUICK "--device /cpu:0 --batch_size 32 --max_examples 1024 --log_every 5 --seed 1"
#define SAVE_EVERY 20

/* kill -9 the ps at a global step past its second checkpoint, restart it on
 * the same port: the chief restores the latest checkpoint into it, both
 * workers go on, and the global step reaches the end. */
static void test_ps_restarted(void)
{
    cluster c;
    char flags[600];
    snprintf(flags, sizeof flags, QUICK " --train_steps 150 --checkpoint_dir %s/ps-restart --save_every %d", tmp_dir,
             SAVE_EVERY);
    if (!make_cluster(&c, 2, flags)) {
        ok(false, "ps restarted: free ports for 3 tasks");
        return;
    }
    task *ps = &c.tasks[0], *chief = &c.tasks[1], *other = &c.tasks[2];
    start_all(&c);
    bool reached = wait_for(chief, "model.ckpt-", 90) && wait_for_global_step(chief, 2 * SAVE_EVERY + 5, 90);
    ok(reached, "ps restarted: the chief saved a checkpoint and trained past global step %d", 2 * SAVE_EVERY + 5);
    /* The other worker is held (SIGSTOP) while the ps dies and comes back,
     * and let go once the chief has restored and trained on past where the
     * other had been: the step the other finds then hides the loss, which
     * it must still report (it reads the checkpoint's step on failing). */
    if (!stop_process(other->pid))
        diag("the other worker (pid %d) did not stop within 5 s of SIGSTOP", (int)other->pid);
    kill9(ps);
    long saved = last_number_after(chief, "model.ckpt-");
    start(ps);
    bool trained_on = wait_for(chief, "restored the latest checkpoint", 90) &&
                      wait_for_global_step(chief, saved + SAVE_EVERY / 2, 90);
    kill(other->pid, SIGCONT);
    ok(trained_on, "ps restarted: with the other worker held, the chief restored and trained on past %ld",
       saved + SAVE_EVERY / 2);
    int chief_status = wait_exit_while_printing(chief, 180, 600), other_status = wait_exit(other, 60),
        ps_status = wait_exit(ps, 30);
    ok(chief_status == 0 && other_status == 0, "ps restarted: both workers finish (exit %d, %d)", chief_status,
       other_status);
    explain_failure(chief, chief_status);
    explain_failure(other, other_status);
    explain_failure(ps, ps_status);
    ok(ps_status == 0, "ps restarted: the new ps exits by itself once both have finished (exit %d)", ps_status);
    ok(wait_for(chief, "restored the latest checkpoint", 1),
       "ps restarted: the chief restored the latest checkpoint into the new ps");
    long lost = steps_lost(chief);
    diag("the ps was killed after checkpoint %ld; steps lost: %ld (checkpoints every %d global steps)", saved, lost,
         SAVE_EVERY);
    ok(lost >= 0 && lost <= SAVE_EVERY + 2,
       "ps restarted: the chief logs the steps lost (%ld), at most the checkpoint interval (%d, + 1 per worker)",
       lost, SAVE_EVERY);
    long other_lost = steps_lost(other);
    ok(other_lost > 0 && other_lost <= SAVE_EVERY + 2,
       "ps restarted: the other worker logs them too (%ld), though asynchronous training went on without it",
       other_lost);
    char *other_text = read_file(other->out);
    ok(other_text && strstr(other_text, "test accuracy") && !strstr(other_text, "images/sec, -"),
       "ps restarted: the bytes moved per step stay counted across the new connection (none negative)");
    free(other_text);
    long final = last_number_after(chief, "model.ckpt-");
    ok(final >= 150, "ps restarted: training reached the final global step (last checkpoint %ld, wanted >= 150)",
       final);
    stop_all(&c);
}

/* kill -9 the ps and never restart it: every worker ends, within its
 * deadline, with an error naming the ps task. */
static void test_ps_gone(void)
{
    cluster c;
    if (!make_cluster(&c, 2, QUICK " --train_steps 100000")) {
        ok(false, "ps gone: free ports for 3 tasks");
        return;
    }
    setenv("FLOWLAB_TASK_DEADLINE", "8", 1);
    start_all(&c);
    ok(wait_for_global_step(&c.tasks[2], 10, 90), "ps gone: both workers train (worker 1 reached global step 10)");
    kill9(&c.tasks[0]);
    double killed = now_s();
    for (int w = 1; w <= 2; w++) {
        int status = wait_exit(&c.tasks[w], 60);
        double took = now_s() - killed;
        ok(status > 0 && status < 128, "ps gone: %s exits with an error, not a hang or a crash (exit %d after %.0f s)",
           c.tasks[w].name, status, took);
        ok(took < 8 + 30, "ps gone: %s ended within its deadline (8 s) and the reconnect backoff (%.0f s)",
           c.tasks[w].name, took);
        char *text = read_file(c.tasks[w].out);
        const char *last = text ? strstr(text, "/job:ps/task:0") : NULL;
        ok(last != NULL, "ps gone: %s's error names /job:ps/task:0", c.tasks[w].name);
        ok(text && !strstr(text, "Sanitizer"), "ps gone: %s ends without a sanitizer report (no leak on the way out)",
           c.tasks[w].name);
        free(text);
        last_words(&c.tasks[w], 3);
    }
    setenv("FLOWLAB_TASK_DEADLINE", "60", 1);
    stop_all(&c);
}

/* Synchronous, 2 of 3 replicas aggregated: kill -9 worker 2 (a backup's
 * worth of slack), the other two go on; restarted, worker 2 rejoins. */
/* A worker still waiting for a step when the chief ended training (the
 * restarted backup, as a rule) ends by the chief's close of the sync token
 * and says so, naming the chief's last step; one whose last step came in
 * time ends by its stop hook. */
static void check_ended_by_close(const cluster *c)
{
    int ended = 0, named = 0;
    for (int w = 2; w <= 3; w++) {
        char *out = read_file(c->tasks[w].out);
        if (out && strstr(out, "training is over: ")) {
            ended++;
            named += strstr(out, "the chief stopped training at global step 120") != NULL;
        }
        free(out);
    }
    ok(named == ended, "sync worker restarted: %d of the 2 other workers ended by the chief's close, each naming "
       "its last step (%d did)", ended, named);
}

static void test_sync_worker_restarted(void)
{
    cluster c;
    if (!make_cluster(&c, 3, QUICK " --train_steps 120 --sync_replicas true --replicas_to_aggregate 2 "
                             "--total_num_replicas 3")) {
        ok(false, "sync worker restarted: free ports for 4 tasks");
        return;
    }
    task *chief = &c.tasks[1], *victim = &c.tasks[3];
    start_all(&c);
    ok(wait_for_global_step(victim, 10, 90), "sync worker restarted: worker 2 trains (global step 10)");
    kill9(victim);
    long at_kill = last_number_after(chief, ", global step ");
    ok(wait_for_global_step(chief, at_kill + 15, 90),
       "sync worker restarted: without worker 2 the others go on (global step %ld -> %ld)", at_kill, at_kill + 15);
    FILE *mark = fopen(victim->out, "a");
    if (mark) {
        fputs("--- restarted ---\n", mark);
        fclose(mark);
    }
    start(victim);
    ok(wait_for(victim, "--- restarted ---\nworker 2: ", 30) && wait_for(victim, "worker 2: step 5,", 90),
       "sync worker restarted: worker 2 rejoins and trains 5 steps");
    int statuses[3];
    for (int w = 0; w < 3; w++)
        statuses[w] = wait_exit_while_printing(&c.tasks[1 + w], 180, 600);
    ok(statuses[0] == 0 && statuses[1] == 0 && statuses[2] == 0,
       "sync worker restarted: all three finish (exit %d, %d, %d)", statuses[0], statuses[1], statuses[2]);
    for (int w = 0; w < 3; w++)
        explain_failure(&c.tasks[1 + w], statuses[w]);
    check_ended_by_close(&c);
    ok(wait_exit(&c.tasks[0], 30) == 0, "sync worker restarted: the ps exits by itself");
    ok(last_number_after(chief, ", global step ") >= 110,
       "sync worker restarted: the chief saw the global step near the end (%ld of 120)",
       last_number_after(chief, ", global step "));
    stop_all(&c);
}

/* kill -9 the chief and restart it: it finds the model on the ps, keeps
 * it, and training completes. */
static void test_chief_restarted(void)
{
    cluster c;
    char flags[600];
    snprintf(flags, sizeof flags, QUICK " --train_steps 150 --checkpoint_dir %s/chief-restart --save_every %d",
             tmp_dir, SAVE_EVERY);
    if (!make_cluster(&c, 2, flags)) {
        ok(false, "chief restarted: free ports for 3 tasks");
        return;
    }
    task *chief = &c.tasks[1], *other = &c.tasks[2];
    start_all(&c);
    ok(wait_for_global_step(chief, 30, 90), "chief restarted: the chief trains (global step 30)");
    kill9(chief);
    start(chief);
    ok(wait_for(chief, "the model is already there (global step ", 60),
       "chief restarted: it finds the model on the ps and keeps it");
    int chief_status = wait_exit_while_printing(chief, 180, 600), other_status = wait_exit(other, 60);
    ok(chief_status == 0 && other_status == 0, "chief restarted: both workers finish (exit %d, %d)", chief_status,
       other_status);
    explain_failure(chief, chief_status);
    explain_failure(other, other_status);
    ok(wait_exit(&c.tasks[0], 30) == 0, "chief restarted: the ps exits by itself");
    ok(last_number_after(chief, "model.ckpt-") >= 150,
       "chief restarted: training reached the final global step (last checkpoint %ld)",
       last_number_after(chief, "model.ckpt-"));
    stop_all(&c);
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_faults", "labs/03-between-graph/between_graph");
    setenv("FLOWLAB_TASK_DEADLINE", "60", 1);
    test_ps_restarted();
    test_ps_gone();
    test_sync_worker_restarted();
    test_chief_restarted();
    lab_runner_finish();
    return done_testing();
}
