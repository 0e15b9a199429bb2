/* test_runner_pool.c: a task server's long-lived runners
 * (src/distributed_runtime/server/runner_pool.c): jobs one after another reuse the
 * runners instead of starting a thread each; a job handed over while
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

static bool handed_and_done(fl_runner_pool *p, job *j)
{
    if (fl_runner_pool_run(p, run, j) != 0)
        return false;
    pthread_mutex_lock(&lock);
    bool done = wait_flag(&j->done);
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
    /* A runner may still be between its job's end and its idleness when the next comes: a few, not one each. */
    ok(threads <= 4, "they ran on %d runner%s, reused, not a thread per job", threads, threads == 1 ? "" : "s");
}

static void waiting_on_each_other(void)
{
    fl_runner_pool *p = fl_runner_pool_new();
    job b = {0};
    job a = {.wait_for = &b.done};
    bool handed = fl_runner_pool_run(p, run, &a) == 0 && fl_runner_pool_run(p, run, &b) == 0;
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
    ok(fl_runner_pool_run(p, run, &j) == 0, "a job is handed over");
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
