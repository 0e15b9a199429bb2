/* test_sync_partitions.c: synchronous training where each between-graph
 * worker cuts its own graph (issue 36 item 2, stage B):
 * fl_sync_replicas_optimizer builds TensorFlow's accumulator graph. One ps
 * and workers in this process on loopback (sync_cluster.h), each with a
 * graph of its own: w and b on the ps, the loss sum((w - t)^2) + (b - 3)^2
 * on the worker, SGD at 0.1. With 2 of 2 both
 * workers' steps read the global step advanced once per aggregated step and
 * w follows the averaged update exactly; with 1 of 2 a worker held between
 * reading its step and applying its gradients finds its gradients stale,
 * dropped and counted (fl_remote_stale_steps, and by the ps); the chief's
 * take with its other worker gone fails within the task deadline, naming the
 * accumulator; once the chief's session has ended (closing the sync token),
 * the other worker's next step ends its monitored session's training
 * (OUT_OF_RANGE, a line saying why, close returns 0) at once. A chief
 * that restored a step sets the accumulators to it; a worker's tag is its
 * last wait's token; workers that disagree on --sync_replicas are refused;
 * a chief whose other workers said goodbye is told at once.
 * Every wait has a deadline (FLOWLAB_TASK_DEADLINE). */
#include <stdio.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "sync_cluster.h"

static void *train(void *arg)
{
    worker *k = arg;
    for (int i = 0; i < STEPS && train_step(k) == 0; i++)
        ;
    return NULL;
}

static bool steps_are_0_to_n(const worker *k)
{
    for (int i = 0; i < k->steps; i++)
        if (k->seen_steps[i] != i)
            return false;
    return k->steps == STEPS;
}

static void test_two_of_two(void)
{
    cluster c;
    if (!started(&c, &(setup){2, 2, -1, -1, NULL, 1}, "a ps and 2 synchronous workers"))
        return;
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, train, &c.w[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        ok(c.w[i].steps == STEPS, "2 of 2: worker %d ran its %d steps (%d): %s", i, STEPS, c.w[i].steps,
           c.w[i].error[0] ? c.w[i].error : "no error");
        ok(steps_are_0_to_n(&c.w[i]), "worker %d's step k read global step k: one advance per aggregated step", i);
        ok(fl_remote_stale_steps(c.w[i].cluster) == 0, "worker %d: no stale step (%llu)", i,
           (unsigned long long)fl_remote_stale_steps(c.w[i].cluster));
    }
    ok(c.w[0].losses[STEPS - 1] < c.w[0].losses[0] / 2, "the loss falls (%g, then %g)", c.w[0].losses[0],
       c.w[0].losses[STEPS - 1]);
    int now = global_step_now(&c.w[0]);
    ok(now == STEPS, "the global step is %d after %d steps of 2 workers (%d)", STEPS, STEPS, now);
    fl_tensor *w = NULL;
    fl_session_run(c.w[1].s, NULL, 0, &c.w[1].w, 1, &w, NULL, 0);
    /* both workers' gradients are equal: their average is applied once a step, w = t + 0.8^n (1 - t) */
    is_near(w ? ((float *)w->data)[0] : NAN, 3 - 2 * pow(0.8, STEPS), 1e-4, "w[0] got the average once per step");
    fl_tensor_free(w);
    down(&c, 2);
}

/* 1 of 2: worker 1 reads global step 0, then is held while the chief runs
 * 3 steps alone; its gradients of step 0 come too late for both variables. */
static void test_backup_stale(void)
{
    cluster c;
    if (!started(&c, &(setup){2, 1, 1, -1, NULL, 1}, "a ps and 2 workers (1 of 2)"))
        return;
    hold_worker_1(&c, 3);
    uint64_t steps = fl_remote_stale_steps(c.w[1].cluster), updates = fl_remote_stale_variable_updates(c.w[1].cluster);
    ok(steps == 1 && updates == 2, "its step is counted stale once, both variables' gradients dropped (%llu steps, "
       "%llu variable updates)", (unsigned long long)steps, (unsigned long long)updates);
    ok(fl_remote_stale_steps(c.w[0].cluster) == 0, "the chief lost none");
    fl_server_stats ps = {0};
    fl_server_get_stats(c.ps[0], &ps);
    ok(ps.stale_steps == 1 && ps.stale_variable_updates == 2, "the ps counts the same (%llu steps, %llu variable "
       "updates)", (unsigned long long)ps.stale_steps, (unsigned long long)ps.stale_variable_updates);
    int now = global_step_now(&c.w[0]);
    ok(now == 3, "the global step counts the chief's 3 steps only (%d)", now);
    /* Issue 36 item 2: a step's tag is the token its worker's last wait
     * returned (3), never newer than the variables it reads (TensorFlow's
     * local step): read during the step it would be 4, and pass as fresh. */
    train_step(&c.w[0]);
    train_step(&c.w[1]);
    steps = fl_remote_stale_steps(c.w[1].cluster);
    ok(c.w[1].steps == 2 && c.w[1].seen_steps[1] == 4 && steps == 2, "worker 1's next step, tagged 3 from its wait "
       "while the chief moved on to 4, is stale too (%d steps, read %d, %llu stale): %s", c.w[1].steps,
       c.w[1].seen_steps[1], (unsigned long long)steps, c.w[1].error[0] ? c.w[1].error : "no error");
    down(&c, 2);
}

