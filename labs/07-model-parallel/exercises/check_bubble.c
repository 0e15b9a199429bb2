/* check_bubble.c: checks my_bubble and my_idle_fraction (exercise bubble).
 * The formula against GPipe's values; then the idle time measured on
 * schedules this check builds: two equal stages running M micro-batches
 * forward and backward, one slot per op, as the lab's trace would show. */
#include <stdio.h>

#include "exercises.h"
#include "../../common/check.h"

#define MAX_OPS 64

/* GPipe on 2 stages: forward m on stage s in slot m + s; the backward
 * passes in reverse after all forwards, from stage 1 back to stage 0. */
static int gpipe_schedule(int micro_batches, op_time *ops)
{
    static const char *const devices[2] = {"/gpu:0", "/gpu:1"};
    int n = 0, m_count = micro_batches;
    for (int m = 0; m < m_count; m++)
        for (int s = 0; s < 2; s++)
            ops[n++] = (op_time){devices[s], "forward", m + s, 1.0};
    double backward_start = m_count + 1; /* after the last forward on stage 1 */
    for (int m = 0; m < m_count; m++)
        for (int s = 1; s >= 0; s--)
            ops[n++] = (op_time){devices[s], "backward", backward_start + m + (1 - s), 1.0};
    return n;
}

static void check_formula(void)
{
    static const struct { int s, m; double want; } cases[] = {
        {2, 1, 0.5}, {2, 4, 0.2}, {2, 8, 1.0 / 9}, {4, 4, 3.0 / 7}, {1, 4, 0.0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double got = my_bubble(cases[i].s, cases[i].m);
        if (got == -1)
            fail("not implemented yet (my_bubble returned -1)");
        if (fabs(got - cases[i].want) > 1e-9)
            fail("my_bubble(%d stages, %d micro-batches) = %g; want %g", cases[i].s, cases[i].m,
                 got, cases[i].want);
    }
}

static void check_measured(void)
{
    op_time ops[MAX_OPS];
    for (int m = 1; m <= 8; m *= 2) {
        int n = gpipe_schedule(m, ops);
        for (int d = 0; d < 2; d++) {
            const char *device = d ? "/gpu:1" : "/gpu:0";
            double got = my_idle_fraction(ops, n, device);
            if (got == -1)
                fail("not implemented yet (my_idle_fraction returned -1)");
            if (fabs(got - my_bubble(2, m)) > 1e-9)
                fail("on a GPipe schedule of 2 equal stages and %d micro-batches, %s is idle %g "
                     "of the span by my_idle_fraction; the bubble is %g", m, device, got, my_bubble(2, m));
        }
    }
    op_time late[2] = {{"/gpu:0", "a", 10, 2}, {"/gpu:1", "b", 12, 6}};
    double got = my_idle_fraction(late, 2, "/gpu:0");
    if (fabs(got - 0.75) > 1e-9)
        fail("ops at 10-12 ms on /gpu:0 and 12-18 ms on /gpu:1: /gpu:0 is idle 6 of 8 ms (0.75), "
             "not %g (the span starts at the first op, not at 0)", got);
}

int main(void)
{
    check_start("bubble", "labs/07-model-parallel/exercises/bubble.c");
    check_formula();
    check_measured();
    pass();
}
