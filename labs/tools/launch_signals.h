/* launch_signals.h: how launch_cluster hears of events while it waits in
 * poll(): SIGCHLD and the stop signals (SIGINT, SIGTERM, SIGHUP) write a
 * byte into a pipe that poll() watches; a stop signal is also remembered. */
#ifndef FLOWLAB_LAUNCH_SIGNALS_H
#define FLOWLAB_LAUNCH_SIGNALS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

static int wake_pipe[2] = {-1, -1};
static volatile sig_atomic_t stop_signal; /* the stop signal that came, or 0 */

/* A pipe whose ends close on exec and whose reading end never blocks. */
static int open_pipe(int fds[2])
{
    if (pipe(fds) != 0)
        return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    return 0;
}

static void on_signal(int sig)
{
    int saved = errno;
    if (sig != SIGCHLD)
        stop_signal = sig;
    ssize_t n = write(wake_pipe[1], "x", 1);
    (void)n; /* a full pipe already wakes poll() */
    errno = saved;
}

static int install_signals(void)
{
    if (open_pipe(wake_pipe) != 0)
        return -1;
    fcntl(wake_pipe[1], F_SETFL, fcntl(wake_pipe[1], F_GETFL) | O_NONBLOCK);
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++)
        sigaction(stops[i], &sa, NULL);
    sa.sa_flags |= SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout must not kill the launcher before it stops the tasks */
#ifdef PR_SET_CHILD_SUBREAPER
    /* What a task leaves behind becomes our child, so it is reaped here and
     * an empty process group really means nothing of the task is left. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    return 0;
}

#endif
