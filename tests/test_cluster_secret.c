/* test_cluster_secret.c: a ps whose cluster has a shared secret
 * (src/distributed_runtime/transport/handshake.c, server_handshake.c) against
 * strangers: a client without the secret and one with a wrong secret are
 * refused at once (UNAUTHENTICATED, not retried), read nothing and change
 * nothing (a worker's variable on the ps compared before and after); a
 * proof recorded on one connection and replayed on another is refused; a
 * false ps, without the secret or with another, cannot feed a worker; a
 * secret file others can read is refused. Loopback only, every read with a
 * deadline; the ps runs on this process's own thread. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "runtime.h"
#include "distributed_runtime/partition/cluster_security.h"
#include "distributed_runtime/transport/frame_reader.h"
#include "distributed_runtime/transport/handshake.h"
#include "distributed_runtime/transport/socket_writer.h"
#include "counter_partition.h"
#include "loopback.h"

static const char SECRET[] = "0123456789abcdef0123456789abcdef\n";
static char dir[64], good_file[96], wrong_file[96];

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        diag("cannot write %s", path);
    fchmod(fd, mode);
    close(fd);
}

/* A ps of a cluster of one ps and two workers on free ports, with the
 * secret in secret_file (NULL: none). */
static fl_server *start_ps(const char *secret_file, fl_cluster **spec, int *port, FILE *log)
{
    char ps_hosts[64], worker_hosts[64];
    *port = loopback_free_port();
    snprintf(ps_hosts, sizeof ps_hosts, "127.0.0.1:%d", *port);
    snprintf(worker_hosts, sizeof worker_hosts, "127.0.0.1:%d,127.0.0.1:%d", loopback_free_port(),
             loopback_free_port());
    *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    if (secret_file && fl_cluster_set_secret_file(*spec, secret_file) != 0)
        diag("secret: %s", fl_last_error());
    fl_server_options options = {.log = log, .hello_timeout_s = 5};
    return fl_server_start(*spec, &options);
}

/* A worker's connection with the secret of secret_file (NULL: none). */
static fl_task_client *open_client(int port, const char *secret_file, int task, double *seconds)
{
    fl_cluster *mine = NULL;
    fl_connect_options o = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 30,
                            .job = "ps", .task = 0};
    if (secret_file) { /* the bytes as a cluster reads them */
        mine = fl_cluster_from_flags("127.0.0.1:1", "127.0.0.1:2", "worker", 0);
        fl_cluster_set_secret_file(mine, secret_file);
        o.secret = fl_cluster_secret(mine, &o.secret_len);
    }
    double start = fl_now_us();
    fl_task_client *c = fl_task_client_open(&o, "worker", task);
    *seconds = (fl_now_us() - start) / 1e6;
    fl_error_code code = fl_last_error_code();
    char why[FL_ERROR_LEN];
    snprintf(why, sizeof why, "%s", fl_last_error());
    fl_cluster_free(mine);
    fl_set_error_code(code, "%s", why);
    return c;
}

/* The worker's variable w as the ps holds it now (a step that adds 0 to it). */
static void read_state(fl_task_client *c, uint64_t handle, uint64_t step, float w[3])
{
    fl_tensor *zeros = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 3)), *value = NULL;
    if (counter_step(c, handle, step, zeros, &value) == 0)
        memcpy(w, fl_tensor_floats(value), 3 * sizeof *w);
    fl_tensor_free(value);
    fl_tensor_free(zeros);
}

/* A stranger that skips the proof: HELLO, then a run that would add nines
 * to w (its handle is the worker's) and an IS_INITIALIZED. True when the
 * ps answered with nothing but one ERROR and closed. */
