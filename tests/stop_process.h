/* stop_process.h: pauses a task the tests started (SIGSTOP) and waits until
 * the kernel says it is stopped. kill() returns before every thread has
 * stopped: on a loaded machine a task can go on answering for a while, so a
 * test that starts a step at once might see it end without the task pausing. */
#ifndef FLOWLAB_TESTS_STOP_PROCESS_H
#define FLOWLAB_TESTS_STOP_PROCESS_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

/* True once pid's state in /proc is T (stopped), looking every 10 ms for up to 5 s. */
static inline bool wait_stopped(pid_t pid)
{
    char path[64], text[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    time_t end = now.tv_sec + 5;
    for (; now.tv_sec < end; clock_gettime(CLOCK_MONOTONIC, &now), poll(NULL, 0, 10)) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f)
            fclose(f);
        text[n] = '\0';
        const char *state = strrchr(text, ')');
        if (state && state[1] == ' ' && (state[2] == 'T' || state[2] == 't'))
            return true;
    }
    return false;
}

/* SIGSTOP, then wait_stopped: false when pid did not stop within 5 s. */
static inline bool stop_process(pid_t pid)
{
    return kill(pid, SIGSTOP) == 0 && wait_stopped(pid);
}

#endif
