/* test_recv_executor.c: Send and Recv as nodes of the one executor, on a
 * task's rendezvous device (src/distributed_runtime/partition/backend_rendezvous.c),
 * without sockets: a Send puts its value straight into the peer's
 * rendezvous. Two tasks on two threads whose graphs would deadlock an
 * executor that blocked on one Recv (task 1 reads A before it can send B,
 * and task 0 makes A from B) finish; a warm step allocates no device buffer,
 * and no host memory but the value fetched (alloc_count.h);
 * a Recv that never comes fails the run at the deadline naming the key and
 * its task, and a node with that Recv as control input has not run; a
 * cancelled client and an aborted step end the wait with ABORTED. */
#include "alloc_count.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "distributed_runtime/partition/rendezvous_device.h"
#include "session_access.h"
#include "tap.h"

#define TASK0 "/job:worker/task:0"
#define TASK1 "/job:worker/task:1"

typedef struct {
    fl_graph *g;
    fl_session *s;
    fl_rendezvous *r;
    fl_rendezvous_device *device;
    fl_node *fetch, *targets[4];
    int ntargets;
    float got;
    int rc;
    uint64_t step;
    char error[512];
    atomic_bool cancelled;
} task;

static task tasks[2];

/* A Send's value into the peer task's rendezvous, as SEND_TENSOR would. */
static int deliver(void *user, const char *to_task, uint64_t step, const char *key, const fl_tensor *value)
{
    (void)user;
    task *peer = &tasks[strcmp(to_task, TASK1) == 0];
    fl_rendezvous_held held;
    return fl_rendezvous_put(peer->r, NULL, step, key, value, &held) == FL_RENDEZVOUS_KEPT ? 0 : -1;
}

static void open_task(task *t, fl_graph *g)
{
    memset(t, 0, sizeof *t);
    t->g = g;
    t->r = fl_rendezvous_new();
    t->device = fl_rendezvous_device_new(t->r);
    t->s = fl_session_new(g, NULL);
    fl_session_set_rendezvous(t->s, fl_rendezvous_device_of(t->device));
}

static void close_task(task *t)
{
    fl_session_free(t->s);
    fl_rendezvous_device_free(t->device);
    fl_rendezvous_free(t->r);
    fl_graph_free(t->g);
}

static void *run_step(void *arg)
{
    task *t = arg;
    const char *name = t == &tasks[0] ? TASK0 : TASK1;
    fl_rendezvous_step step = {.step_id = t->step, .log_prefix = name, .cancelled = &t->cancelled,
                               .send = deliver};
    fl_rendezvous_device_begin_step(t->device, &step);
    fl_tensor *out = NULL;
    t->rc = fl_session_run(t->s, NULL, 0, t->fetch ? &t->fetch : NULL, t->fetch ? 1 : 0, t->fetch ? &out : NULL,
                           t->targets, t->ntargets);
    t->got = out ? fl_tensor_scalar(out) : -1;
    snprintf(t->error, sizeof t->error, "%s", t->rc ? fl_session_error(t->s) : "");
    fl_tensor_free(out);
    fl_rendezvous_finish(t->r, t->step);
    return NULL;
}

/* Task 0: sends C = 3, receives B, sends A = 2 * B. Task 1: receives A and
 * C; reads A (its older node) before it computes B = C + 1 from C. */
static void build_crossing_tasks(void)
{
    fl_graph *g0 = fl_graph_new(), *g1 = fl_graph_new();
    open_task(&tasks[0], g0);
    open_task(&tasks[1], g1);
    fl_node *c = fl_scalar(g0, 3.0f, "c");
    fl_node *b0 = fl_recv(g0, FL_FLOAT32, fl_shape_make(0), "B", TASK1, "recv_b");
    fl_node *a = fl_mul(g0, b0, fl_scalar(g0, 2.0f, "two"), "a");
    tasks[0].targets[0] = fl_send(g0, c, "C", TASK1, "send_c");
    tasks[0].targets[1] = fl_send(g0, a, "A", TASK1, "send_a");
    tasks[0].ntargets = 2;
    fl_node *a1 = fl_recv(g1, FL_FLOAT32, fl_shape_make(0), "A", TASK0, "recv_a");
    fl_node *c1 = fl_recv(g1, FL_FLOAT32, fl_shape_make(0), "C", TASK0, "recv_c");
    tasks[1].fetch = fl_mul(g1, a1, fl_scalar(g1, 2.0f, "two"), "uses_a"); /* older than B's node */
    fl_node *b = fl_add(g1, c1, fl_scalar(g1, 1.0f, "one"), "b");
    tasks[1].targets[0] = fl_send(g1, b, "B", TASK0, "send_b");
    tasks[1].ntargets = 1;
    ok(!fl_graph_failed(g0) && !fl_graph_failed(g1), "the two tasks' graphs build (%s)",
       fl_graph_failed(g0) ? fl_graph_error(g0) : fl_graph_failed(g1) ? fl_graph_error(g1) : "no error");
}

