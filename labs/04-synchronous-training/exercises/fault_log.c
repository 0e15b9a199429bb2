/* fault_log.c: exercise fault-log. Write my_read_fault_log (see
 * exercises.h): read a whole cluster's output after a failure and say what
 * happened: which task was lost, how many workers noticed, and how far the
 * chief took training back.
 *
 * Hints: walk the log line by line (strchr(line, '\n')). strstr finds
 * "lost the connection to " (sscanf "%63s" then reads the task after it,
 * with the ':' that follows, which you cut off), ": the step failed (" and
 * " steps lost since the last checkpoint". The worker that speaks is the
 * "worker N" after the task's name: sscanf "%*[^ ] worker %d" reads N from
 * "worker0: worker 0: ...", and "global step %ld -> %ld: %ld steps lost"
 * reads the three numbers after strstr found "global step ".
 * Remember which workers you have counted already.
 *
 * Then try it on a real run: book/outputs/04-ps-dies.txt is one.
 *
 * Check your work: make exercises */
#include "exercises.h"

int my_read_fault_log(const char *log, fault_report *out)
{
    (void)log, (void)out;
    return -1; /* TODO: your code here */
}
