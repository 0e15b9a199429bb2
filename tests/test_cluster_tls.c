/* test_cluster_tls.c: a cluster with TLS on request (fl_cluster_set_tls):
 * a worker and a ps whose certificates the cluster's CA signed move
 * variables both ways, a big one too, over TLS 1.3 (the worker's TLS
 * tunnel, src/distributed_runtime/transport/tls_tunnel.c; the ps's libevent_openssl
 * bufferevents), with the shared secret as well; a certificate from
 * another CA is refused on either side, at once (UNAUTHENTICATED), and the
 * ps logs the refused peer; TLS handshakes fed a byte at a time are dropped
 * at the ps's hello deadline (server_guard.c); a worker process that exits right after closing
 * its TLS connection exits cleanly (its tunnel thread does not outlive
 * OpenSSL's exit handler); TLS on one end only is said at once on both,
 * naming --tls_cert/--tls_key/--tls_ca (issue 38). Certificates are made at test time
 * (tests/make_test_certs.sh) in the build directory. Loopback only. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "runtime.h"
#include "distributed_runtime/partition/cluster_security.h"
#include "distributed_runtime/transport/frame_reader.h"
#include "counter_partition.h"
#include "loopback.h"

enum { BIG = 1 << 20 }; /* 4 MB of floats: many TLS records each way */

static char dir[300];

static void pem(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

/* A cluster's TLS from the certificates named (file stems in dir). */
static int set_tls(fl_cluster *c, const char *cert, const char *ca)
{
    char cert_path[400], key_path[400], ca_path[400], stem[64];
    snprintf(stem, sizeof stem, "%s.pem", cert);
    pem(cert_path, sizeof cert_path, stem);
    snprintf(stem, sizeof stem, "%s.key", cert);
    pem(key_path, sizeof key_path, stem);
    snprintf(stem, sizeof stem, "%s.pem", ca);
    pem(ca_path, sizeof ca_path, stem);
    return fl_cluster_set_tls(c, cert_path, key_path, ca_path);
}

/* A ps with TLS, or without it when tls is false. */
static fl_server *start_ps_with(bool tls, fl_cluster **spec, int *port, FILE *log, const char *secret_file)
{
    char ps_hosts[64], worker_hosts[64];
    *port = loopback_free_port();
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", *port);
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d", loopback_free_port());
    *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    if ((tls && set_tls(*spec, "task", "ca") != 0) ||
        (secret_file && fl_cluster_set_secret_file(*spec, secret_file) != 0))
        diag("the ps's security: %s", fl_last_error());
    fl_server_options options = {.log = log, .hello_timeout_s = 5};
    return fl_server_start(*spec, &options);
}

static fl_server *start_ps(fl_cluster **spec, int *port, FILE *log, const char *secret_file)
{
    return start_ps_with(true, spec, port, log, secret_file);
}

/* A worker's connection with the certificate and CA named, or without TLS when cert is NULL. */
static fl_task_client *open_client(int port, const char *cert, const char *ca, const char *secret_file,
                                 double *seconds)
{
    fl_cluster *mine = fl_cluster_from_flags("127.0.0.1:1", "127.0.0.1:2", "worker", 0);
    if ((cert && set_tls(mine, cert, ca) != 0) || (secret_file && fl_cluster_set_secret_file(mine, secret_file) != 0))
        diag("the worker's security: %s", fl_last_error());
    fl_connect_options o = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 30,
                            .job = "ps", .task = 0, .tls = fl_cluster_tls(mine, false)};
    o.secret = fl_cluster_secret(mine, &o.secret_len);
    double start = fl_now_us();
    fl_task_client *c = fl_task_client_open(&o, "worker", 0);
    *seconds = (fl_now_us() - start) / 1e6;
    fl_error_code code = fl_last_error_code();
    char why[FL_ERROR_LEN];
    snprintf(why, sizeof why, "%s", fl_last_error());
    fl_cluster_free(mine); /* the tunnel keeps its own reference to the TLS context */
    fl_set_error_code(code, "%s", why);
    return c;
}

