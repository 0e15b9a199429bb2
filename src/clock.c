/* clock.c: the one clock the runtime times things with (the session's
 * trace, devices that time their own ops, waits and rates), so that every
 * lane of a timeline can be compared; and how long a wait for a peer task
 * may last. Not a timer API for labs: they use their own. */
#include <stdlib.h>
#include <time.h>

#include "runtime.h"

double fl_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double fl_now_s(void) { return fl_now_us() / 1e6; }

double fl_task_deadline_s(void)
{
    const char *text = getenv("FLOWLAB_TASK_DEADLINE");
    double seconds = text ? atof(text) : 0;
    return seconds > 0 ? seconds : 120;
}
