/* runner_pool.h: threads that live as long as their task server and run one
 * job at a time, so that a RUN_PARTITION starts no thread per step: a job
 * goes to an idle runner, or to a new one when all are busy (runs wait for
 * each other's values, so none may queue behind another). */
#ifndef FLOWLAB_DIST_RUNNER_POOL_H
#define FLOWLAB_DIST_RUNNER_POOL_H

typedef struct fl_runner_pool fl_runner_pool;
typedef void (*fl_runner_job)(void *arg);

fl_runner_pool *fl_runner_pool_new(void);
/* Runs job(arg) on an idle runner, or on a new one, then finished(arg)
 * (NULL: nothing) once that runner is idle again, so that the next job the
 * news brings finds it free: 0, or -1 when no thread could be made. */
int fl_runner_pool_run(fl_runner_pool *p, fl_runner_job job, fl_runner_job finished, void *arg);
/* Waits for the jobs handed over to finish, ends the runners, frees p. */
void fl_runner_pool_free(fl_runner_pool *p);

#endif
