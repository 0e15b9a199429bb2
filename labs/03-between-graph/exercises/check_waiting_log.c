/* check_waiting_log.c: checks my_longest_wait (exercise waiting-log) on
 * worker logs written as the connect code writes them: no wait, one ps task,
 * two, a task never reached, lines prefixed by the launcher, a tie. */
#include "exercises.h"
#include "../../common/check.h"

#define W1 "worker 1: waiting for "
#define R1 "worker 1: reached "
#define REFUSED " s (Connection refused)\n"
#define START "worker 1: 2 ps tasks, device /job:worker/task:1/cpu:0\n"
#define STEP "worker 1: Step 10 with loss 2.301 (global step 20, 512 images/sec)\n"

static const struct {
    const char *name, *log;
    int waited; /* what my_longest_wait returns */
    wait_report want;
} logs[] = {
    {"a worker that waited for no one", START STEP, 0, {"", 0, false}},
    {"an empty log", "", 0, {"", 0, false}},
    {"one ps task, 12 s", START W1 "/job:ps/task:1 at 127.0.0.1:2223 for 5" REFUSED
         W1 "/job:ps/task:1 at 127.0.0.1:2223 for 10" REFUSED R1 "/job:ps/task:1 at 127.0.0.1:2223 after 12 s\n" STEP,
     1, {"/job:ps/task:1", 12, true}},
    {"two ps tasks, the second one longer", START W1 "/job:ps/task:0 at 10.0.0.1:2222 for 5" REFUSED
         R1 "/job:ps/task:0 at 10.0.0.1:2222 after 7 s\n" W1 "/job:ps/task:1 at 10.0.0.2:2222 for 5" REFUSED
         W1 "/job:ps/task:1 at 10.0.0.2:2222 for 10" REFUSED W1 "/job:ps/task:1 at 10.0.0.2:2222 for 15" REFUSED
         R1 "/job:ps/task:1 at 10.0.0.2:2222 after 16 s\n" STEP,
     1, {"/job:ps/task:1", 16, true}},
    {"two ps tasks, the first one longer", W1 "/job:ps/task:0 at 10.0.0.1:2222 for 5" REFUSED
         W1 "/job:ps/task:0 at 10.0.0.1:2222 for 10" REFUSED R1 "/job:ps/task:0 at 10.0.0.1:2222 after 11 s\n"
         W1 "/job:ps/task:1 at 10.0.0.2:2222 for 5" REFUSED R1 "/job:ps/task:1 at 10.0.0.2:2222 after 6 s\n",
     1, {"/job:ps/task:0", 11, true}},
    {"a ps task never reached", START R1 "/job:ps/task:0 at 127.0.0.1:2222 after 5 s\n"
         W1 "/job:ps/task:1 at 127.0.0.1:2223 for 5" REFUSED W1 "/job:ps/task:1 at 127.0.0.1:2223 for 10" REFUSED
         W1 "/job:ps/task:1 at 127.0.0.1:2223 for 15" REFUSED W1 "/job:ps/task:1 at 127.0.0.1:2223 for 20" REFUSED
         "worker 1: /job:ps/task:1 at 127.0.0.1:2223 did not answer for 20 s (Connection refused)\n",
     1, {"/job:ps/task:1", 20, false}},
    {"lines the launcher prefixed, no newline at the end", "[worker 0] " START
         "[worker 0] worker 0: waiting for /job:ps/task:2 at h3:2222 for 6 s (No route to host)\n"
         "[worker 0] worker 0: reached /job:ps/task:2 at h3:2222 after 9 s\n[worker 0] " STEP
         "[worker 0] worker 0: waiting for /job:ps/task:0 at h1:2222 for 15 s (Connection refused)",
     1, {"/job:ps/task:0", 15, false}},
    {"a tie (the task named first wins)", R1 "/job:ps/task:1 at h2:2222 after 5 s\n"
         R1 "/job:ps/task:0 at h1:2222 after 5 s\n",
     1, {"/job:ps/task:1", 5, true}},
};

static void check_log(int i)
{
    wait_report got = {"untouched", -7, false};
    int rc = my_longest_wait(logs[i].log, &got);
    if (rc == -1 && got.seconds == -7)
        fail("not implemented yet (my_longest_wait returned -1 for %s)", logs[i].name);
    if (rc != logs[i].waited)
        fail("for %s my_longest_wait returned %d, not %d", logs[i].name, rc, logs[i].waited);
    if (rc == 0) {
        if (strcmp(got.task, "untouched") != 0 || got.seconds != -7)
            fail("for %s, a log with no wait, *out was changed (task '%s', %g s)", logs[i].name, got.task,
                 got.seconds);
        return;
    }
    const wait_report *want = &logs[i].want;
    if (strcmp(got.task, want->task) != 0 || got.seconds != want->seconds || got.reached != want->reached)
        fail("for %s: the longest wait is for %s, %g s, %s; you said %s, %g s, %s", logs[i].name, want->task,
             want->seconds, want->reached ? "reached" : "never reached", got.task, got.seconds,
             got.reached ? "reached" : "never reached");
}

int main(void)
{
    check_start("waiting-log", "labs/03-between-graph/exercises/waiting_log.c");
    for (int i = 0; i < (int)(sizeof logs / sizeof logs[0]); i++)
        check_log(i);
    pass();
}
