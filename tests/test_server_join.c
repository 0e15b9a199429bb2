/* test_server_join.c: a ps's fl_server_join names whom it waits for and
 * ends (server_join.c). With FLOWLAB_TASK_DEADLINE=3: a ps restarted after
 * a worker said goodbye to the old one, a ps that its workers gave up on
 * before it came back, and a ps one of whose workers never got a session (a
 * wrong secret; a secret the ps lacks) each end with 0 within the deadline
 * and a few seconds, with a line naming who was counted as gone; the wait
 * logs whom it waits for while one is not connected (every second here:
 * FLOWLAB_JOIN_LOG_EVERY_S=1), and nothing while all are.
 * The ps runs on this process's thread, on loopback ports nothing uses. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "runtime.h"
#include "distributed_runtime/transport/task_client.h"
#include "loopback.h"

#define DEADLINE_S 3.0
#define SLACK_S 6.0 /* a loaded machine, ASan */

static char dir[64], good_file[96], wrong_file[96];

typedef struct {
    char ps_hosts[64], worker_hosts[96];
    int port;
} hosts;

static hosts two_workers(void)
{
    hosts h;
    h.port = loopback_free_port();
    snprintf(h.ps_hosts, sizeof h.ps_hosts, "127.0.0.1:%d", h.port);
    snprintf(h.worker_hosts, sizeof h.worker_hosts, "127.0.0.1:%d,127.0.0.1:%d", loopback_free_port(),
             loopback_free_port());
    return h;
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        diag("cannot write %s", path);
    close(fd);
}

static fl_cluster *spec(const hosts *h, const char *job, int task, const char *secret_file)
{
    fl_cluster *c = fl_cluster_from_flags(h->ps_hosts, h->worker_hosts, job, task);
    if (!c)
        diag("the cluster spec ps %s, workers %s: %s", h->ps_hosts, h->worker_hosts, fl_last_error());
    if (c && secret_file && fl_cluster_set_secret_file(c, secret_file) != 0)
        diag("secret: %s", fl_last_error());
    return c;
}

/* Worker `task` says goodbye to the ps, as fl_monitored_session_close does. */
static int goodbye(const hosts *h, int task, const char *secret_file)
{
    fl_cluster *w = spec(h, "worker", task, secret_file);
    int rc = fl_cluster_say_goodbye(w);
    fl_cluster_free(w);
    return rc;
}

/* Everything the log holds, as one string (the caller frees it). */
static char *contents(FILE *log)
{
    fflush(log);
    long end = ftell(log);
    char *all = fl_xcalloc((size_t)end + 1, 1);
    rewind(log);
    size_t n = fread(all, 1, (size_t)end, log);
    all[n] = '\0';
    fseek(log, end, SEEK_SET);
    return all;
}

/* The log's line that starts its text with `start`, or "" (into line). */
static void line_with(const char *all, const char *start, char *line, size_t len)
{
    const char *at = strstr(all, start);
    line[0] = '\0';
    if (!at)
        return;
    const char *end = strchr(at, '\n');
    snprintf(line, len, "%.*s", (int)(end ? end - at : (long)strlen(at)), at);
}

/* Joins ps with a bound, timing it from `since`; checks that it ended in
 * time and that its last line names `gone` as gone and not `finished`. */
static void check_ends(fl_server *ps, FILE *log, double since, const char *gone, const char *finished,
                       const char *what)
{
    int rc = fl_server_join(ps, DEADLINE_S + SLACK_S + 10);
    double took = fl_now_s() - since;
    ok(rc == 0, "%s: the ps's join ends by itself with 0 (%d)", what, rc);
    ok(took < DEADLINE_S + SLACK_S, "%s: within the deadline and a few seconds (%.1f s < %.0f s)", what, took,
       DEADLINE_S + SLACK_S);
    char *all = contents(log), line[2048];
    line_with(all, "done waiting: counted as gone", line, sizeof line);
    ok(line[0] && strstr(line, gone), "%s: a clear line names %s as gone: \"%s\"", what, gone, line);
    char *listed = strstr(line, "said goodbye:");
    ok(listed && strstr(listed, finished) && !strstr(listed, gone), "%s: and %s as having said goodbye", what,
       finished);
    line_with(all, "waiting for goodbyes from", line, sizeof line);
    ok(strstr(line, gone) && strstr(line, "not seen for"),
       "%s: while it waited it named whom it waited for: \"%s\"", what, line);
    if (rc != 0 || !strstr(all, "done waiting"))
        diag("the ps's log:\n%s", all);
    free(all);
}

/* 1. Worker 1 said goodbye to the ps, which was then restarted: the new ps
 * never hears from worker 1 again. */