static void test_variables_over_tls(const char *secret_file)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server *ps = start_ps(&spec, &port, log, secret_file);
    double seconds;
    fl_task_client *c = open_client(port, "task", "ca", secret_file, &seconds);
    const char *what = secret_file ? "TLS and the secret" : "TLS";
    ok(ps && c, "%s: a worker whose certificate the cluster's CA signed is accepted (%s)", what,
       c ? "" : fl_last_error());
    if (!c) {
        fl_server_stop(ps);
        fl_cluster_free(spec);
        fclose(log);
        return;
    }
    float *values = malloc(BIG * sizeof *values);
    for (int i = 0; i < BIG; i++)
        values[i] = (float)i;
    fl_tensor *w = fl_tensor_from_floats(fl_shape_make(1, BIG), values);
    fl_tensor *halves = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, BIG)), *back = NULL;
    for (int i = 0; i < BIG; i++)
        fl_tensor_floats(halves)[i] = -0.5f;
    uint64_t handle = counter_register(c, BIG);
    int rc = !handle || counter_step(c, handle, 1, NULL, NULL) != 0 || counter_step(c, handle, 2, w, NULL) != 0;
    for (int i = 0; i < 4 && rc == 0; i++)
        rc = counter_step(c, handle, 3 + (uint64_t)i, halves, &back);
    const float *got = back ? fl_tensor_floats(back) : values;
    ok(rc == 0 && got[0] == -2.0f && got[BIG - 1] == (float)(BIG - 1) - 2.0f,
       "%s: a 4 MB value goes in, four 4 MB updates run, and it comes back right (%g, %g)", what, got[0],
       got[BIG - 1]);
    ok(fl_task_client_goodbye(c) == 0, "%s: the goodbye is answered", what);
    fl_task_client_close(c);
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fl_tensor_free(w);
    fl_tensor_free(halves);
    fl_tensor_free(back);
    free(values);
    fclose(log);
}

/* TLS handshakes held open by a byte every 0.5 s (slowloris): each is
 * dropped at the ps's 5 s hello deadline all the same. */
static void test_slow_tls_handshakes(void)
{
    enum { SLOW = 20 };
    fl_cluster *spec;
    int port, fds[SLOW], open_count = SLOW;
    FILE *log = tmpfile();
    fl_server *ps = start_ps(&spec, &port, log, NULL);
    for (int i = 0; i < SLOW; i++)
        fds[i] = loopback_connect(port, 1);
    const unsigned char record[] = {0x16, 0x03, 0x01, 0x00, 0x80}; /* a handshake record of 128 bytes, never sent */
    double start = fl_now_s();
    for (int k = 0; open_count > 0 && fl_now_s() - start < 15; k++) {
        open_count = 0;
        for (int i = 0; i < SLOW; i++) {
            char b;
            ssize_t n = fds[i] < 0 ? 0 : recv(fds[i], &b, 1, MSG_DONTWAIT);
            if (fds[i] >= 0 && (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))) {
                close(fds[i]);
                fds[i] = -1;
            }
            if (fds[i] < 0)
                continue;
            send(fds[i], &record[k % sizeof record], 1, MSG_NOSIGNAL);
            open_count++;
        }
        poll(NULL, 0, 500);
    }
    double took = fl_now_s() - start;
    ok(open_count == 0 && took < 9, "%d TLS handshakes fed a byte every 0.5 s are dropped by the 5 s deadline "
       "(%d open after %.1f s)", SLOW, open_count, took);
    for (int i = 0; i < SLOW; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fclose(log);
}

/* What a stopped server logged. */
static void read_log(FILE *log, char *text, size_t len)
{
    fflush(log);
    rewind(log);
    text[fread(text, 1, len - 1, log)] = '\0';
}

static int count_lines(const char *text, const char *with)
{
    int n = 0;
    char line[1024];
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        n += strstr(line, with) != NULL;
        p += len + (p[len] == '\n');
    }
    return n;
}

/* One end with TLS, the other without (issue 38): each side says so at
 * once, naming the flags, and the server serves the next client after. */
