/* test_runner_pool.c: a task server's long-lived runners
 * (src/distributed_runtime/server/runner_pool.c): jobs one after another, each
 * handed over on the news of the last one's end, run on one runner; a job handed over while
 * another waits for it gets a runner of its own (runs wait for each other's
 * values, so none may queue behind another); freeing the pool waits for a
 * job still running. Every wait here has a deadline of a few seconds. */
#include <pthread.h>
#include <time.h>

#include "distributed_runtime/server/runner_pool.h"
#include "tap.h"

#define JOBS 20

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

typedef struct {
    pthread_t thread;     /* the runner it ran on */
    bool done;
    bool finished;        /* the pool's news that the job is over, its runner idle */
    const bool *wait_for; /* NULL, or a flag another job sets, waited for */
} job;

static struct timespec seconds_from_now(int seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += seconds;
    return ts;
}

/* Waits (lock held) for *flag, up to 10 s: whether it was set. */
static bool wait_flag(const bool *flag)
{
    struct timespec until = seconds_from_now(10);
    int rc = 0;
    while (!*flag && rc == 0)
        rc = pthread_cond_timedwait(&changed, &lock, &until);
    return *flag;
}

static void run(void *arg)
{
    job *j = arg;
    pthread_mutex_lock(&lock);
    j->thread = pthread_self();
    if (j->wait_for)
        wait_flag(j->wait_for);
    j->done = true;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static void say_finished(void *arg)
{
    job *j = arg;
    pthread_mutex_lock(&lock);
    j->finished = true;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

/* Hands j over and waits for the news of its end, as a task server's
 * client waits for a run's reply before it sends the next. */
static bool handed_and_done(fl_runner_pool *p, job *j)
{
    if (fl_runner_pool_run(p, run, say_finished, j) != 0)
        return false;
    pthread_mutex_lock(&lock);
    bool done = wait_flag(&j->finished) && j->done;
    pthread_mutex_unlock(&lock);
    return done;
}

static void one_after_another(void)
{
    fl_runner_pool *p = fl_runner_pool_new();
    job jobs[JOBS] = {{0}};
    int ran = 0, threads = 0;
    for (int i = 0; i < JOBS && handed_and_done(p, &jobs[i]); i++) {
        ran++;
        bool seen = false;
        for (int k = 0; k < i && !seen; k++)
            seen = pthread_equal(jobs[k].thread, jobs[i].thread);
        threads += !seen;
    }
    fl_runner_pool_free(p);
    ok(ran == JOBS, "%d jobs one after another each ran (%d did)", JOBS, ran);
    /* The news of a job's end comes once its runner is idle, so the next job always finds it free (a warm
     * task server's step makes no runner: test_partition_server counts its blocks). */
    ok(threads == 1, "they ran on %d runner%s: each job's news came once its runner was idle", threads,
       threads == 1 ? "" : "s");
}

static void waiting_on_each_other(void)
{
    fl_runner_pool *p = fl_runner_pool_new();
    job b = {0};
    job a = {.wait_for = &b.done};
    bool handed = fl_runner_pool_run(p, run, NULL, &a) == 0 && fl_runner_pool_run(p, run, NULL, &b) == 0;
    pthread_mutex_lock(&lock);
    bool both = handed && wait_flag(&a.done) && b.done;
    pthread_mutex_unlock(&lock);
    ok(both, "a job that waits for a later one ends: the later one got a runner of its own (handed: %d)", handed);
    ok(!both || !pthread_equal(a.thread, b.thread), "the two ran on two runners");
    fl_runner_pool_free(p);
}

static void free_waits_for_jobs(void)
{
    fl_runner_pool *p = fl_runner_pool_new();
    bool go = false;
    job j = {.wait_for = &go};
    ok(fl_runner_pool_run(p, run, NULL, &j) == 0, "a job is handed over");
    pthread_mutex_lock(&lock);
    go = true;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    fl_runner_pool_free(p);
    pthread_mutex_lock(&lock);
    bool done = j.done;
    pthread_mutex_unlock(&lock);
    ok(done, "freeing the pool with a job in flight returned after the job ended");
}

int main(void)
{
    one_after_another();
    waiting_on_each_other();
    free_waits_for_jobs();
    return done_testing();
}
