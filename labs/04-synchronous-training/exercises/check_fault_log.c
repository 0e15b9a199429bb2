/* check_fault_log.c: checks my_read_fault_log (exercise fault-log) on
 * cluster logs: a run with no failure, the failure drill's own lines (a ps
 * killed after global step 19, restored from step 11), a ps lost before the
 * first checkpoint, a worker restarted with nothing lost, a log whose last
 * line has no '\n'. */
#include "exercises.h"
#include "../../common/check.h"

#define STEP0 "worker0: worker 0: step 20, global step 19, loss 0.694786 (217.0 images/sec, 26.2 MB moved per step)\n"
#define STEP1 "worker1: worker 1: step 20, global step 19, loss 0.652367 (217.0 images/sec, 26.2 MB moved per step)\n"
#define PS_UP "ps0: ps 0: serving variables; waiting for 2 workers to finish\n"
#define FAILED(w, task)                                                                                       \
    "worker" #w ": worker " #w ": the step failed (dense_1/MatMul: copying input dense_1/kernel from " task    \
    "/cpu:0 to /gpu:0 failed: lost the connection to " task ": the connection ended inside a frame); "          \
    "connecting again\nworker" #w ": worker " #w ": lost " task "; connecting again\n"
#define LOST(w, from, to, n)                                                                                  \
    "worker" #w ": worker " #w ": global step " #from " -> " #to ": " #n " steps lost since the last checkpoint\n"

static const struct {
    const char *name, *log;
    int found; /* what my_read_fault_log returns */
    fault_report want;
} logs[] = {
    {"a run with no failure", PS_UP STEP0 STEP1 "worker0: worker 0: test accuracy 0.7573\n", 0, {"", 0, 0, 0, 0}},
    {"an empty log", "", 0, {"", 0, 0, 0, 0}},
    {"the drill: ps 0 killed after global step 19", PS_UP STEP0 STEP1
         "ps_dies: killed ps0 after the chief logged global step 19\n" FAILED(0, "/job:ps/task:0")
         FAILED(1, "/job:ps/task:0") PS_UP "worker0: worker 0: restored the latest checkpoint in ckpt: global step 11\n"
         LOST(0, 19, 11, 8) LOST(1, 19, 11, 8),
     1, {"/job:ps/task:0", 2, 19, 11, 8}},
    {"a ps lost before the first checkpoint", STEP0 FAILED(1, "/job:ps/task:1") FAILED(0, "/job:ps/task:1")
         "worker0: worker 0: initialized the variables\n" LOST(1, 8, 0, 8) LOST(0, 7, 0, 7),
     1, {"/job:ps/task:1", 2, 7, 0, 7}},
    {"one worker's step failed twice, nothing lost", STEP0 FAILED(1, "/job:ps/task:0") FAILED(1, "/job:ps/task:0")
         "worker1: worker 1: step 25, global step 24, loss 0.5 (200.0 images/sec, 26.2 MB moved per step)\n",
     1, {"/job:ps/task:0", 1, -1, -1, -1}},
    {"no newline at the end", FAILED(0, "/job:ps/task:2") "worker0: worker 0: global step 40 -> 30: 10 steps lost "
                                                          "since the last checkpoint",
     1, {"/job:ps/task:2", 1, 40, 30, 10}},
};

static void check_log(int i)
{
    fault_report got = {"untouched", -7, -7, -7, -7};
    int rc = my_read_fault_log(logs[i].log, &got);
    if (rc == -1 && got.workers_affected == -7)
        fail("not implemented yet (my_read_fault_log returned -1 for %s)", logs[i].name);
    if (rc != logs[i].found)
        fail("for %s my_read_fault_log returned %d, not %d", logs[i].name, rc, logs[i].found);
    if (rc == 0) {
        if (strcmp(got.lost_task, "untouched") != 0 || got.workers_affected != -7)
            fail("for %s, a log with no failure, *out was changed", logs[i].name);
        return;
    }
    const fault_report *w = &logs[i].want;
    if (strcmp(got.lost_task, w->lost_task) != 0 || got.workers_affected != w->workers_affected)
        fail("for %s: %s was lost and %d worker(s) noticed; you said %s and %d", logs[i].name, w->lost_task,
             w->workers_affected, got.lost_task, got.workers_affected);
    if (got.died_at != w->died_at || got.restored_to != w->restored_to || got.steps_lost != w->steps_lost)
        fail("for %s: the chief went from global step %ld back to %ld, %ld steps lost; you said %ld -> %ld, %ld",
             logs[i].name, w->died_at, w->restored_to, w->steps_lost, got.died_at, got.restored_to, got.steps_lost);
}

int main(void)
{
    check_start("fault-log", "labs/04-synchronous-training/exercises/fault_log.c");
    for (int i = 0; i < (int)(sizeof logs / sizeof logs[0]); i++)
        check_log(i);
    pass();
}
