/* timing.h: wall-clock time for the labs' images/sec lines.
 * A monotonic clock, so a change of the system time never shows up as speed. */
#ifndef LABS_COMMON_TIMING_H
#define LABS_COMMON_TIMING_H

#include <time.h>

static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