static bool stranger_gets_nothing(int port, uint64_t handle)
{
    fl_wire_buf buf = {0};
    float nines[3] = {9, 9, 9};
    fl_tensor *value = fl_tensor_from_floats(fl_shape_make(1, 3), nines);
    const char *feeds[] = {"delta"}, *targets[] = {"update"};
    const fl_tensor *values[] = {value};
    fl_wire_name_list lists[2] = {{0, NULL}, {1, targets}};
    fl_wire_put_hello(&buf, 1, "worker", 1);
    fl_wire_put_run_partition(&buf, 2, handle, 100, 0, 1, feeds, values, lists);
    fl_wire_put_is_initialized(&buf, 3, "w");
    int fd = loopback_connect(port, 10);
    fl_socket_write_all(fd, buf.data, buf.len);
    fl_wire_frame f;
    fl_status why = {0};
    int challenge = fl_read_frame(fd, &buf, &f, &why) == 1 && f.type == FL_WIRE_CHALLENGE;
    int error = fl_read_frame(fd, &buf, &f, &why) == 1 && f.type == FL_WIRE_ERROR;
    int closed = fl_read_frame(fd, &buf, &f, &why) == 0;
    close(fd);
    fl_wire_buf_free(&buf);
    fl_tensor_free(value);
    return challenge && error && closed;
}

static void test_strangers_change_nothing(void)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server *ps = start_ps(good_file, &spec, &port, log);
    double seconds;
    fl_task_client *good = open_client(port, good_file, 0, &seconds);
    ok(ps && good, "a worker with the secret is accepted (%s)", good ? "" : fl_last_error());
    if (!good) {
        fl_server_stop(ps);
        return;
    }
    float w0[3] = {1, 2, 3}, before[3] = {0}, after[3] = {0};
    fl_tensor *w = fl_tensor_from_floats(fl_shape_make(1, 3), w0);
    uint64_t handle = counter_register(good, 3);
    ok(handle && counter_step(good, handle, 1, NULL, NULL) == 0 && counter_step(good, handle, 2, w, NULL) == 0,
       "the worker's partition on the ps sets w to 1 2 3 (%s)", handle ? "" : fl_last_error());
    read_state(good, handle, 3, before);

    fl_task_client *none = open_client(port, NULL, 1, &seconds);
    ok(!none && fl_last_error_code() == FL_UNAUTHENTICATED, "a worker without the secret is refused: %s",
       fl_last_error());
    contains(fl_last_error(), "--cluster_secret_file", "and is told which flag gives it");
    ok(seconds < 5, "at once, not retried until the 30 s deadline (%.2f s)", seconds);
    fl_task_client *wrong = open_client(port, wrong_file, 1, &seconds);
    ok(!wrong && fl_last_error_code() == FL_UNAUTHENTICATED, "a worker with a wrong secret is refused: %s",
       fl_last_error());
    ok(seconds < 5, "at once (%.2f s)", seconds);
    ok(stranger_gets_nothing(port, handle), "a stranger that skips the proof gets one ERROR, no reply, and is closed");

    read_state(good, handle, 4, after);
    ok(memcmp(before, after, sizeof before) == 0 && after[2] == 3, "the variable is unchanged (%g %g %g)", after[0],
       after[1], after[2]);
    fl_server_stats st;
    double start = fl_now_us();
    do /* the ps notices the last stranger's end on its own thread */
        fl_server_get_stats(ps, &st);
    while (st.refused < 3 && fl_now_us() - start < 10e6 && usleep(10000) == 0);
    ok(st.refused == 3, "the ps counted the three strangers as refused (%llu; waited up to 10 s)",
       (unsigned long long)st.refused);
    fflush(log);
    rewind(log);
    char text[4096] = "";
    text[fread(text, 1, sizeof text - 1, log)] = '\0';
    contains(text, "closing 127.0.0.1:", "the ps logged the refused peer's address");
    contains(text, "refused: no valid proof of the cluster secret", "and why");
    contains(text, "refused 127.0.0.1:", "and the worker that hung up without the secret");
    contains(text, "it closed without proving it knows the cluster secret", "saying so");
    fl_task_client_close(good);
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fl_tensor_free(w);
    fclose(log);
}