static void test_tls_mismatch(bool server_tls)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server *ps = start_ps_with(server_tls, &spec, &port, log, NULL);
    const char *mine = server_tls ? NULL : "task";
    const char *side = server_tls ? "a plain worker at a TLS ps" : "a TLS worker at a plain ps";
    double seconds;
    fl_task_client *c = open_client(port, mine, "ca", NULL, &seconds); /* its deadline: 30 s */
    ok(!c && strstr(fl_last_error(), "--tls_cert/--tls_key/--tls_ca"), "%s is refused, naming the flags: %s", side,
       fl_last_error());
    ok(seconds < 5, "%s: at once, not retried for the 30 s deadline (%.2f s)", side, seconds);
    if (!server_tls)
        contains(fl_last_error(), "the server may not use TLS", "the TLS worker says the server may not use TLS");
    else
        ok(fl_last_error_code() == FL_UNAUTHENTICATED, "the plain worker's error is UNAUTHENTICATED (%d)",
           (int)fl_last_error_code());
    fl_task_client_close(c);
    c = open_client(port, server_tls ? "task" : NULL, "ca", NULL, &seconds);
    ok(c && fl_task_client_goodbye(c) == 0, "%s: the ps serves a matching worker after it (%s)", side,
       c ? "" : fl_last_error());
    fl_task_client_close(c);
    fl_server_stop(ps);
    char text[4096];
    read_log(log, text, sizeof text);
    const char *line = server_tls ? "wrong version number" : "TLS ClientHello";
    ok(count_lines(text, line) == 1 && count_lines(text, "--tls_cert/--tls_key/--tls_ca") == 1,
       "%s: the ps logged one line that names the flags:\n%s", side, text);
    fl_cluster_free(spec);
    fclose(log);
}

/* A plain worker's reader told a TLS alert from a frame: 7 bytes, then the end. */
static void test_tls_alert_read(void)
{
    int fds[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
    const unsigned char alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46};
    ok(write(fds[0], alert, sizeof alert) == (ssize_t)sizeof alert, "a TLS alert is written");
    close(fds[0]);
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_status why = {0};
    ok(fl_read_frame(fds[1], &buf, &f, &why) == -2 && strstr(why.message, "--tls_cert"),
       "the reader says the task speaks TLS, naming the flags: %s", why.message);
    close(fds[1]);
    fl_wire_buf_free(&buf);
}

static void test_other_ca_refused(void)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server *ps = start_ps(&spec, &port, log, NULL);
    double seconds;
    fl_task_client *c = open_client(port, "other", "other_ca", NULL, &seconds);
    ok(!c && fl_last_error_code() == FL_UNAUTHENTICATED,
       "a worker that trusts another CA refuses the ps's certificate: %s", fl_last_error());
    ok(seconds < 5, "at once, not retried (%.2f s)", seconds);
    c = open_client(port, "other", "ca", NULL, &seconds);
    ok(!c && fl_last_error_code() == FL_UNAUTHENTICATED,
       "the ps refuses a worker whose certificate another CA signed: %s", fl_last_error());
    ok(seconds < 5, "at once, not retried (%.2f s)", seconds);
    fl_server_stats st;
    double start = fl_now_us();
    do /* the ps sees each failed handshake on its own thread */
        fl_server_get_stats(ps, &st);
    while (st.refused < 2 && fl_now_us() - start < 10e6 && usleep(10000) == 0);
    ok(st.variables == 0 && st.frames == 0, "neither got a request served (%llu)", (unsigned long long)st.frames);
    ok(st.refused == 2, "the ps counted both as refused (%llu; waited up to 10 s)", (unsigned long long)st.refused);
    fl_server_stop(ps); /* after stop, the log is complete */
    char text[4096];
    read_log(log, text, sizeof text);
    contains(text, "refused 127.0.0.1:", "the ps logged the refused peer's address");
    contains(text, "the TLS handshake failed", "and why");
    fl_cluster_free(spec);
    fclose(log);
}

/* The child's side of test_exit_right_after_tls: connect over TLS, say
 * goodbye, close, and exit at once, while the tunnel's thread is still
 * ending. Its exit status says how it went. */
