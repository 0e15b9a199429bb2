/* waiting_log.c: exercise waiting-log. Write my_longest_wait (see
 * exercises.h): read a worker's log and say which ps task it waited for
 * longest, for how long, and whether it ever got through.
 *
 * Hints: strstr finds "waiting for " and "reached " in a line; sscanf with
 * "%63s at %*s for %lf" reads the task and the seconds after "waiting for ",
 * and "%63s at %*s after %lf" after "reached ". Keep one entry per task
 * (a worker waits for at most a few), updated line by line.
 *
 * Check your work: make exercises */
#include "exercises.h"

int my_longest_wait(const char *log, wait_report *out)
{
    (void)log, (void)out;
    return -1; /* TODO: your code here */
}