/* Reads frames on fd until one of type `type`: 1, else 0 (another, or none). */
static int expect_frame(int fd, fl_wire_buf *buf, fl_wire_type type, fl_wire_message *m)
{
    fl_wire_frame f;
    fl_status why = {0};
    if (fl_read_frame(fd, buf, &f, &why) != 1 || fl_wire_parse(&f, m, &why) != 0)
        return 0;
    return m->type == type;
}

/* HELLO on a new connection; the CHALLENGE's nonce into nonce. -1: none. */
static int hello_for_challenge(int port, unsigned char nonce[FL_WIRE_PROOF_BYTES], fl_wire_message *m)
{
    fl_wire_buf buf = {0};
    int fd = loopback_connect(port, 10);
    fl_wire_put_hello(&buf, 1, "worker", 0);
    fl_socket_write_all(fd, buf.data, buf.len);
    int got = expect_frame(fd, &buf, FL_WIRE_CHALLENGE, m);
    memcpy(nonce, m->u.handshake.nonce, FL_WIRE_PROOF_BYTES);
    fl_wire_buf_free(&buf);
    if (!got)
        close(fd);
    return got ? fd : -1;
}

static void test_replay_refused(void)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server *ps = start_ps(good_file, &spec, &port, log);
    fl_wire_message *m = calloc(1, sizeof *m);
    unsigned char nonce1[FL_WIRE_PROOF_BYTES], nonce2[FL_WIRE_PROOF_BYTES], mine[FL_WIRE_PROOF_BYTES] = {1};
    unsigned char proof[FL_WIRE_PROOF_BYTES];
    size_t len;
    const unsigned char *secret = fl_cluster_secret(spec, &len);
    int first = hello_for_challenge(port, nonce1, m);
    fl_handshake_proof(secret, len, FL_PROVER_CLIENT, nonce1, "worker", 0, proof);
    fl_wire_buf captured = {0}, in = {0};
    fl_wire_put_proof(&captured, 1, proof, mine);
    fl_socket_write_all(first, captured.data, captured.len);
    ok(expect_frame(first, &in, FL_WIRE_SERVER_PROOF, m) && expect_frame(first, &in, FL_WIRE_HELLO_OK, m),
       "an honest handshake is answered with SERVER_PROOF and HELLO_OK");
    int second = hello_for_challenge(port, nonce2, m);
    ok(second >= 0 && memcmp(nonce1, nonce2, sizeof nonce1) != 0, "a second connection gets a fresh nonce");
    fl_socket_write_all(second, captured.data, captured.len); /* the recorded PROOF, replayed */
    ok(expect_frame(second, &in, FL_WIRE_ERROR, m) && m->u.error.code == FL_WIRE_E_UNAUTHENTICATED,
       "the replayed PROOF is refused (%s)", m->u.error.message);
    fl_wire_frame f;
    fl_status why = {0};
    ok(fl_read_frame(second, &in, &f, &why) == 0, "and the connection closed");
    close(first);
    close(second);
    fl_wire_buf_free(&captured);
    fl_wire_buf_free(&in);
    free(m);
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fclose(log);
}

/* A false ps that knows another secret and says it has checked the proof. */
typedef struct {
    int listener;
} false_ps;

static void *play_false_ps(void *arg)
{
    false_ps *p = arg;
    struct pollfd pfd = {p->listener, POLLIN, 0};
    if (poll(&pfd, 1, 10000) != 1)
        return NULL;
    int fd = accept(p->listener, NULL, NULL);
    struct timeval deadline = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
    fl_wire_buf in = {0}, out = {0};
    fl_wire_message *m = calloc(1, sizeof *m);
    unsigned char nonce[FL_WIRE_PROOF_BYTES] = {7}, proof[FL_WIRE_PROOF_BYTES];
    if (expect_frame(fd, &in, FL_WIRE_HELLO, m)) {
        fl_wire_put_challenge(&out, 0, nonce);
        fl_socket_write_all(fd, out.data, out.len);
    }
    if (expect_frame(fd, &in, FL_WIRE_PROOF, m)) {
        const char other[] = "not the cluster's secret at all";
        fl_handshake_proof((const unsigned char *)other, strlen(other), FL_PROVER_SERVER, m->u.handshake.nonce,
                           "ps", 0, proof);
        fl_wire_buf_consume(&out, out.len);
        fl_wire_put_server_proof(&out, 0, proof);
        fl_wire_put_hello_ok(&out, 0, "ps", 0);
        fl_socket_write_all(fd, out.data, out.len);
    }
    expect_frame(fd, &in, FL_WIRE_GOODBYE, m); /* until the worker hangs up */
    close(fd);
    fl_wire_buf_free(&in);
    fl_wire_buf_free(&out);
    free(m);
    return NULL;
}