/* 2 of 2 with worker 1 never running: the chief's take ends at the deadline. */
static void test_dead_worker(void)
{
    cluster c;
    if (!started(&c, &(setup){1, 2, -1, -1, NULL, 1}, "a ps and the chief"))
        return;
    double start = fl_now_s();
    ok(train_step(&c.w[0]) != 0, "2 of 2 with worker 1 gone: the chief's step fails");
    double took = fl_now_s() - start;
    /* The ps's take gives up before the worker's wait for the ps does, so
     * the error that leads names what was really missing. */
    const char *ps = strstr(c.w[0].error, "/job:ps/task:0: "), *meanwhile = strstr(c.w[0].error, "meanwhile");
    ok(ps && (!meanwhile || ps < meanwhile) && strstr(ps, "accumulator w/grad_accum"),
       "its error leads with the ps's, which names the accumulator that lacked a gradient");
    diag("%s", c.w[0].error);
    ok(took < 20, "within the task deadline and some (%.1f s)", took);
    down(&c, 1);
}

/* Worker `task`'s goodbye to the ps, from a cluster of its own. */
static bool say_goodbye_as(const cluster *c, int task)
{
    fl_cluster *other = fl_cluster_from_flags(c->ps_hosts, c->worker_hosts, "worker", task);
    bool said = other && fl_cluster_say_goodbye(other) == 0;
    fl_cluster_free(other);
    return said;
}

/* Issue 36 item 2: a chief that restored global step 3 on a fresh ps sets
 * each accumulator's step and the token to it before its first step
 * (TensorFlow's chief_init_op). Worker 1 waits for the token to pass step 2,
 * then its gradient of step 2 is dropped and counted (without the setting,
 * the token stays at 0 and the wait ends at its deadline); the two workers'
 * gradients of step 3 are taken, and the global step goes 3 -> 4. */
static void test_restored_step(void)
{
    char dir[] = "/tmp/flowlab-sync-restore-XXXXXX", cmd[128];
    cluster c;
    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp made a checkpoint directory");
        return;
    }
    if (!started(&c, &(setup){1, 1, -1, -1, NULL, 1}, "the chief alone (1 of 2)"))
        return;
    for (int i = 0; i < 3; i++)
        train_step(&c.w[0]);
    ok(c.w[0].steps == 3 && fl_session_save(c.w[0].s, dir, 3) == 0, "the chief trains 3 steps and saves them: %s",
       c.w[0].error[0] ? c.w[0].error : fl_last_error());
    say_goodbye_as(&c, 1); /* worker 1 had no part in it */
    down(&c, 1);
    if (started(&c, &(setup){2, 2, -1, -1, dir, 1}, "a fresh ps, the chief restoring step 3 (2 of 2)")) {
        pthread_t chief;
        pthread_create(&chief, NULL, train_once, &c.w[0]);
        fl_tensor *dropped = NULL;
        int rc = fl_session_run(c.w[1].s, NULL, 0, &c.w[1].late, 1, &dropped, NULL, 0);
        ok(rc == 0 && *(const int32_t *)dropped->data == 1, "the token passed step 2, and a gradient of step 2 is "
           "dropped: %s", rc == 0 ? "it was" : fl_session_error(c.w[1].s));
        fl_tensor_free(dropped);
        train_step(&c.w[1]);
        pthread_join(chief, NULL);
        for (int i = 0; i < 2; i++)
            ok(c.w[i].steps == 1 && c.w[i].seen_steps[0] == 3 && fl_remote_stale_steps(c.w[i].cluster) == 0,
               "worker %d's step ran at global step 3, not stale: %s", i, c.w[i].error[0] ? c.w[i].error : "ok");
        int now = global_step_now(&c.w[0]);
        fl_server_stats ps = {0};
        fl_server_get_stats(c.ps[0], &ps);
        ok(now == 4 && ps.stale_variable_updates == 1, "the global step goes 3 -> 4 (%d); the ps counted the late "
           "gradient (%llu)", now, (unsigned long long)ps.stale_variable_updates);
        down(&c, 2);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ok(system(cmd) == 0, "the checkpoint directory is removed");
}

/* Workers that disagree on --sync_replicas (issue 38, lost with the ps
 * store in issue 36's stage C): the ps keeps the kind of the first worker
 * that registered a piece with updates (the chief's, at its initializing)
 * and refuses a piece of the other kind from another worker, naming both
 * workers and the flag; the chief goes on. Either kind first. */
