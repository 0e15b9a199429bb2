/* test_stale_counts.c: stale synchronous updates (chapter 4) are counted in
 * the user's two units, steps and variable updates, on the worker and on
 * each ps. Two ps tasks (a, b on ps 0; c on ps 1) and two workers, each its
 * own cluster, in this process on free loopback ports. With one replica per
 * step, worker 0 completes steps 0-2 of a, b and c; worker 1 then sends
 * steps 0 and 1, every update of which is stale, then step 3, which is not.
 * Known counts: worker 1 dropped 2 steps and 6 variable updates (a step
 * counts once, though two ps tasks dropped its updates); worker 0 none; ps 0
 * dropped 2 steps and 4 updates, ps 1 2 steps and 2 updates. */
#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "distributed_runtime/ps/cluster_state.h"
#include "loopback.h"

#define NUM_VARIABLES 3
static const char *variable[NUM_VARIABLES] = {"a", "b", "c"};
static const int variable_ps[NUM_VARIABLES] = {0, 0, 1};

typedef struct {
    fl_cluster *ps_spec[2], *worker[2];
    fl_server *ps[2];
    fl_task_client *client[2][2]; /* [worker][ps]: the worker's connection to the ps */
} two_by_two;

static bool start(two_by_two *t)
{
    char ps_hosts[64], worker_hosts[64];
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d,127.0.0.1:%d", loopback_free_port(), loopback_free_port());
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d,127.0.0.1:%d", loopback_free_port(),
             loopback_free_port());
    bool started = true;
    for (int i = 0; i < 2; i++) {
        t->ps_spec[i] = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", i);
        t->worker[i] = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", i);
        t->ps[i] = t->ps_spec[i] ? fl_server_start(t->ps_spec[i], NULL) : NULL;
        started &= t->ps[i] != NULL;
    }
    for (int w = 0; started && w < 2; w++)
        for (int p = 0; p < 2; p++) {
            t->client[w][p] = fl_cluster_client(t->worker[w], "ps", p);
            started &= t->client[w][p] != NULL;
        }
    return ok(started, "two ps tasks and two workers' connections to both (%s)", started ? ps_hosts : fl_last_error());
}

static fl_tensor *pair_of(float value)
{
    const float v[2] = {value, value};
    return fl_tensor_from_floats(fl_shape_make(1, 2), v);
}

static bool init_variables(two_by_two *t)
{
    bool done = true;
    for (int i = 0; i < NUM_VARIABLES; i++) {
        fl_task_client *c = t->client[0][variable_ps[i]];
        fl_tensor *value = pair_of(0);
        uint32_t id = fl_task_client_init(c, variable[i], value, NULL);
        done &= id && fl_task_client_wait(c, id) == 0;
        fl_tensor_free(value);
    }
    return done;
}

/* One synchronous step of worker w (one replica per step): every variable
 * assigned for `step`, then both connections' replies waited for. */
static bool send_step(two_by_two *t, int w, uint64_t step)
{
    fl_wire_sync sync = {step, 1};
    uint32_t last[2] = {0, 0};
    fl_tensor *value = pair_of((float)step);
    for (int i = 0; i < NUM_VARIABLES; i++) {
        int p = variable_ps[i];
        last[p] = fl_task_client_sync_assignment(t->client[w][p], FL_WIRE_SYNC_ASSIGN, &sync, variable[i], value);
    }
    fl_tensor_free(value);
    bool done = true;
    for (int p = 0; p < 2; p++)
        done &= last[p] && fl_task_client_wait(t->client[w][p], last[p]) == 0;
    return done;
}

static void check_worker(const two_by_two *t, int w, uint64_t steps, uint64_t updates)
{
    uint64_t got_steps = fl_remote_stale_steps(t->worker[w]);
    uint64_t got_updates = fl_remote_stale_variable_updates(t->worker[w]);
    ok(got_steps == steps && got_updates == updates, "worker %d: %llu stale steps, %llu stale variable updates "
       "(got %llu, %llu)", w, (unsigned long long)steps, (unsigned long long)updates,
       (unsigned long long)got_steps, (unsigned long long)got_updates);
}

static void check_ps(const two_by_two *t, int p, uint64_t steps, uint64_t updates)
{
    fl_server_stats stats;
    fl_server_get_stats(t->ps[p], &stats);
    ok(stats.stale_steps == steps && stats.stale_variable_updates == updates,
       "ps %d: %llu stale steps, %llu stale variable updates (got %llu, %llu)", p, (unsigned long long)steps,
       (unsigned long long)updates, (unsigned long long)stats.stale_steps,
       (unsigned long long)stats.stale_variable_updates);
}

static void test_counts(two_by_two *t)
{
    ok(init_variables(t), "worker 0 sets a, b and c");
    bool sent = true;
    for (uint64_t step = 0; step < 3; step++)
        sent &= send_step(t, 0, step);
    ok(sent, "worker 0 completes steps 0, 1 and 2 alone (one replica per step)");
    check_worker(t, 0, 0, 0);
    sent = send_step(t, 1, 0) && send_step(t, 1, 1);
    ok(sent, "worker 1 sends steps 0 and 1, late");
    check_worker(t, 1, 2, 2 * NUM_VARIABLES);
    ok(send_step(t, 1, 3), "worker 1 sends step 3, in time");
    check_worker(t, 1, 2, 2 * NUM_VARIABLES);
    check_ps(t, 0, 2, 4);
    check_ps(t, 1, 2, 2);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "20", 1);
    two_by_two t = {0};
    if (start(&t))
        test_counts(&t);
    for (int i = 0; i < 2; i++)
        if (t.worker[i])
            fl_cluster_say_goodbye(t.worker[i]); /* so the ps tasks log no worker lost */
    for (int i = 0; i < 2; i++) {
        fl_cluster_free(t.worker[i]);
        fl_server_stop(t.ps[i]);
        fl_cluster_free(t.ps_spec[i]);
    }
    return done_testing();
}
