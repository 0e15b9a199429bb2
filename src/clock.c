/* clock.c: the one clock the runtime times things with (the session's
 * trace, devices that time their own ops, waits and rates), so that every
 * lane of a timeline can be compared; and how long a wait for a peer task
 * may last. Not a timer API for labs: they use their own. */
#include <pthread.h>
#include <stdio.h>
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

/* Waits are measured with fl_now_s; pthread_cond_timedwait wants this. */
struct timespec fl_wall_after(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = ts.tv_nsec + (long long)((seconds > 0 ? (seconds < 1e9 ? seconds : 1e9) : 0) * 1e9); /* NaN: 0 */
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

/* FLOWLAB_TASK_DEADLINE's seconds: the default when it is unset, or -1
 * (INVALID_ARGUMENT in st) when it is not a number of seconds between 0 and 1e6. */
static double deadline_from_environment(fl_status *st)
{
    const char *text = getenv("FLOWLAB_TASK_DEADLINE");
    if (!text)
        return FL_TASK_DEADLINE_DEFAULT_S;
    char *end;
    double seconds = strtod(text, &end);
    if (end != text && *end == '\0' && seconds > 0 && seconds <= 1e6) /* NaN fails both */
        return seconds;
    fl_status_set(st, FL_INVALID_ARGUMENT, "FLOWLAB_TASK_DEADLINE=\"%.40s\" is not a number of seconds above 0 "
                  "(e.g. 30; unset, tasks wait %.0f s for each other)", text, FL_TASK_DEADLINE_DEFAULT_S);
    return -1;
}

int fl_task_deadline_check(void)
{
    fl_status why = {0};
    if (deadline_from_environment(&why) > 0)
        return 0;
    return fl_status_to_last_error(&why);
}

static pthread_once_t warned = PTHREAD_ONCE_INIT;

static void warn_bad_deadline(void)
{
    fl_status why = {0};
    if (deadline_from_environment(&why) < 0)
        fprintf(stderr, "flowlab: WARNING: %s; waiting the default\n", why.message);
}

/* Clusters check the variable when they are made (fl_cluster_new); one set
 * wrong after that is still not ignored in silence. */
double fl_task_deadline_s(void)
{
    fl_status why = {0};
    double seconds = deadline_from_environment(&why);
    if (seconds > 0)
        return seconds;
    pthread_once(&warned, warn_bad_deadline);
    return FL_TASK_DEADLINE_DEFAULT_S;
}
