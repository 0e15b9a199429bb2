/* solutions/staleness.c: a reference answer to exercise staleness. */
#include "exercises.h"

/* The worker whose step ends first; the lowest index on a tie. */
static int next_to_finish(const long *ends_at, int workers)
{
    int first = 0;
    for (int w = 1; w < workers; w++)
        first = ends_at[w] < ends_at[first] ? w : first;
    return first;
}

static bool valid(const int *step_ms, int workers, int updates, int max_staleness)
{
    if (workers < 1 || updates < 1 || max_staleness < 0)
        return false;
    for (int w = 0; w < workers; w++)
        if (step_ms[w] < 1)
            return false;
    return true;
}

double my_async_staleness(const int *step_ms, int workers, int updates, long *histogram, int max_staleness)
{
    if (!valid(step_ms, workers, updates, max_staleness))
        return -1;
    long ends_at[workers], read_at[workers], global_step = 0, total = 0;
    for (int w = 0; w < workers; w++)
        ends_at[w] = step_ms[w], read_at[w] = 0;
    for (int s = 0; s <= max_staleness; s++)
        histogram[s] = 0;
    for (int u = 0; u < updates; u++) {
        int w = next_to_finish(ends_at, workers);
        long stale = global_step - read_at[w];
        histogram[stale < max_staleness ? stale : max_staleness]++;
        total += stale;
        read_at[w] = ++global_step;
        ends_at[w] += step_ms[w];
    }
    return (double)total / updates;
}
