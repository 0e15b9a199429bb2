/* test_accumulator_ops.c: the accumulator ops run by a task's partitions
 * (ops_accumulator.c, their kernels on the rendezvous device:
 * rendezvous_accumulators.c), two sessions on two threads sharing one
 * container and rendezvous as two workers' pieces on one ps do. A take
 * built before its own partition's apply does not hold the executor (the
 * apply still runs) and returns the average once the other worker's
 * gradient comes; a stale apply is dropped and counted; a take with too
 * few gradients fails at the task deadline naming the accumulator; an
 * apply whose gradient shape differs from the accumulator's names its op;
 * a worker blocked in AccumulatorWaitStep ends OUT_OF_RANGE as soon as the
 * chief closes the token, a wait after the close at once, and a chief that
 * sets the step again reopens it; a take or a wait whose step is aborted
 * ends at once, ABORTED. */
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accumulator.h"
#include "distributed_runtime/partition/rendezvous_device.h"
#include "session_access.h"
#include "tap.h"


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
    fl_rendezvous_step step = {.step_id = p->step_id, .log_prefix = "ps 0"};
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

/* One op of the sync token's on its own session (a worker's or the
 * chief's piece on the ps): a wait fetched, or a close or set-step run. */
typedef struct {
    fl_graph *g;
    fl_session *s;
    fl_rendezvous_device *device;
    fl_node *op;
    uint64_t step_id;
    FILE *log;
    int rc;
    fl_error_code code;
    int32_t got;
    double ended_at;
    char error[512];
} token_piece;

static void open_token_piece(token_piece *p, fl_op_kind op, int32_t value, uint64_t step_id)
{
    memset(p, 0, sizeof *p);
    p->g = fl_graph_new();
    p->step_id = step_id;
    fl_node *v = fl_int_scalar(p->g, value, "value");
    if (op == FL_OP_ACCUMULATOR_WAIT_STEP)
        p->op = fl_accumulator_wait_step(p->g, "sync_token", fl_shape_make(0), v, "wait_for_next_step");
    else if (op == FL_OP_ACCUMULATOR_CLOSE)
        p->op = fl_accumulator_close(p->g, "sync_token", fl_shape_make(0), v, "close_sync_token");
    else
        p->op = fl_accumulator_set_global_step(p->g, "sync_token", fl_shape_make(0), v, "set_sync_token");
    p->device = fl_rendezvous_device_new(rendezvous);
    fl_rendezvous_device_set_container(p->device, container);
    p->s = fl_session_new(p->g, NULL);
    fl_session_set_variable_container(p->s, container);
    fl_session_set_rendezvous(p->s, fl_rendezvous_device_of(p->device));
}

static void *run_token_piece(void *arg)
{
    token_piece *p = arg;
    fl_rendezvous_step step = {.step_id = p->step_id, .log = p->log, .log_prefix = "ps 0"};
    fl_rendezvous_device_begin_step(p->device, &step);
    bool fetch = p->op->op == FL_OP_ACCUMULATOR_WAIT_STEP;
    fl_tensor *out = NULL;
    p->rc = fl_session_run(p->s, NULL, 0, fetch ? &p->op : NULL, fetch, fetch ? &out : NULL, fetch ? NULL : &p->op,
                           !fetch);
    p->ended_at = fl_now_s();
    p->code = fl_session_error_code(p->s);
    p->got = out ? *(const int32_t *)out->data : -1;
    snprintf(p->error, sizeof p->error, "%s", p->rc ? fl_session_error(p->s) : "");
    fl_tensor_free(out);
    fl_rendezvous_finish(rendezvous, p->step_id);
    return NULL;
}

static void free_token_piece(token_piece *p)
{
    fl_session_free(p->s);
    fl_rendezvous_device_free(p->device);
    fl_graph_free(p->g);
}

/* Whether the file at path says the step waits, within 60 s: the device
 * writes its line after 5 s of waiting. */
static bool wait_for_line(const char *path, const char *want)
{
    char text[4096];
    for (double until = fl_now_s() + 60; fl_now_s() < until;) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f)
            fclose(f);
        text[n] = 0;
        if (strstr(text, want))
            return true;
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
    return false;
}

