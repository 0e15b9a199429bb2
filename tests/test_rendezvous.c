/* test_rendezvous.c: the table where values sent task to task wait for the
 * run that needs them (src/distributed_runtime/partition/rendezvous.c), on its own: a
 * value put before or after the take arrives, a waiting take woken by
 * another thread, an abort and a deadline that end a wait with the right
 * code and a message naming the key and the sender, and values of a step
 * that is over dropped; its limits (a server's --max_waiting_value_bytes per
 * sender and --max_waiting_value_bytes_total, FLOWLAB_TASK_DEADLINE as the
 * longest a value waits) and a sender's values gone with it, but for a
 * running step's; a warm step's values reuse the memory of the last
 * step's (no host block allocated). Every wait here
 * has a deadline of a few seconds. */
#include "alloc_count.h"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "distributed_runtime/partition/rendezvous.h"
#include "tap.h"

static const fl_rendezvous_wait_options WAIT = {"/job:ps/task:0", 5, NULL, "test"};
static fl_rendezvous_held held; /* what a put says the table held */
#define CHARGE (4 + FL_RENDEZVOUS_VALUE_OVERHEAD) /* a float scalar's */

typedef struct {
    fl_rendezvous *r;
    uint64_t step;
    double delay_s;
    bool abort;
} later;

/* After a pause: puts a value for (step, "k"), or aborts the step. */
static void *act_later(void *arg)
{
    later *l = arg;
    usleep((useconds_t)(l->delay_s * 1e6));
    float v = 7;
    fl_tensor t = {.dtype = FL_FLOAT32, .shape = {0, {0}}, .data = &v};
    if (l->abort)
        fl_rendezvous_abort(l->r, l->step);
    else
        fl_rendezvous_put(l->r, NULL, l->step, "k", &t, &held);
    return NULL;
}

static int take_with(fl_rendezvous *r, uint64_t step, later *l, double *seconds, fl_tensor **out)
{
    pthread_t thread;
    pthread_create(&thread, NULL, act_later, l);
    double start = fl_now_s();
    int rc = fl_rendezvous_take(r, step, "k", &WAIT, out);
    *seconds = fl_now_s() - start;
    pthread_join(thread, NULL);
    return rc;
}

/* Two values a sender, three in all, each value at most 0.2 s. */
static void test_limits(void)
{
    fl_rendezvous *r = fl_rendezvous_new();
    fl_rendezvous_set_limits(r, 2 * CHARGE, 3 * CHARGE, 0.2);
    fl_rendezvous_sender *a = fl_rendezvous_sender_new(), *b = fl_rendezvous_sender_new();
    float v = 1;
    fl_tensor t = {.dtype = FL_FLOAT32, .shape = {0, {0}}, .data = &v}, *got = NULL;
    ok(fl_rendezvous_put(r, a, 10, "a", &t, &held) == FL_RENDEZVOUS_KEPT &&
           fl_rendezvous_put(r, a, 11, "b", &t, &held) == FL_RENDEZVOUS_KEPT,
       "a sender's two values fit in its %d bytes", 2 * CHARGE);
    fl_rendezvous_put_result put = fl_rendezvous_put(r, a, 12, "c", &t, &held);
    ok(put == FL_RENDEZVOUS_SENDER_FULL && held.sender_bytes == 2 * CHARGE && fl_rendezvous_count(r) == 2,
       "its third is refused, with the bytes it holds (%zu)", held.sender_bytes);
    ok(fl_rendezvous_put(r, b, 12, "c", &t, &held) == FL_RENDEZVOUS_KEPT, "another sender's value still fits");
    put = fl_rendezvous_put(r, b, 13, "d", &t, &held);
    ok(put == FL_RENDEZVOUS_ALL_FULL && held.all_bytes == 3 * CHARGE,
       "until all hold %d bytes (%zu)", 3 * CHARGE, held.all_bytes);
    ok(fl_rendezvous_take(r, 10, "a", &WAIT, &got) == 0 &&
           fl_rendezvous_put(r, a, 13, "d", &t, &held) == FL_RENDEZVOUS_KEPT,
       "once one is taken, room is made");
    fl_tensor_free(got);
    uint64_t running[] = {13};
    fl_rendezvous_sender_gone(r, a, running, 1);
    ok(fl_rendezvous_count(r) == 2 && fl_rendezvous_bytes(r) == 2 * CHARGE,
       "a sender gone: its value of a step not running goes, a running step's stays (%d values)",
       fl_rendezvous_count(r));
    ok(fl_rendezvous_take(r, 13, "d", &WAIT, &got) == 0, "and its run takes it");
    fl_tensor_free(got);
    fl_rendezvous_finish(r, 99);
    double start = fl_now_s();
    while (fl_rendezvous_count(r) > 0 && fl_now_s() - start < 5) {
        fl_rendezvous_put(r, b, 99, "x", &t, &held); /* dropped (step over), but looks for stale values */
        poll(NULL, 0, 20);
    }
    double waited = fl_now_s() - start;
    ok(fl_rendezvous_count(r) == 0 && fl_rendezvous_bytes(r) == 0 && waited >= 0.15,
       "values no run took are dropped after their 0.2 s (%.2f s; waited up to 5 s)", waited);
    fl_rendezvous_sender_gone(r, b, NULL, 0);
    fl_rendezvous_free(r);
}

