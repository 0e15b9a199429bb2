/* checkpoint_dir.h: makes --checkpoint_dir ready before any training, so a
 * directory that cannot be created fails at once instead of at the first
 * save, minutes later. It creates the missing parents too (like mkdir -p). */
#ifndef LABS_COMMON_CHECKPOINT_DIR_H
#define LABS_COMMON_CHECKPOINT_DIR_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir for one path that may already be a directory; false with errno set. */
static inline bool make_one_directory(const char *path)
{
    struct stat st;
    if (mkdir(path, 0777) == 0)
        return true;
    if (errno != EEXIST)
        return false;
    if (stat(path, &st) != 0)
        return false;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return false;
    }
    return true;
}

/* Creates dir and its missing parents. Returns 0, or -1 after writing the
 * reason (naming the path that failed, which may be a parent) into why. */
static inline int make_checkpoint_dir(const char *dir, char *why, size_t len)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(why, len, "the path is longer than %zu characters", sizeof path - 1);
        return -1;
    }
    /* Each '/' after the first character ends a parent: create it first. */
    for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        bool made = make_one_directory(path);
        int saved_errno = errno;
        *slash = '/';
        if (!made) {
            snprintf(why, len, "cannot create %.*s: %s", (int)(slash - path), path,
                     strerror(saved_errno));
            return -1;
        }
    }
    if (!make_one_directory(path)) {
        snprintf(why, len, "cannot create it: %s", strerror(errno));
        return -1;
    }
    if (access(path, W_OK | X_OK) != 0) {
        snprintf(why, len, "it is not writable: %s", strerror(errno));
        return -1;
    }
    return 0;
}

#endif
