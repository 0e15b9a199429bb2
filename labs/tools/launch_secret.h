/* launch_secret.h: launch_cluster --make_secret: a fresh shared secret for
 * one run (32 random bytes from the kernel, as 64 hex digits), in a file
 * only this user can read, in a directory of the run's own; every task gets
 * --cluster_secret_file naming it, and the run removes both when it ends. */
#ifndef FLOWLAB_LAUNCH_SECRET_H
#define FLOWLAB_LAUNCH_SECRET_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

typedef struct {
    char dir[256];   /* the run's directory, mode 0700 */
    char path[300];  /* dir/cluster_secret, mode 0600 */
    char flag[320];  /* "--cluster_secret_file=path", for every task */
} run_secret;

/* 0, or -1 with why: the file written, or nothing left behind. */
static int make_run_secret(run_secret *s, char *why, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/flowlab_run.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    unsigned char bytes[32];
    char hex[2 * sizeof bytes + 2];
    if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes || !mkdtemp(s->dir)) {
        snprintf(why, len, "cannot make a run directory for the secret in %s: %s", s->dir, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < sizeof bytes; i++)
        snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
    strcat(hex, "\n");
    snprintf(s->path, sizeof s->path, "%s/cluster_secret", s->dir);
    int fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex)) {
        snprintf(why, len, "cannot write %s: %s", s->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(s->path);
        rmdir(s->dir);
        return -1;
    }
    close(fd);
    memset(hex, 0, sizeof hex);
    snprintf(s->flag, sizeof s->flag, "--cluster_secret_file=%s", s->path);
    return 0;
}

static void remove_run_secret(run_secret *s)
{
    if (!s->path[0])
        return;
    unlink(s->path);
    rmdir(s->dir);
}

#endif
