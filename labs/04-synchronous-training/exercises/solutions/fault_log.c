/* solutions/fault_log.c: a reference answer to exercise fault-log. */
#include <stdio.h>
#include <string.h>

#include "exercises.h"

#define MAX_WORKERS 64

/* The N of "worker N: " that starts what a task said (after the launcher's
 * "workerN: " prefix, if any); -1 when the line is not a worker's. */
static int speaker(const char *line)
{
    int n;
    const char *at = strstr(line, "worker ");
    return at && sscanf(at, "worker %d:", &n) == 1 && n >= 0 && n < MAX_WORKERS ? n : -1;
}

/* Reads one line into the report; failed[w] notes the workers counted already. */
static void read_line(const char *line, fault_report *r, bool *failed, bool *found)
{
    const char *at;
    int who = speaker(line);
    if ((at = strstr(line, "lost the connection to ")) != NULL && !*found &&
        sscanf(at + strlen("lost the connection to "), "%63s", r->lost_task) == 1) {
        size_t len = strlen(r->lost_task); /* "/job:ps/task:0:" ends with the line's ':' */
        if (len > 0 && r->lost_task[len - 1] == ':')
            r->lost_task[len - 1] = '\0';
        *found = true;
    }
    if (strstr(line, ": the step failed (") && who >= 0 && !failed[who]) {
        failed[who] = true;
        r->workers_affected++;
    }
    long from, to, lost;
    if (who == 0 && (at = strstr(line, "global step ")) != NULL && strstr(line, " steps lost since") &&
        sscanf(at, "global step %ld -> %ld: %ld steps lost", &from, &to, &lost) == 3) {
        r->died_at = from;
        r->restored_to = to;
        r->steps_lost = lost;
    }
}

int my_read_fault_log(const char *log, fault_report *out)
{
    fault_report r = {.died_at = -1, .restored_to = -1, .steps_lost = -1};
    bool failed[MAX_WORKERS] = {false}, found = false;
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        char text[1024];
        snprintf(text, sizeof text, "%.*s", (int)(end ? end - line : (long)strlen(line)), line);
        line = end ? end + 1 : NULL;
        read_line(text, &r, failed, &found);
    }
    if (!found)
        return 0;
    *out = r;
    return 1;
}
