/* test_accumulator_ops.c: the accumulator ops run by a task's partitions
 * (ops_accumulator.c, their kernels on the rendezvous device:
 * rendezvous_accumulators.c), two sessions on two threads sharing one
 * container and rendezvous as two workers' pieces on one ps do. A take
 * built before its own partition's apply does not hold the executor (the
 * apply still runs) and returns the average once the other worker's
 * gradient comes; a stale apply is dropped and counted; a take with too
 * few gradients fails at the task deadline naming the accumulator; an
 * apply whose gradient shape differs from the accumulator's names its op. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "accumulator.h"
#include "distributed_runtime/partition/rendezvous_device.h"
#include "session_access.h"
#include "tap.h"

#define TASK "/job:ps/task:0"

typedef struct {
    fl_graph *g;
    fl_session *s;
    fl_rendezvous_device *device;
    fl_node *step, *grad, *fetch, *target;
    float step_value, grad_value[3];
    float got[2];
    int rc;
    uint64_t step_id;
    char error[512];
} piece;

static fl_rendezvous *rendezvous;
static fl_variable_container *container;

/* A piece with a placeholder step and gradient of dims and an apply to acc
 * w; with num_required > 0, a take of w built first and fetched. */
static void open_piece(piece *p, int dims, int num_required)
{
    memset(p, 0, sizeof *p);
    p->g = fl_graph_new();
    fl_node *take = NULL;
    if (num_required > 0)
        take = fl_accumulator_take_gradient(p->g, "acc_w", fl_shape_make(1, dims),
                                            fl_int_scalar(p->g, num_required, "num_required"), "take_w");
    p->step = fl_placeholder(p->g, FL_INT32, fl_shape_make(0), "local_step");
    p->grad = fl_placeholder(p->g, FL_FLOAT32, fl_shape_make(1, dims), "grad_w");
    p->target = fl_accumulator_apply_gradient(p->g, "acc_w", p->step, p->grad, "apply_w");
    p->fetch = take;
    p->device = fl_rendezvous_device_new(rendezvous);
    fl_rendezvous_device_set_container(p->device, container);
    p->s = fl_session_new(p->g, NULL);
    fl_session_set_variable_container(p->s, container);
    fl_session_set_rendezvous(p->s, fl_rendezvous_device_of(p->device));
}

static void close_piece(piece *p)
{
    fl_session_free(p->s);
    fl_rendezvous_device_free(p->device);
    fl_graph_free(p->g);
}

static void *run_piece(void *arg)
{
    piece *p = arg;
    fl_rendezvous_step step = {.step_id = p->step_id, .task = TASK, .log_prefix = "ps 0"};
    fl_rendezvous_device_begin_step(p->device, &step);
    int32_t local = (int32_t)p->step_value;
    fl_tensor st = {.dtype = FL_INT32, .shape = fl_shape_make(0), .data = &local};
    fl_tensor gr = {.dtype = FL_FLOAT32, .shape = p->grad->shape, .data = p->grad_value};
    fl_feed feeds[2] = {{p->step, &st}, {p->grad, &gr}};
    fl_tensor *out = NULL;
    p->rc = fl_session_run(p->s, feeds, 2, p->fetch ? &p->fetch : NULL, p->fetch ? 1 : 0, p->fetch ? &out : NULL,
                           &p->target, 1);
    if (out)
        memcpy(p->got, out->data, sizeof p->got);
    snprintf(p->error, sizeof p->error, "%s", p->rc ? fl_session_error(p->s) : "");
    fl_tensor_free(out);
    fl_rendezvous_finish(rendezvous, p->step_id);
    return NULL;
}

static void run_both(piece *a, piece *b)
{
    pthread_t ta, tb;
    pthread_create(&ta, NULL, run_piece, a);
    pthread_create(&tb, NULL, run_piece, b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
}

static void test_two_workers(void)
{
    piece chief, other;
    open_piece(&chief, 2, 2);
    open_piece(&other, 2, 0);
    chief.step_id = 1, other.step_id = 2;
    chief.grad_value[0] = 1, chief.grad_value[1] = 2;
    other.grad_value[0] = 3, other.grad_value[1] = 6;
    run_both(&chief, &other);
    ok(chief.rc == 0 && other.rc == 0, "a take of 2 and two applies on two threads finish%s%s%s",
       chief.rc || other.rc ? ": " : "", chief.error, other.error);
    ok(chief.got[0] == 2 && chief.got[1] == 4, "the take gives their average [2 4] (got [%g %g]): its own "
       "partition's apply ran while it waited", chief.got[0], chief.got[1]);
    other.step_id = 3; /* a straggler of step 0: the take advanced the global step to 1 */
    run_piece(&other);
    fl_accumulator *acc = fl_accumulator_find(fl_variable_container_accumulators(container), "acc_w",
                                              fl_shape_make(1, 2));
    fl_accumulator_state now = fl_accumulator_read(acc);
    ok(other.rc == 0 && now.stale == 1 && now.accumulated == 0,
       "a step-0 gradient after the take runs, is dropped and counted (%lld stale, %d accumulated)",
       (long long)now.stale, now.accumulated);
    chief.step_id = 4; /* one gradient of step 1 (its own), too few for 2: the deadline ends the wait */
    chief.step_value = 1;
    run_piece(&chief);
    ok(chief.rc != 0, "a take of 2 with 1 gradient fails at the task deadline");
    contains(chief.error, "waiting for 2 gradients in accumulator acc_w", "its error names the accumulator and "
             "the count");
    close_piece(&chief);
    close_piece(&other);
}

static void test_wrong_shape(void)
{
    piece p;
    open_piece(&p, 3, 0);
    p.step_id = 5;
    run_piece(&p);
    ok(p.rc != 0, "an apply of a [3] gradient to acc_w, which holds [2], fails");
    contains(p.error, "apply_w", "naming the op");
    contains(p.error, "accumulator acc_w already lives on this task", "and the accumulator");
    close_piece(&p);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "1", 1); /* the too-few take's wait; the others end on arrivals */
    rendezvous = fl_rendezvous_new();
    container = fl_variable_container_new();
    test_two_workers();
    test_wrong_shape();
    fl_variable_container_free(container);
    fl_rendezvous_free(rendezvous);
    return done_testing();
}
