/* check_staleness.c: checks my_async_staleness (exercise staleness) on
 * cases worked by hand: equal workers, a slow one, a histogram cut short,
 * one worker alone, many updates; and arguments that make no sense. */
#include "exercises.h"
#include "../../common/check.h"

#define MAX_BINS 8

static const struct {
    const char *name;
    int workers, step_ms[3], updates, max_staleness;
    long histogram[MAX_BINS];
    double mean;
} cases[] = {
    {"2 workers of 100 ms, 6 updates", 2, {100, 100}, 6, 3, {1, 5, 0, 0}, 5.0 / 6},
    {"3 workers of 50 ms, 9 updates", 3, {50, 50, 50}, 9, 3, {1, 1, 7, 0}, 15.0 / 9},
    {"workers of 100 and 300 ms, 8 updates", 2, {100, 300}, 8, 4, {5, 1, 0, 2, 0}, 7.0 / 8},
    {"the same, stale counts from 2 up in the last bin", 2, {100, 300}, 8, 2, {5, 1, 2}, 7.0 / 8},
    {"one worker: never stale", 1, {70}, 5, 2, {5, 0, 0}, 0},
    {"workers of 300, 100 and 100 ms, 7 updates", 3, {300, 100, 100}, 7, 5, {1, 3, 2, 0, 1, 0}, 11.0 / 7},
};

static void check_case(int i)
{
    long got[MAX_BINS];
    for (int b = 0; b < MAX_BINS; b++)
        got[b] = -7;
    double mean = my_async_staleness(cases[i].step_ms, cases[i].workers, cases[i].updates, got,
                                      cases[i].max_staleness);
    if (mean == -2 && i == 0)
        fail("not implemented yet (my_async_staleness returned -2)");
    for (int b = 0; b <= cases[i].max_staleness; b++)
        if (got[b] != cases[i].histogram[b])
            fail("%s: %ld gradients should be %d%s steps stale, you counted %ld", cases[i].name,
                 cases[i].histogram[b], b, b == cases[i].max_staleness ? " or more" : "", got[b]);
    if (got[cases[i].max_staleness + 1] != -7 && cases[i].max_staleness + 1 < MAX_BINS)
        fail("%s: you wrote past histogram[max_staleness]", cases[i].name);
    if (fabs(mean - cases[i].mean) > 1e-9)
        fail("%s: the mean staleness is %.4f, you returned %.4f", cases[i].name, cases[i].mean, mean);
}

/* With N equal workers every gradient after the first round is N-1 stale. */
static void check_equal_workers(void)
{
    for (int n = 1; n <= 3; n++) {
        int ms[3] = {40, 40, 40};
        long got[MAX_BINS];
        double mean = my_async_staleness(ms, n, 3000, got, MAX_BINS - 1);
        if (got[n - 1] != 3000 - (n - 1) || fabs(mean - (n - 1)) > 0.01)
            fail("%d equal workers, 3000 updates: %d gradients are %d steps stale and the mean is about %d; "
                 "you counted %ld, mean %.3f", n, 3000 - (n - 1), n - 1, n - 1, got[n - 1], mean);
    }
}

static void check_refused(void)
{
    int ok_ms[2] = {10, 10}, zero_ms[2] = {10, 0};
    long h[2] = {-7, -7};
    const char *why[] = {"0 workers", "0 updates", "max_staleness -1", "a step of 0 ms"};
    double got[] = {my_async_staleness(ok_ms, 0, 5, h, 1), my_async_staleness(ok_ms, 2, 0, h, 1),
                    my_async_staleness(ok_ms, 2, 5, h, -1), my_async_staleness(zero_ms, 2, 5, h, 1)};
    for (int i = 0; i < 4; i++)
        if (got[i] != -1)
            fail("%s makes no sense: return -1 (you returned %g)", why[i], got[i]);
    if (h[0] != -7 || h[1] != -7)
        fail("arguments that make no sense must leave the histogram alone");
}

int main(void)
{
    check_start("staleness", "labs/03-between-graph/exercises/staleness.c");
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        check_case(i);
    check_equal_workers();
    check_refused();
    pass();
}
