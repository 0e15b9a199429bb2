/* task_servers.h: flowlab_server processes on loopback for the tests of
 * in-graph replication across tasks: started with TensorFlow's flags on
 * free ports, each with its own log, waited for with a deadline and killed
 * by pid, never by name. */
#ifndef FLOWLAB_TESTS_TASK_SERVERS_H
#define FLOWLAB_TESTS_TASK_SERVERS_H

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopback.h"

#define MAX_TASK_SERVERS 4

typedef struct {
    char ps_hosts[64], worker_hosts[160];
    int num_workers;
    pid_t pid[MAX_TASK_SERVERS]; /* ps 0, then worker 0, 1, ... */
    int status[MAX_TASK_SERVERS]; /* exit status once reaped, else -1 */
    char log[MAX_TASK_SERVERS][300];
} task_servers;

/* Starts argv[0] with its output (both streams) into log; the pid, or -1. */
static inline pid_t spawn_logged(const char *log, char *const argv[])
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv);
    _exit(127);
}

/* Starts one task's server, its output into log; the pid, or -1. */
static inline pid_t start_task_server(const char *server, task_servers *c, const char *job, int index,
                                      const char *log)
{
    char index_text[16];
    snprintf(index_text, sizeof index_text, "%d", index);
    char *argv[] = {(char *)server, "--ps_hosts", c->ps_hosts, "--worker_hosts", c->worker_hosts, "--job_name",
                    (char *)job, "--task_index", index_text, NULL};
    return spawn_logged(log, argv);
}

/* One ps and num_workers workers on free ports of 127.0.0.1; false when a
 * server could not be started. */
static inline bool start_task_servers(task_servers *c, const char *server, const char *dir, int num_workers)
{
    memset(c, 0, sizeof *c);
    c->num_workers = num_workers;
    int base = loopback_free_ports(1 + num_workers);
    snprintf(c->ps_hosts, sizeof c->ps_hosts, "127.0.0.1:%d", base);
    for (int i = 0; i < num_workers; i++)
        snprintf(c->worker_hosts + strlen(c->worker_hosts), sizeof c->worker_hosts - strlen(c->worker_hosts),
                 "%s127.0.0.1:%d", i ? "," : "", base + 1 + i);
    bool started = base > 0;
    for (int t = 0; t <= num_workers; t++) {
        snprintf(c->log[t], sizeof c->log[t], "%s/%s%d.log", dir, t ? "worker" : "ps", t ? t - 1 : 0);
        c->status[t] = -1;
        c->pid[t] = start_task_server(server, c, t ? "worker" : "ps", t ? t - 1 : 0, c->log[t]);
        started = started && c->pid[t] > 0;
    }
    return started;
}

/* Waits up to seconds for task t's server to exit by itself: true when it
 * did, with its status kept. */
static inline bool task_server_exits(task_servers *c, int t, double seconds)
{
    for (int i = 0; c->status[t] < 0 && i < (int)(seconds * 20); i++) {
        int status;
        if (waitpid(c->pid[t], &status, WNOHANG) == c->pid[t])
            c->status[t] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        else
            usleep(50000);
    }
    return c->status[t] >= 0;
}

/* Kills (SIGKILL) and reaps every server still running, by pid. */
static inline void stop_task_servers(task_servers *c)
{
    for (int t = 0; t <= c->num_workers; t++)
        if (c->pid[t] > 0 && c->status[t] < 0) {
            kill(c->pid[t], SIGKILL);
            waitpid(c->pid[t], NULL, 0);
            c->status[t] = 137;
        }
}

#endif
