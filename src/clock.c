/* clock.c: the one clock the runtime times things with (the session's
 * trace, devices that time their own ops), so that every lane of a
 * timeline can be compared. Not a timer API for labs: they use their own. */
#include <time.h>

#include "runtime.h"

double fl_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
