/* test_sync_two_ps.c: synchronous training (fl_sync_replicas_optimizer)
 * with the variables on two ps tasks, w on ps 0 and b on ps 1
 * (sync_cluster.h): a worker held between reading its step and applying its
 * gradients finds them dropped by both ps tasks. It counts its step stale
 * once, however many ps tasks dropped a gradient of it, and 2 variable
 * updates; each ps counts what it dropped itself: 1 step of that worker and
 * 1 variable update. The variables took the chief's updates alone. */
#include <math.h>
#include <stdlib.h>

#include "sync_cluster.h"

/* A variable's first value, read by worker k; NAN when the read fails. */
static double first_value(worker *k, fl_node *variable)
{
    fl_tensor *out = NULL;
    double v = fl_session_run(k->s, NULL, 0, &variable, 1, &out, NULL, 0) == 0 ? ((const float *)out->data)[0] : NAN;
    fl_tensor_free(out);
    return v;
}

/* Each ps's own count of the stale steps and variable updates it dropped. */
static void check_ps_counts(cluster *c)
{
    for (int p = 0; p < c->ps_tasks; p++) {
        fl_server_stats st = {0};
        fl_server_get_stats(c->ps[p], &st);
        ok(st.stale_steps == 1 && st.stale_variable_updates == 1, "ps %d counts its own drop: worker 1's step once, "
           "1 variable update (%llu steps, %llu variable updates)", p, (unsigned long long)st.stale_steps,
           (unsigned long long)st.stale_variable_updates);
    }
}

/* 1 of 2: worker 1 reads global step 0, then is held while the chief runs
 * 3 steps alone; its gradients of step 0 come too late for w on ps 0 and
 * for b on ps 1. */
static void test_stale_on_both_ps(void)
{
    cluster c;
    setup how = {.workers = 2, .replicas = 1, .held = 1, .async_task = -1, .ps_tasks = 2};
    if (!started(&c, &how, "2 ps tasks and 2 workers (1 of 2)"))
        return;
    hold_worker_1(&c, 3);
    uint64_t steps = fl_remote_stale_steps(c.w[1].cluster), updates = fl_remote_stale_variable_updates(c.w[1].cluster);
    ok(steps == 1 && updates == 2, "worker 1 counts its step stale once though two ps tasks dropped it, and both "
       "variables' gradients (%llu steps, %llu variable updates)", (unsigned long long)steps,
       (unsigned long long)updates);
    ok(fl_remote_stale_steps(c.w[0].cluster) == 0 && fl_remote_stale_variable_updates(c.w[0].cluster) == 0,
       "the chief lost none");
    check_ps_counts(&c);
    int now = global_step_now(&c.w[0]);
    ok(now == 3, "the global step counts the chief's 3 steps only (%d)", now);
    /* SGD at 0.1 on (x - target)^2 moves x to target + 0.8^n (x0 - target):
     * only the chief's 3 gradients were applied, on either ps. */
    is_near(first_value(&c.w[1], c.w[1].w), 3 - 2 * pow(0.8, 3), 1e-5, "w[0] on ps 0 took the chief's 3 updates alone");
    is_near(first_value(&c.w[1], c.w[1].b), 3 - 3 * pow(0.8, 3), 1e-5, "b on ps 1 took the chief's 3 updates alone");
    down(&c, 2);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "30", 1);
    test_stale_on_both_ps();
    return done_testing();
}
