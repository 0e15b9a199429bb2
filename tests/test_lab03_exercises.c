/* test_lab03_exercises.c: chapter 3's exercises, run as a student runs them
 * (the Makefile builds the checks first): each reference solution passes,
 * each exercise file's check fails naming the file to edit until solved, and
 * the waiting-log answer reads the log the runtime's connect code writes. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "flowlab.h"
#include "lab_runner.h"
#include "distributed_runtime/connect.h"
#include "solutions/waiting_log.c" /* my_longest_wait, the reference answer */

/* A loopback port nobody listens on: bound by the kernel's choice, then closed. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* The exercise's log lines are the runtime's: a worker that never reaches
 * /job:ps/task:1 writes them, and the reference answer reads them back. */
static void test_real_log(void)
{
    FILE *log = tmpfile();
    fl_connect_options o = {.who = "/job:ps/task:1", .host = "127.0.0.1", .port = closed_port(),
                            .deadline_s = 0.8, .log_every_s = 0.2, .log = log, .log_prefix = "worker 1"};
    int fd = o.port > 0 && log ? fl_connect_with_retry(&o) : 0;
    ok(fd < 0, "a worker gives up on a ps task that is not there");
    if (fd > 0)
        close(fd);
    char text[4096] = "";
    if (log) {
        rewind(log);
        text[fread(text, 1, sizeof text - 1, log)] = '\0';
        fclose(log);
    }
    wait_report r = {"", -1, true};
    int rc = my_longest_wait(text, &r);
    ok(rc == 1 && strcmp(r.task, "/job:ps/task:1") == 0 && !r.reached && r.seconds >= 0 && r.seconds <= 1,
       "the reference waiting-log answer reads its log: %s, %g s, %s", r.task, r.seconds,
       r.reached ? "reached" : "never reached");
    if (rc != 1)
        diag("the log:\n%s", text);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* Every check is built together; the first one stands for them all. */
    lab_runner_start(argv[0], "test_lab03_exercises", "exercises/03-between-graph/solutions/check_round_robin");
    static const char *const names[][2] = {{"round_robin", "round-robin"},
                                           {"ps_load", "ps-load"},
                                           {"waiting_log", "waiting-log"}};
    test_exercise_checks("03-between-graph", names, 3);
    test_real_log();
    lab_runner_finish();
    return done_testing();
}
