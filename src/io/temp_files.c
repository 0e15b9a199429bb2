/* temp_files.c: naming the temporary file of an atomic write, and cleaning
 * up the ones a killed writer left. Writing and renaming them is the
 * writers' business (checkpoint_write.c, checkpoint_state.c). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"
#include "temp_files.h"

#define TEMP_MARK ".tmp."
/* A writer appends to its file at least this often while it is alive, so a
 * temporary file untouched this long is no write in progress. */
#define STALE_AFTER_SECONDS 60

char *fl_temp_path_for(const char *path)
{
    size_t len = strlen(path) + 32;
    char *temp = fl_xmalloc(len);
    snprintf(temp, len, "%s" TEMP_MARK "%ld", path, (long)getpid());
    return temp;
}

/* Splits "NAME.tmp.PID" into NAME (into target, len bytes) and PID. */
static bool parse_temp_name(const char *file, char *target, size_t len, long *pid)
{
    const char *mark = strstr(file, TEMP_MARK);
    if (!mark || mark == file || (size_t)(mark - file) >= len)
        return false;
    const char *digits = mark + strlen(TEMP_MARK);
    char *end;
    errno = 0;
    *pid = strtol(digits, &end, 10);
    if (end == digits || *end != '\0' || errno != 0 || *pid <= 0)
        return false;
    memcpy(target, file, (size_t)(mark - file));
    target[mark - file] = '\0';
    return true;
}

/* Stale means both: its writer is not a live process here, and the file has
 * not been written for STALE_AFTER_SECONDS. The PID alone would be enough on
 * one machine, but a checkpoint directory shared with another machine (NFS,
 * chapter 3's cluster) holds PIDs that mean nothing here; the age keeps us
 * off a file that a writer elsewhere is still filling. A PID reused by an
 * unrelated process only keeps a stale file a little longer: the safe side. */
static bool is_stale(long pid, const struct stat *st)
{
    if (pid == (long)getpid())
        return false; /* ours: a save of this process may be under way */
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
        return false; /* alive, or someone else's that we may not signal */
    return difftime(time(NULL), st->st_mtime) >= STALE_AFTER_SECONDS;
}

void fl_remove_stale_temps(const char *dir, bool (*is_ours)(const char *name))
{
    DIR *d = opendir(dir);
    if (!d)
        return; /* no directory yet: nothing was ever written there */
    for (struct dirent *e; (e = readdir(d));) {
        char target[256], *path;
        long pid;
        if (!parse_temp_name(e->d_name, target, sizeof target, &pid) || !is_ours(target))
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        path = fl_xmalloc(len);
        snprintf(path, len, "%s/%s", dir, e->d_name);
        struct stat st;
        /* lstat and S_ISREG: a link or a directory under that name is not a
         * file we wrote; unlink, not remove, for the same reason. */
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && is_stale(pid, &st))
            unlink(path);
        free(path);
    }
    closedir(d);
}