static void test_closed_token(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "60", 1); /* only the close may end the wait */
    char path[] = "/tmp/test_accumulator_ops_XXXXXX";
    int fd = mkstemp(path);
    token_piece waiter, closer, later, set;
    open_token_piece(&waiter, FL_OP_ACCUMULATOR_WAIT_STEP, 6, 10);
    waiter.log = fd >= 0 ? fdopen(fd, "w") : NULL;
    pthread_t t;
    pthread_create(&t, NULL, run_token_piece, &waiter);
    ok(waiter.log && wait_for_line(path, "waiting for accumulator sync_token's global step to pass 6"),
       "a worker's wait for step 7 blocks (its step says so in %s)", path);
    open_token_piece(&closer, FL_OP_ACCUMULATOR_CLOSE, 6, 11);
    double closing = fl_now_s();
    run_token_piece(&closer);
    pthread_join(t, NULL);
    ok(closer.rc == 0, "the chief's close runs%s%s", closer.rc ? ": " : "", closer.error);
    ok(waiter.rc != 0 && waiter.code == FL_OUT_OF_RANGE, "the blocked wait then fails OUT_OF_RANGE (rc %d, %s)",
       waiter.rc, fl_error_code_name(waiter.code));
    ok(waiter.ended_at - closing < 5, "within 5 s of the close, not at the deadline (%.2f s)",
       waiter.ended_at - closing);
    contains(waiter.error, "the chief stopped training at global step 6", "its error says why");
    open_token_piece(&later, FL_OP_ACCUMULATOR_WAIT_STEP, 6, 12);
    run_token_piece(&later);
    ok(later.code == FL_OUT_OF_RANGE, "a wait after the close fails OUT_OF_RANGE at once (%s)",
       fl_error_code_name(later.code));
    open_token_piece(&set, FL_OP_ACCUMULATOR_SET_GLOBAL_STEP, 7, 13);
    run_token_piece(&set);
    fl_accumulator_state now = fl_accumulator_read(fl_accumulator_find(fl_variable_container_accumulators(container),
                                                                       "sync_token", fl_shape_make(0)));
    ok(set.rc == 0 && !now.closed && now.global_step == 7, "a chief that trains again sets the step to 7 and "
       "reopens the token (step %lld, %s)", (long long)now.global_step, now.closed ? "closed" : "open");
    if (waiter.log)
        fclose(waiter.log);
    unlink(path);
    token_piece *all[] = {&waiter, &closer, &later, &set};
    for (int i = 0; i < 4; i++)
        free_token_piece(all[i]);
}

/* ABORT_STEP ends a take's or a wait's step as it ends a Recv's: a take in a
 * step already aborted (the abort came before the run) fails at once, and a
 * wait blocked on the token fails as soon as its step is aborted, ABORTED
 * both, not at the task deadline. The accumulators know nothing of steps;
 * the rendezvous does. */
static void test_aborted_steps(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "60", 1); /* only the abort may end the waits */
    piece taker;
    open_piece(&taker, 2, 2);
    taker.step_id = 20;
    fl_rendezvous_abort(rendezvous, taker.step_id);
    double start = fl_now_s();
    run_piece(&taker);
    ok(taker.rc != 0 && fl_session_error_code(taker.s) == FL_ABORTED && fl_now_s() - start < 5,
       "a take in a step aborted before it ran ends at once, ABORTED (%.2f s: %s)", fl_now_s() - start,
       taker.error);
    close_piece(&taker);
    char path[] = "/tmp/test_accumulator_ops_XXXXXX";
    int fd = mkstemp(path);
    token_piece waiter;
    open_token_piece(&waiter, FL_OP_ACCUMULATOR_WAIT_STEP, 9, 21);
    waiter.log = fd >= 0 ? fdopen(fd, "w") : NULL;
    pthread_t t;
    pthread_create(&t, NULL, run_token_piece, &waiter);
    bool waiting = waiter.log && wait_for_line(path, "waiting for accumulator sync_token's global step to pass 9");
    double aborting = fl_now_s();
    fl_rendezvous_abort(rendezvous, waiter.step_id);
    pthread_join(t, NULL);
    ok(waiting && waiter.code == FL_ABORTED && waiter.ended_at - aborting < 5, "a wait blocked on the token ends "
       "within 5 s of its step's abort, ABORTED (%.2f s: %s)", waiter.ended_at - aborting, waiter.error);
    if (waiter.log)
        fclose(waiter.log);
    unlink(path);
    free_token_piece(&waiter);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "1", 1); /* the too-few take's wait; the others end on arrivals */
    rendezvous = fl_rendezvous_new();
    container = fl_variable_container_new();
    test_two_workers();
    test_wrong_shape();
    test_closed_token();
    test_aborted_steps();
    fl_variable_container_free(container);
    fl_rendezvous_free(rendezvous);
    return done_testing();
}
