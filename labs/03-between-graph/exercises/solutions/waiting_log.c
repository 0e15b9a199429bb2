/* solutions/waiting_log.c: a reference answer to exercise waiting-log. */
#include <stdio.h>
#include <string.h>

#include "exercises.h"

#define MAX_TASKS 32

/* Reads one line: 1 with the task and its seconds so far when it is a
 * "waiting for" or "reached" line (*reached says which), else 0. */
static int parse_line(const char *line, char *task, double *seconds, bool *reached)
{
    const char *at;
    if ((at = strstr(line, ": waiting for ")) != NULL) {
        *reached = false;
        return sscanf(at + strlen(": waiting for "), "%63s at %*s for %lf", task, seconds) == 2;
    }
    if ((at = strstr(line, ": reached ")) != NULL) {
        *reached = true;
        return sscanf(at + strlen(": reached "), "%63s at %*s after %lf", task, seconds) == 2;
    }
    return 0;
}

int my_longest_wait(const char *log, wait_report *out)
{
    wait_report tasks[MAX_TASKS];
    int ntasks = 0;
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        char text[512], task[64];
        snprintf(text, sizeof text, "%.*s", (int)(end ? end - line : (long)strlen(line)), line);
        line = end ? end + 1 : NULL;
        double seconds;
        bool reached;
        if (!parse_line(text, task, &seconds, &reached))
            continue;
        int t = 0;
        while (t < ntasks && strcmp(tasks[t].task, task) != 0)
            t++;
        if (t == ntasks && ntasks == MAX_TASKS)
            continue;
        if (t == ntasks)
            tasks[ntasks++] = (wait_report){.seconds = 0};
        snprintf(tasks[t].task, sizeof tasks[t].task, "%s", task);
        if (reached || seconds > tasks[t].seconds) /* "reached" is the final word */
            tasks[t].seconds = seconds;
        tasks[t].reached = tasks[t].reached || reached;
    }
    int longest = -1;
    for (int t = 0; t < ntasks; t++)
        if (longest < 0 || tasks[t].seconds > tasks[longest].seconds)
            longest = t;
    if (longest < 0)
        return 0;
    *out = tasks[longest];
    return 1;
}