static void test_false_ps(void)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server *open_ps = start_ps(NULL, &spec, &port, log);
    double seconds;
    fl_task_client *c = open_client(port, good_file, 0, &seconds);
    ok(!c && fl_last_error_code() == FL_UNAUTHENTICATED, "a ps that never asks for the secret is refused: %s",
       fl_last_error());
    ok(seconds < 5, "at once (%.2f s)", seconds);
    fl_server_stop(open_ps);
    fl_cluster_free(spec);
    fclose(log);

    false_ps p = {.listener = -1};
    port = 0;
    p.listener = loopback_bind(&port, 1);
    pthread_t thread;
    pthread_create(&thread, NULL, play_false_ps, &p);
    c = open_client(port, good_file, 0, &seconds);
    ok(!c && fl_last_error_code() == FL_UNAUTHENTICATED, "a ps with a wrong proof is refused: %s", fl_last_error());
    contains(fl_last_error(), "proof of the cluster secret is wrong", "the worker says why");
    pthread_join(thread, NULL);
    close(p.listener);
}

static void test_secret_files(void)
{
    char loose[96], short_file[96];
    snprintf(loose, sizeof loose, "%s/loose", dir);
    snprintf(short_file, sizeof short_file, "%s/short", dir);
    write_file(loose, SECRET, 0644);
    write_file(short_file, "abc\n", 0600);
    fl_cluster *c = fl_cluster_from_flags("127.0.0.1:1", "127.0.0.1:2", "worker", 0);
    ok(fl_cluster_set_secret_file(c, loose) != 0 && fl_last_error_code() == FL_PERMISSION_DENIED,
       "a secret file others can read is refused: %s", fl_last_error());
    contains(fl_last_error(), "chmod 600", "with the fix");
    ok(fl_cluster_set_secret_file(c, short_file) != 0 && fl_last_error_code() == FL_INVALID_ARGUMENT,
       "a secret of 3 bytes is refused: %s", fl_last_error());
    ok(fl_cluster_set_secret_file(c, "/no/such/secret") != 0 && fl_last_error_code() == FL_NOT_FOUND,
       "a missing file is refused: %s", fl_last_error());
    setenv("FLOWLAB_CLUSTER_SECRET_FILE", loose, 1);
    fl_cluster_security_flags none = {0};
    ok(fl_cluster_apply_security(c, &none) != 0, "FLOWLAB_CLUSTER_SECRET_FILE is read when no flag is given");
    contains(fl_last_error(), "FLOWLAB_CLUSTER_SECRET_FILE: ", "and named in the error");
    fl_cluster_security_flags flag = {.secret_file = good_file};
    ok(fl_cluster_apply_security(c, &flag) == 0, "the flag wins over the environment");
    unsetenv("FLOWLAB_CLUSTER_SECRET_FILE");
    fl_cluster_free(c);
    unlink(loose);
    unlink(short_file);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/flowlab_secret_XXXXXX");
    if (!mkdtemp(dir))
        skip_all("no temporary directory");
    snprintf(good_file, sizeof good_file, "%s/secret", dir);
    snprintf(wrong_file, sizeof wrong_file, "%s/wrong", dir);
    write_file(good_file, SECRET, 0600);
    write_file(wrong_file, "fedcba9876543210fedcba9876543210\n", 0600);
    test_secret_files();
    test_strangers_change_nothing();
    test_replay_refused();
    test_false_ps();
    unlink(good_file);
    unlink(wrong_file);
    rmdir(dir);
    return done_testing();
}
