/* test_secret_file.c: the cluster's secret file is read with care
 * (src/distributed_runtime/partition/cluster_security.c): within its 1,024-byte
 * bound, only a regular file of this user's, never through a symbolic link,
 * and without blocking on a FIFO; each refusal names the file. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "runtime.h"

static char dir[64];

static void write_bytes(const char *path, char byte, size_t count, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    char block[256];
    memset(block, byte, sizeof block);
    for (size_t done = 0; fd >= 0 && done < count;) {
        size_t n = count - done < sizeof block ? count - done : sizeof block;
        if (write(fd, block, n) != (ssize_t)n)
            break;
        done += n;
    }
    if (fd < 0)
        diag("cannot write %s", path);
    else
        fchmod(fd, mode), close(fd);
}

/* Reads path as a cluster's secret: 0 when taken; the error in why. */
static int try_secret(const char *path, fl_error_code *code, char *why, size_t len)
{
    fl_cluster *c = fl_cluster_from_flags("127.0.0.1:1", "127.0.0.1:2", "worker", 0);
    int rc = fl_cluster_set_secret_file(c, path);
    *code = rc ? fl_last_error_code() : FL_OK;
    snprintf(why, len, "%s", rc ? fl_last_error() : "");
    fl_cluster_free(c);
    return rc;
}

/* A refusal of path, with its code, naming the file and saying want. */
static void refused(const char *path, fl_error_code want_code, const char *want, const char *what)
{
    fl_error_code code;
    char why[FL_ERROR_LEN];
    ok(try_secret(path, &code, why, sizeof why) != 0 && code == want_code, "%s is refused: %s", what, why);
    contains(why, path, "the error names the file");
    contains(why, want, "and says why");
}

static void test_sizes(void)
{
    char path[128];
    fl_error_code code;
    char why[FL_ERROR_LEN];
    snprintf(path, sizeof path, "%s/exact", dir);
    write_bytes(path, 'a', 1024, 0600);
    ok(try_secret(path, &code, why, sizeof why) == 0, "a secret of exactly 1024 bytes is taken %s", why);
    snprintf(path, sizeof path, "%s/over_by_one", dir);
    write_bytes(path, 'a', 1025, 0600);
    refused(path, FL_INVALID_ARGUMENT, "over 1024 bytes", "a file of 1025 bytes");
    snprintf(path, sizeof path, "%s/huge", dir);
    write_bytes(path, 'a', 200000, 0600);
    refused(path, FL_INVALID_ARGUMENT, "over 1024 bytes", "a file of 200000 bytes");
}

/* A FIFO, read in a child with a deadline: a reader that blocks in open()
 * waiting for a writer would never end. */
static void test_fifo(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/fifo", dir);
    if (mkfifo(path, 0600) != 0) {
        skip("a FIFO as the secret file", "mkfifo failed");
        return;
    }
    int pipefd[2];
    if (pipe(pipefd) != 0)
        skip_all("no pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        fl_error_code code;
        char why[FL_ERROR_LEN];
        try_secret(path, &code, why, sizeof why);
        dprintf(pipefd[1], "%d %s", (int)code, why);
        _exit(0);
    }
    close(pipefd[1]);
    struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
    char answer[FL_ERROR_LEN + 16] = "";
    if (poll(&p, 1, 10000) == 1) {
        ssize_t n = read(pipefd[0], answer, sizeof answer - 1);
        answer[n > 0 ? n : 0] = '\0';
    } else {
        diag("waited 10 s for the child reading the FIFO %s; it hung", path);
        kill(pid, SIGKILL);
    }
    waitpid(pid, NULL, 0);
    close(pipefd[0]);
    ok(atoi(answer) == FL_INVALID_ARGUMENT, "a FIFO is refused at once, without waiting for a writer: %s",
       answer[0] ? answer : "(no answer in 10 s)");
    contains(answer, path, "the error names the FIFO");
    contains(answer, "not a regular file", "and says why");
}

static void test_owner_and_links(void)
{
    char good[128], link_path[128], foreign[128];
    snprintf(good, sizeof good, "%s/good", dir);
    write_bytes(good, 'k', 32, 0600);
    snprintf(link_path, sizeof link_path, "%s/link", dir);
    if (symlink(good, link_path) == 0)
        refused(link_path, FL_PERMISSION_DENIED, "symbolic link", "a symbolic link to a good secret file");
    else
        skip("a symbolic link as the secret file", "symlink failed");
    refused(dir, FL_INVALID_ARGUMENT, "not a regular file", "a directory");
    snprintf(foreign, sizeof foreign, "%s/foreign", dir);
    write_bytes(foreign, 'k', 32, 0600);
    if (geteuid() != 0) {
        skip("a file of another user's", "not root: cannot chown a file to nobody");
        return;
    }
    if (chown(foreign, 65534, 65534) != 0) {
        skip("a file of another user's", "chown to nobody (65534) failed");
        return;
    }
    refused(foreign, FL_PERMISSION_DENIED, "belongs to user 65534", "a file owned by nobody, even to root");
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/flowlab_secret_file_XXXXXX");
    if (!mkdtemp(dir))
        skip_all("no temporary directory");
    test_sizes();
    test_fifo();
    test_owner_and_links();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