static void run_both(uint64_t step)
{
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) {
        tasks[i].step = step;
        pthread_create(&threads[i], NULL, run_step, &tasks[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
}

static uint64_t allocations(void)
{
    return fl_host_device()->allocations + fl_rendezvous_device_of(tasks[0].device)->allocations +
           fl_rendezvous_device_of(tasks[1].device)->allocations;
}

static void test_crossing_tasks(void)
{
    build_crossing_tasks();
    run_both(1);
    ok(tasks[0].rc == 0 && tasks[1].rc == 0, "a step where task 1 reads A before it sends B finishes (%s%s)",
       tasks[0].error, tasks[1].error);
    ok(tasks[1].got == 16.0f, "task 1 gets 2 * A = 2 * 2 * (3 + 1) = 16 (got %g)", tasks[1].got);
    run_both(2);
    uint64_t before = allocations();
    alloc_count_start();
    run_both(3);
    unsigned long long blocks = alloc_count_stop();
    ok(tasks[0].rc == 0 && tasks[1].rc == 0 && tasks[1].got == 16.0f, "a third step gives 16 again (%s%s)",
       tasks[0].error, tasks[1].error);
    ok(allocations() == before, "a warm step allocates no device buffer on either task (%llu more)",
       (unsigned long long)(allocations() - before));
    ok(blocks == 2, "and no host memory on either task but task 1's fetched value, its tensor and its data: "
       "the values sent, their keys and entries reuse the last step's (%llu blocks, want 2)", blocks);
    for (int i = 0; i < 2; i++) {
        ok(fl_rendezvous_count(tasks[i].r) == 0, "task %d's rendezvous holds nothing after the steps", i);
        close_task(&tasks[i]);
    }
}

/* Task 1 alone: a token from task 0 that never comes orders an Assign. */
static void build_waiting_task(fl_node **var)
{
    fl_graph *g = fl_graph_new();
    open_task(&tasks[1], g);
    *var = fl_get_variable(g, "v", fl_shape_make(0), fl_constant_initializer(1.0f));
    fl_node *token = fl_recv(g, FL_FLOAT32, fl_shape_make(0), "^token", TASK0, "recv_token");
    fl_control_dependencies_push(g, &token, 1);
    tasks[1].targets[0] = fl_assign(g, *var, fl_scalar(g, 5.0f, "five"), "set_v");
    fl_control_dependencies_pop(g);
    tasks[1].ntargets = 1;
    fl_node *init = fl_global_variables_initializer(g);
    ok(fl_session_run(tasks[1].s, NULL, 0, NULL, 0, NULL, &init, 1) == 0, "the waiting task's variable starts at 1");
}

static void test_deadline_and_control(void)
{
    fl_node *var;
    setenv("FLOWLAB_TASK_DEADLINE", "1", 1);
    build_waiting_task(&var);
    tasks[1].step = 7;
    run_step(&tasks[1]);
    ok(tasks[1].rc != 0 && fl_session_error_code(tasks[1].s) == FL_DEADLINE_EXCEEDED,
       "a Recv that never comes fails the run at the deadline, DEADLINE_EXCEEDED (%s)", tasks[1].error);
    ok(strstr(tasks[1].error, "^token") && strstr(tasks[1].error, TASK0),
       "the message names the key and the task it waits for: %s", tasks[1].error);
    fl_tensor *v = NULL;
    fl_session_run(tasks[1].s, NULL, 0, &var, 1, &v, NULL, 0);
    ok(v && fl_tensor_scalar(v) == 1.0f, "the Assign that waits on the token as a control input did not run "
       "(v is %g)", v ? fl_tensor_scalar(v) : -1.0f);
    fl_tensor_free(v);
    unsetenv("FLOWLAB_TASK_DEADLINE");
    atomic_store(&tasks[1].cancelled, true);
    tasks[1].step = 8;
    run_step(&tasks[1]);
    ok(tasks[1].rc != 0 && fl_session_error_code(tasks[1].s) == FL_ABORTED && strstr(tasks[1].error, "cancelled"),
       "a cancelled client ends the wait, ABORTED (%s)", tasks[1].error);
    atomic_store(&tasks[1].cancelled, false);
    fl_rendezvous_abort(tasks[1].r, 9);
    tasks[1].step = 9;
    run_step(&tasks[1]);
    ok(tasks[1].rc != 0 && fl_session_error_code(tasks[1].s) == FL_ABORTED && strstr(tasks[1].error, "aborted"),
       "an aborted step ends the wait, ABORTED (%s)", tasks[1].error);
    close_task(&tasks[1]);
}

static void test_refused_without_rendezvous(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *r = fl_recv(g, FL_FLOAT32, fl_shape_make(0), "x", TASK0, "recv_x");
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, NULL, 0, &r, 1, &out, NULL, 0) != 0 && strstr(fl_session_error(s), "recv_x"),
       "a session that is no task's partition refuses a Recv, naming it (%s)", fl_session_error(s));
    fl_session_free(s);
    fl_graph_free(g);
}

int main(void)
{
    /* The devices are found here, on the main thread, as fl_server_start
     * does: PoCL's LLVM gives the thread that first loads it a signal stack
     * of its own, which AddressSanitizer cannot unmap when that task thread
     * ends (it stopped this test with "unable to unmap" under make test SANITIZE=1). */
    fl_accelerator_count();
    test_crossing_tasks();
    test_deadline_and_control();
    test_refused_without_rendezvous();
    return done_testing();
}
