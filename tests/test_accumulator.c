/* test_accumulator.c: TensorFlow's ConditionalAccumulator in a task's
 * container (accumulator.c, issue 36 item 2 stage B): a take of 2 of 3
 * workers' gradients averages the first two and the third, now stale, is
 * dropped and counted; a take waits for its count (a thread adds while it
 * waits) and fails at its deadline naming the accumulator; the sum resets
 * between steps; a gradient of the wrong shape is refused naming the op,
 * and an accumulator too big for the tensor limit is refused. */
#include <pthread.h>

#include "accumulator.h"
#include "runtime.h"
#include "tap.h"
#include "variable_container.h"

#define WAIT_S 30.0 /* a loaded machine's longest honest wait */

static fl_tensor vec2(float *data) { return (fl_tensor){.dtype = FL_FLOAT32, .shape = fl_shape_make(1, 2), .data = data}; }

static void test_two_of_three(fl_accumulator *a)
{
    float g0[2] = {1, 2}, g1[2] = {3, 6}, g2[2] = {100, 100}, avg[2] = {0, 0};
    fl_tensor t0 = vec2(g0), t1 = vec2(g1), t2 = vec2(g2), out = vec2(avg);
    ok(fl_accumulator_apply(a, 0, &t0, "apply0") == 0 && fl_accumulator_apply(a, 0, &t1, "apply1") == 0,
       "two workers' gradients of step 0 are taken in");
    int rc = fl_accumulator_take(a, 2, fl_now_s() + WAIT_S, &out, "take");
    ok(rc == 0, "take of 2 returns%s%s", rc ? ": " : "", rc ? fl_last_error() : "");
    ok(avg[0] == 2 && avg[1] == 4, "their average is [2 4] (got [%g %g])", avg[0], avg[1]);
    ok(fl_accumulator_read(a).global_step == 1, "the take advanced the global step to 1 (%lld)",
       (long long)fl_accumulator_read(a).global_step);
    ok(fl_accumulator_apply(a, 0, &t2, "apply2") == 1, "the third worker's gradient of step 0 is stale");
    fl_accumulator_state now = fl_accumulator_read(a);
    ok(now.stale == 1 && now.accumulated == 0, "it is counted (%lld stale) and not summed (%d accumulated)",
       (long long)now.stale, now.accumulated);
}

static void test_reset_and_deadline(fl_accumulator *a)
{
    float g[2] = {5, 7}, avg[2] = {0, 0};
    fl_tensor t = vec2(g), out = vec2(avg);
    ok(fl_accumulator_apply(a, 1, &t, "apply") == 0, "a gradient of step 1 is taken in");
    int rc = fl_accumulator_take(a, 2, fl_now_s() + 0.2, &out, "sync/take_grad");
    ok(rc == -1 && fl_last_error_code() == FL_DEADLINE_EXCEEDED, "a take of 2 with 1 fails at its deadline");
    contains(fl_last_error(), "accumulator acc_w had 1 of the 2", "its error names the accumulator and the count");
    contains(fl_last_error(), "sync/take_grad", "and the op");
    rc = fl_accumulator_take(a, 1, fl_now_s() + WAIT_S, &out, "take");
    ok(rc == 0 && avg[0] == 5 && avg[1] == 7,
       "a take of 1 then gives step 1's gradient alone, [5 7] (got [%g %g]): the sum reset after step 0",
       avg[0], avg[1]);
}

typedef struct {
    fl_accumulator *a;
    float avg[2];
    int rc;
} taker;

static void *take_two(void *arg)
{
    taker *t = arg;
    fl_tensor out = vec2(t->avg);
    t->rc = fl_accumulator_take(t->a, 2, fl_now_s() + WAIT_S, &out, "take");
    return NULL;
}

static void test_take_waits(fl_accumulator *a)
{
    taker t = {.a = a};
    pthread_t thread;
    pthread_create(&thread, NULL, take_two, &t);
    float g0[2] = {2, 2}, g1[2] = {4, 8};
    fl_tensor t0 = vec2(g0), t1 = vec2(g1);
    int64_t step = fl_accumulator_read(a).global_step;
    fl_accumulator_apply(a, step, &t0, "apply0");
    fl_accumulator_apply(a, step, &t1, "apply1");
    pthread_join(thread, NULL);
    ok(t.rc == 0, "a take on another thread returned once 2 gradients came (waited up to %.0f s)", WAIT_S);
    ok(t.avg[0] == 3 && t.avg[1] == 5, "it averaged both, [3 5] (got [%g %g])", t.avg[0], t.avg[1]);
}

static void test_refusals(fl_variable_container *c, fl_accumulator *a)
{
    float g[3] = {1, 1, 1};
    fl_tensor wrong = {.dtype = FL_FLOAT32, .shape = fl_shape_make(1, 3), .data = g};
    ok(fl_accumulator_apply(a, 99, &wrong, "tower_1/apply_w") == -1, "a gradient of shape [3] is refused");
    contains(fl_last_error(), "tower_1/apply_w", "the error names the op");
    contains(fl_last_error(), "accumulator acc_w holds float32 [2]", "and the accumulator's shape");
    ok(fl_accumulator_find(fl_variable_container_accumulators(c), "acc_w", fl_shape_make(1, 3)) == NULL,
       "asking for acc_w with another shape is refused");
    contains(fl_last_error(), "accumulator acc_w already lives on this task", "naming it");
    fl_accumulator_set *set = fl_variable_container_accumulators(c);
    ok(fl_accumulator_find(set, "huge", fl_shape_make(2, 1 << 20, 1 << 20)) == NULL &&
           fl_last_error_code() == FL_RESOURCE_EXHAUSTED,
       "an accumulator over the tensor limit is refused, not a crash");
    contains(fl_last_error(), "accumulator huge", "naming it");
    fl_accumulator_set_step(a, 10);
    float ok_g[2] = {1, 1};
    fl_tensor t = vec2(ok_g);
    ok(fl_accumulator_apply(a, 9, &t, "apply") == 1 && fl_accumulator_apply(a, 10, &t, "apply") == 0,
       "after SetGlobalStep(10) a step-9 gradient is stale and a step-10 one counts");
}

int main(void)
{
    fl_variable_container *c = fl_variable_container_new();
    fl_accumulator *a = fl_accumulator_find(fl_variable_container_accumulators(c), "acc_w", fl_shape_make(1, 2));
    ok(a != NULL, "the container makes accumulator acc_w for [2] gradients");
    ok(fl_accumulator_find(fl_variable_container_accumulators(c), "acc_w", fl_shape_make(1, 2)) == a,
       "a second ask by the same name finds the same one (every partition on the task shares it)");
    test_two_of_three(a);
    test_reset_and_deadline(a);
    test_take_waits(a);
    test_refusals(c, a);
    fl_variable_container_free(c);
    return done_testing();
}