static int exit_right_after_tls(int port)
{
    double seconds;
    fl_task_client *c = open_client(port, "task", "ca", NULL, &seconds);
    if (!c) {
        fprintf(stderr, "the child could not connect: %s\n", fl_last_error());
        return 3;
    }
    int rc = fl_task_client_goodbye(c) == 0 ? 0 : 4;
    fl_task_client_close(c);
    return rc; /* exit() now: OpenSSL's exit handler runs, LeakSanitizer's after it */
}

/* LeakSanitizer once found a worker's OpenSSL error queue (904 bytes) lost
 * at exit: a tunnel thread had outlived OpenSSL's exit handler. Several
 * child processes (this program again) each exit right after closing. */
static void test_exit_right_after_tls(const char *self)
{
    fl_cluster *spec;
    int port, clean = 0, runs = 12;
    FILE *log = tmpfile();
    fl_server *ps = start_ps(&spec, &port, log, NULL);
    char cmd[1000], last[4096] = "";
    /* A child takes a fraction of a second; one that hangs is stopped after
     * 20 s (timeout), and the loop stops there, so the test ends in time. */
    snprintf(cmd, sizeof cmd, "timeout 20 %s --exit_after_tls %d %s 2>&1", self, port, dir);
    for (int i = 0; i < runs; i++) {
        FILE *child = popen(cmd, "r");
        size_t n = child ? fread(last, 1, sizeof last - 1, child) : 0;
        last[n] = '\0';
        int status = child ? pclose(child) : -1, code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (status == 0) {
            clean++;
            continue;
        }
        diag("child %d exited with status %d: %s", i, code, last);
        if (code == 124) {
            diag("child %d hung for 20 s waiting for its connection, its goodbye or its exit; stopping here", i);
            break;
        }
    }
    ok(clean == runs, "a worker process that exits right after closing its TLS connection exits cleanly "
       "(%d of %d; under ASan, LeakSanitizer found nothing)", clean, runs);
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fclose(log);
}

static void test_bad_files(void)
{
    fl_cluster *c = fl_cluster_from_flags("127.0.0.1:1", "127.0.0.1:2", "worker", 0);
    ok(fl_cluster_set_tls(c, "/no/such.pem", "/no/such.key", "/no/ca.pem") != 0 &&
           strstr(fl_last_error(), "--tls_cert /no/such.pem"),
       "a missing certificate names its flag and file: %s", fl_last_error());
    char cert[400], other_key[400], ca[400];
    pem(cert, sizeof cert, "task.pem");
    pem(other_key, sizeof other_key, "other.key");
    pem(ca, sizeof ca, "ca.pem");
    ok(fl_cluster_set_tls(c, cert, other_key, ca) != 0 && strstr(fl_last_error(), "--tls_key"),
       "a key that is not the certificate's is refused: %s", fl_last_error());
    ok(fl_cluster_set_tls(c, NULL, NULL, "x") != 0, "all three files are needed: %s", fl_last_error());
    fl_cluster_free(c);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--exit_after_tls") == 0) {
        snprintf(dir, sizeof dir, "%s", argv[3]);
        return exit_right_after_tls(atoi(argv[2]));
    }
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    snprintf(dir, sizeof dir, "%s/tests/tls.%d", build, (int)getpid());
    char cmd[800], secret[400];
    snprintf(cmd, sizeof cmd, "sh tests/make_test_certs.sh %s", dir);
    if (system(cmd) != 0)
        skip_all("cannot make test certificates with the openssl command line");
    snprintf(secret, sizeof secret, "%s/secret", dir);
    FILE *f = fopen(secret, "w");
    if (f) {
        fputs("an even longer secret of the cluster\n", f);
        fclose(f);
    }
    chmod(secret, 0600);
    test_bad_files();
    test_variables_over_tls(NULL);
    test_variables_over_tls(secret);
    test_other_ca_refused();
    test_tls_mismatch(false);
    test_tls_mismatch(true);
    test_tls_alert_read();
    test_slow_tls_handshakes();
    test_exit_right_after_tls(argv[0]);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