/* Steps of two values each, as a Recv takes them: polled, then given back
 * (fl_rendezvous_recycle) once the value is in the Recv's buffer. */
static bool step_of_two(fl_rendezvous *r, uint64_t step, float first)
{
    float values[2][3] = {{first, first + 1, first + 2}, {-first, 0, first}};
    bool right = true;
    for (int i = 0; i < 2; i++) {
        fl_tensor t = {.dtype = FL_FLOAT32, .shape = fl_shape_make(1, 3), .data = values[i]};
        fl_rendezvous_put(r, NULL, step, i ? "b" : "a", &t, &held);
    }
    for (int i = 0; i < 2; i++) {
        fl_tensor *got = NULL;
        right = right && fl_rendezvous_poll(r, step, i ? "b" : "a", "/job:ps/task:0", &got) == 1 &&
                memcmp(got->data, values[i], sizeof values[i]) == 0;
        fl_rendezvous_recycle(r, got, got ? fl_tensor_bytes(got) : 0);
    }
    fl_rendezvous_finish(r, step);
    return right;
}

static void test_warm_steps_reuse_memory(void)
{
    fl_rendezvous *r = fl_rendezvous_new();
    ok(step_of_two(r, 1, 1) && step_of_two(r, 2, 10), "two steps of two values each: each value taken whole");
    alloc_count_start();
    bool right = step_of_two(r, 3, 100);
    unsigned long long blocks = alloc_count_stop();
    ok(right, "a third step's values are the third step's, not the memory's last");
    ok(blocks == 0, "a warm step allocates no host memory in the rendezvous: its entries, keys and values' "
       "memory are the last step's (%llu blocks)", blocks);
    float big[64] = {0};
    fl_tensor t = {.dtype = FL_FLOAT32, .shape = fl_shape_make(1, 64), .data = big};
    fl_tensor *got = NULL;
    fl_rendezvous_put(r, NULL, 4, "a", &t, &held);
    ok(fl_rendezvous_poll(r, 4, "a", "/job:ps/task:0", &got) == 1 && got->shape.dims[0] == 64,
       "a value bigger than any before gets memory of its size");
    fl_tensor_free(got); /* a taker may free instead of giving back */
    fl_rendezvous_free(r);
}

int main(void)
{
    test_limits();
    test_warm_steps_reuse_memory();
    fl_rendezvous *r = fl_rendezvous_new();
    float v = 3;
    fl_tensor t = {.dtype = FL_FLOAT32, .shape = {0, {0}}, .data = &v};
    fl_tensor *got = NULL;
    double seconds;

    fl_rendezvous_put(r, NULL, 1, "k", &t, &held);
    ok(fl_rendezvous_take(r, 1, "k", &WAIT, &got) == 0 && fl_tensor_scalar(got) == 3,
       "a value put before the take is taken at once");
    fl_tensor_free(got);
    ok(fl_rendezvous_count(r) == 0, "and is gone from the table");

    later put = {r, 2, 0.2, false};
    int rc = take_with(r, 2, &put, &seconds, &got);
    ok(rc == 0 && fl_tensor_scalar(got) == 7,
       "a take waits for the value another thread puts (%.2f s; deadline 5 s)", seconds);
    fl_tensor_free(got);

    later abort_it = {r, 3, 0.2, true};
    rc = take_with(r, 3, &abort_it, &seconds, &got);
    ok(rc != 0 && fl_last_error_code() == FL_ABORTED && !got,
       "an abort ends the wait with ABORTED after %.2f s (deadline 5 s)", seconds);
    contains(fl_last_error(), "k from /job:ps/task:0", "the message names the key and the sender");
    fl_rendezvous_put(r, NULL, 3, "k", &t, &held);
    ok(fl_rendezvous_count(r) == 0, "a value of an aborted step is dropped");

    fl_rendezvous_finish(r, 1);
    fl_rendezvous_put(r, NULL, 1, "k", &t, &held);
    ok(fl_rendezvous_count(r) == 0, "a value of a finished step is dropped");
    ok(fl_rendezvous_take(r, 1, "k", &WAIT, &got) != 0 && fl_last_error_code() == FL_INVALID_ARGUMENT,
       "waiting in a finished step is refused at once: %s", fl_last_error());

    fl_rendezvous_wait_options short_wait = WAIT;
    short_wait.deadline_s = 0.3;
    double start = fl_now_s();
    rc = fl_rendezvous_take(r, 4, "k", &short_wait, &got);
    seconds = fl_now_s() - start;
    ok(rc != 0 && fl_last_error_code() == FL_DEADLINE_EXCEEDED,
       "a value that never comes: DEADLINE_EXCEEDED after %.2f s (deadline 0.3 s)", seconds);
    contains(fl_last_error(), "FLOWLAB_TASK_DEADLINE", "the message says which setting to change");

    fl_rendezvous_put(r, NULL, 5, "k", &t, &held);
    fl_rendezvous_put(r, NULL, 5, "other", &t, &held);
    fl_rendezvous_finish(r, 5);
    ok(fl_rendezvous_count(r) == 0, "finishing a step drops what it left");

    fl_rendezvous_abort_all(r);
    ok(fl_rendezvous_take(r, 6, "k", &WAIT, &got) != 0 && fl_last_error_code() == FL_ABORTED,
       "after abort_all (a server stopping) no wait begins");
    fl_rendezvous_free(r);
    return done_testing();
}