static void test_mixed_sync_modes(int async_task)
{
    cluster c;
    if (!started(&c, &(setup){2, 1, -1, async_task, NULL, 1}, "a ps, a synchronous and an asynchronous worker"))
        return;
    const char *chief_sync = async_task == 0 ? "false" : "true", *other_sync = async_task == 0 ? "true" : "false";
    ok(train_step(&c.w[0]) == 0, "the chief (--sync_replicas %s) trains: %s", chief_sync,
       c.w[0].error[0] ? c.w[0].error : "no error");
    int rc = train_step(&c.w[1]);
    ok(rc != 0 && fl_session_error_code(c.w[1].s) == FL_FAILED_PRECONDITION, "worker 1's step (--sync_replicas %s) "
       "is refused: %s", other_sync, c.w[1].error);
    char want[160];
    snprintf(want, sizeof want, "/job:worker/task:0 trains with --sync_replicas %s, and /job:worker/task:1 with "
             "--sync_replicas %s", chief_sync, other_sync);
    contains(c.w[1].error, want, "naming both workers and the flag");
    ok(train_step(&c.w[0]) == 0, "the chief goes on: %s", c.w[0].error[0] ? c.w[0].error : "no error");
    down(&c, 2);
}

/* 2 of 2, and worker 1 says goodbye without a step: the chief's take ends
 * at once, saying why, not at the task deadline (issue 38's release of a
 * chief when too few workers remain, lost with the ps store in stage C). */
static void test_too_few_workers(void)
{
    cluster c;
    if (!started(&c, &(setup){1, 2, -1, -1, NULL, 1}, "a ps and the chief (2 of 2)"))
        return;
    ok(say_goodbye_as(&c, 1), "worker 1 says goodbye without a step");
    double start = fl_now_s();
    int rc = train_step(&c.w[0]);
    double took = fl_now_s() - start;
    ok(rc != 0 && fl_session_error_code(c.w[0].s) == FL_FAILED_PRECONDITION && took < 10, "the chief's step fails at "
       "once (%.1f s; the task deadline is 30 s): %s", took, c.w[0].error);
    contains(c.w[0].error, "only 1 worker of the cluster has not said goodbye", "saying why");
    down(&c, 1);
}

/* The monitored session's log, read back. */
static void read_log(FILE *log, char *text, size_t size)
{
    size_t n = 0;
    if (log) {
        rewind(log);
        n = fread(text, 1, size - 1, log);
    }
    text[n] = 0;
}

/* 1 of 2: the chief trains 2 steps and its session ends, which closes the
 * sync token; worker 1's next step would wait for step 3 for ever. */
static void test_chief_ended(void)
{
    cluster c;
    if (!started(&c, &(setup){2, 1, -1, -1, NULL, 1}, "a ps and 2 workers (1 of 2), the chief ending"))
        return;
    for (int i = 0; i < 2; i++)
        train_step(&c.w[0]);
    fl_session_free(c.w[0].s); /* the chief's training ends with its session */
    c.w[0].s = NULL;
    FILE *log = tmpfile();
    fl_session_options config = {.cluster = c.w[1].cluster};
    fl_monitored_session_options o = {.chief = FL_CHIEF_NO, .log_step_count_steps = -1, .config = &config,
                                      .log = log};
    fl_monitored_session *ms = fl_monitored_training_session(c.w[1].g, fl_get_or_create_global_step(c.w[1].g), &o);
    double start = fl_now_s();
    int rc = ms ? fl_monitored_session_run(ms, NULL, 0, NULL, 0, NULL, &c.w[1].train, 1) : 0;
    double took = fl_now_s() - start;
    fl_error_code code = fl_last_error_code();
    ok(ms && rc != 0 && code == FL_OUT_OF_RANGE, "worker 1's step after the chief ended fails OUT_OF_RANGE (%s)",
       ms ? fl_monitored_session_error(ms) : fl_last_error());
    contains(ms ? fl_monitored_session_error(ms) : "", "the chief stopped training at global step 2",
             "naming the chief's last step");
    ok(took < 10, "at once, not at the task deadline (%.1f s)", took);
    char text[2048];
    read_log(log, text, sizeof text);
    contains(text, "worker 1: training is over: ", "its monitored session says training is over");
    ok(ms && fl_monitored_session_should_stop(ms), "and stops");
    ok(!strstr(text, "connecting again"), "without connecting again");
    ok(ms && fl_monitored_session_close(ms) == 0, "closing it returns 0: the end of training, not a failure");
    if (log)
        fclose(log);
    down(&c, 2);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "30", 1);
    test_two_of_two();
    test_backup_stale();
    test_chief_ended();
    test_restored_step();
    test_too_few_workers();
    test_mixed_sync_modes(1);
    test_mixed_sync_modes(0);
    setenv("FLOWLAB_TASK_DEADLINE", "3", 1);
    test_dead_worker();
    return done_testing();
}
