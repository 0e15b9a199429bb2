/* runner_pool.c: a task server's long-lived runners (runner_pool.h). Each
 * runner waits for a job of its own; a step's job goes to one that is idle,
 * so a warm server starts no thread, and a new runner is made only when
 * more runs are in flight at once than ever before. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "runner_pool.h"
#include "runtime.h"

typedef struct {
    fl_runner_pool *pool;
    pthread_t thread;
    fl_runner_job job; /* the job handed over; NULL: idle */
    fl_runner_job finished; /* said once the runner is idle again (NULL: nothing) */
    void *arg;
} runner;

struct fl_runner_pool {
    pthread_mutex_t lock;    /* all below */
    pthread_cond_t changed;  /* a job handed over, or stopping */
    runner **runners;
    int count, cap;
    bool stopping;
};

static void *serve(void *arg)
{
    runner *r = arg;
    fl_runner_pool *p = r->pool;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!r->job && !p->stopping)
            pthread_cond_wait(&p->changed, &p->lock);
        if (!r->job)
            break; /* stopping, and its last job is done */
        fl_runner_job job = r->job, finished = r->finished;
        void *job_arg = r->arg;
        pthread_mutex_unlock(&p->lock);
        job(job_arg);
        pthread_mutex_lock(&p->lock);
        r->job = NULL;
        if (finished) { /* idle first: a client the news wakes may send its next run at once */
            pthread_mutex_unlock(&p->lock);
            finished(job_arg);
            pthread_mutex_lock(&p->lock);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

fl_runner_pool *fl_runner_pool_new(void)
{
    fl_runner_pool *p = fl_xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    return p;
}

/* A new runner that starts with job. Lock held. */
static int add_runner(fl_runner_pool *p, fl_runner_job job, fl_runner_job finished, void *arg)
{
    runner *r = fl_xcalloc(1, sizeof *r);
    *r = (runner){.pool = p, .job = job, .finished = finished, .arg = arg};
    if (pthread_create(&r->thread, NULL, serve, r) != 0) {
        free(r);
        return -1;
    }
    if (p->count == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 4;
        p->runners = fl_xrealloc(p->runners, (size_t)p->cap * sizeof *p->runners);
    }
    p->runners[p->count++] = r;
    return 0;
}

int fl_runner_pool_run(fl_runner_pool *p, fl_runner_job job, fl_runner_job finished, void *arg)
{
    pthread_mutex_lock(&p->lock);
    int i = 0;
    while (i < p->count && p->runners[i]->job)
        i++;
    int rc = 0;
    if (i < p->count) {
        p->runners[i]->job = job;
        p->runners[i]->finished = finished;
        p->runners[i]->arg = arg;
    } else {
        rc = add_runner(p, job, finished, arg);
    }
    pthread_cond_broadcast(&p->changed); /* few runners: each looks at its own job */
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void fl_runner_pool_free(fl_runner_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->count; i++) {
        pthread_join(p->runners[i]->thread, NULL);
        free(p->runners[i]);
    }
    free(p->runners);
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