static void test_restart_after_goodbye(void)
{
    hosts h = two_workers();
    fl_cluster *ps_spec = spec(&h, "ps", 0, NULL);
    FILE *old_log = tmpfile(), *log = tmpfile();
    fl_server_options o = {.log = old_log};
    fl_server *old = fl_server_start(ps_spec, &o);
    ok(old && goodbye(&h, 1, NULL) == 0, "worker 1 says goodbye to the first ps (%s)", old ? "" : fl_last_error());
    fl_server_stop(old);
    o.log = log;
    double start = fl_now_s();
    fl_server *ps = fl_server_start(ps_spec, &o);
    ok(ps != NULL, "a new ps starts at the same address (%s)", ps ? "" : fl_last_error());
    if (ps) {
        ok(goodbye(&h, 0, NULL) == 0, "worker 0, still running, says goodbye to the new ps");
        check_ends(ps, log, start, "/job:worker/task:1", "/job:worker/task:0", "restarted after a goodbye");
    }
    fl_server_stop(ps);
    fl_cluster_free(ps_spec);
    fclose(old_log);
    fclose(log);
}

/* 2. The workers lost the ps and gave up before it came back. */
static void test_workers_gave_up(void)
{
    hosts h = two_workers();
    fl_cluster *ps_spec = spec(&h, "ps", 0, NULL);
    FILE *log = tmpfile();
    fl_server_options o = {.log = log};
    fl_server *old = fl_server_start(ps_spec, &o);
    fl_connect_options to = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = h.port, .deadline_s = 10,
                             .job = "ps", .task = 0};
    fl_task_client *w0 = old ? fl_task_client_open(&to, "worker", 0) : NULL;
    fl_task_client *w1 = old ? fl_task_client_open(&to, "worker", 1) : NULL;
    ok(w0 && w1, "both workers reach the first ps (%s)", w0 && w1 ? "" : fl_last_error());
    ok(old && fl_server_join(old, 1.5) == 1, "while they are connected, the ps waits for them");
    char *before = contents(log);
    ok(!strstr(before, "waiting for goodbyes"), "and says nothing: it is serving them (every second here)");
    free(before);
    fl_server_stop(old);
    fl_task_client_close(w0); /* their runs failed; they gave up */
    fl_task_client_close(w1);
    double start = fl_now_s();
    fl_server *ps = fl_server_start(ps_spec, &o);
    ok(ps != NULL, "a new ps starts after the workers gave up (%s)", ps ? "" : fl_last_error());
    if (ps) {
        int rc = fl_server_join(ps, DEADLINE_S + SLACK_S + 10);
        double took = fl_now_s() - start;
        ok(rc == 0 && took < DEADLINE_S + SLACK_S, "workers gone: the ps ends with 0 within %.0f s (%d, %.1f s)",
           DEADLINE_S + SLACK_S, rc, took);
        char *all = contents(log), line[2048];
        line_with(all, "done waiting: counted as gone", line, sizeof line);
        ok(strstr(line, "/job:worker/task:0, /job:worker/task:1") && strstr(line, "said goodbye: none"),
           "workers gone: the line names both as gone, none as finished: \"%s\"", line);
        free(all);
    }
    fl_server_stop(ps);
    fl_cluster_free(ps_spec);
    fclose(log);
}

/* 3. Worker 1 never got a session: the ps refused its secret, or it
 * refused a ps without one. Worker 0 finished. */
static void test_worker_without_session(const char *ps_secret, const char *worker1_secret, const char *what,
                                        const char *refusal)
{
    hosts h = two_workers();
    fl_cluster *ps_spec = spec(&h, "ps", 0, ps_secret);
    FILE *log = tmpfile();
    fl_server_options o = {.log = log};
    double start = fl_now_s();
    fl_server *ps = fl_server_start(ps_spec, &o);
    ok(ps != NULL, "%s: the ps starts (%s)", what, ps ? "" : fl_last_error());
    if (ps) {
        ok(goodbye(&h, 1, worker1_secret) != 0, "%s: worker 1 is refused at the handshake (%s)", what,
           fl_last_error());
        ok(goodbye(&h, 0, ps_secret) == 0, "%s: worker 0 finishes", what);
        check_ends(ps, log, start, "/job:worker/task:1", "/job:worker/task:0", what);
        char *all = contents(log);
        ok(strstr(all, refusal) != NULL, "%s: the ps logged the refusal (\"%s\")", what, refusal);
        ok(!strstr(all, "without saying goodbye"), "%s: not as a worker that disconnected without saying goodbye",
           what);
        if (!strstr(all, refusal))
            diag("the ps's log:\n%s", all);
        free(all);
    }
    fl_server_stop(ps);
    fl_cluster_free(ps_spec);
    fclose(log);
}

int main(void)
{
    setenv("FLOWLAB_TASK_DEADLINE", "3", 1);
    setenv("FLOWLAB_JOIN_LOG_EVERY_S", "1", 1);
    snprintf(dir, sizeof dir, "/tmp/test_server_join.XXXXXX");
    if (!mkdtemp(dir))
        return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    snprintf(good_file, sizeof good_file, "%s/good", dir);
    snprintf(wrong_file, sizeof wrong_file, "%s/wrong", dir);
    write_file(good_file, "0123456789abcdef0123456789abcdef\n");
    write_file(wrong_file, "fedcba9876543210fedcba9876543210\n");
    test_restart_after_goodbye();
    test_workers_gave_up();
    test_worker_without_session(good_file, wrong_file, "a wrong secret", "refused: no valid proof");
    test_worker_without_session(NULL, good_file, "a secret the ps lacks", "refused at the handshake by");
    unlink(good_file);
    unlink(wrong_file);
    rmdir(dir);
    return done_testing();
}
