/* test_server_bounds.c: a ps with a cluster secret, in a child process
 * whose descriptors are limited to 64, attacked before authentication
 * (server_guard.c) while a worker with the secret trains beside: a
 * slowloris that sends a byte of HELLO every 200 ms on 150 connections
 * (held past 64 descriptors, so accept fails), a stranger that announces a
 * 60 MB REGISTER_PARTITION before HELLO_OK, and a stranger's GOODBYE. The worker's every
 * update lands, the trickling connections are all dropped by the deadline,
 * the log stays small, and the ps exits 0 once the worker says goodbye.
 * Then goodbyes (server_stats.c), on a ps without a secret on this
 * process's thread: a `client`'s and a ps task's goodbye do not end a ps
 * whose worker is still there. Which stranger makes room for a newcomer.
 * Every wait has a deadline; the child is
 * killed by its pid. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "runtime.h"
#include "distributed_runtime/partition/cluster_security.h"
#include "distributed_runtime/partition/partition_def.h"
#include "distributed_runtime/transport/frame_reader.h"
#include "distributed_runtime/transport/socket_writer.h"
#include "counter_partition.h"
#include "loopback.h"

#define ATTACKERS 150
#define UPDATES 300
#define WIDTH 64

static const char SECRET[] = "0123456789abcdef0123456789abcdef\n";
static char dir[64], secret_file[96], log_path[96];

static void write_secret(void)
{
    snprintf(dir, sizeof dir, "/tmp/flowlab_bounds_XXXXXX");
    if (!mkdtemp(dir))
        diag("cannot make a temporary directory");
    snprintf(secret_file, sizeof secret_file, "%s/secret", dir);
    snprintf(log_path, sizeof log_path, "%s/ps.log", dir);
    int fd = open(secret_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, SECRET, strlen(SECRET)) != (ssize_t)strlen(SECRET))
        diag("cannot write %s", secret_file);
    close(fd);
}

/* The child: a ps of one worker, 64 descriptors, a 1 s hello deadline;
 * it exits 0 once the worker has said goodbye, 2 after 60 s. */
static void run_ps(const char *ps_hosts, const char *worker_hosts)
{
    struct rlimit few = {64, 64};
    setrlimit(RLIMIT_NOFILE, &few);
    FILE *log = fopen(log_path, "w");
    fl_cluster *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    if (!log || !spec || fl_cluster_set_secret_file(spec, secret_file) != 0)
        _exit(3);
    fl_server_options options = {.log = log, .hello_timeout_s = 1};
    fl_server *ps = fl_server_start(spec, &options);
    if (!ps)
        _exit(4);
    int rc = fl_server_join(ps, 60) == 0 ? 0 : 2;
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fclose(log);
    _exit(rc);
}

static fl_task_client *open_worker(int port, fl_cluster *mine)
{
    fl_connect_options o = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 30,
                            .job = "ps", .task = 0};
    o.secret = fl_cluster_secret(mine, &o.secret_len);
    return fl_task_client_open(&o, "worker", 0);
}

/* Opens the attackers' connections, as many as the kernel takes (the ps accepts only some). */
static int open_attackers(int port, int fds[ATTACKERS])
{
    int opened = 0;
    for (int i = 0; i < ATTACKERS; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        connect(fds[i], (struct sockaddr *)&a, sizeof a);
        opened += fds[i] >= 0;
    }
    return opened;
}

/* One byte of a HELLO to every attacker still open; how many are open. */
static int trickle(int fds[ATTACKERS], const unsigned char *hello, size_t at)
{
    int open_count = 0;
    for (int i = 0; i < ATTACKERS; i++) {
        if (fds[i] < 0)
            continue;
        char drain[256];
        ssize_t n = recv(fds[i], drain, sizeof drain, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINPROGRESS &&
                       errno != ENOTCONN)) {
            close(fds[i]);
            fds[i] = -1;
            continue;
        }
        send(fds[i], hello + at, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        open_count++;
    }
    return open_count;
}

/* A stranger announces a 60 MB REGISTER_PARTITION before HELLO_OK: refused from the header. */
static bool big_frame_refused_from_header(int port)
{
    unsigned char header[20] = {'F', 'L', 'W', 'P', 2, 20, 0, 0, 0, 0, 0, 1, 0x03, 0x90, 0, 0, 0, 0, 0, 0};
    int fd = loopback_connect(port, 10);
    if (fd < 0)
        return false;
    fl_socket_write_all(fd, header, sizeof header);
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_status why = {0};
    bool refused = fl_read_frame(fd, &buf, &f, &why) == 1 && f.type == FL_WIRE_ERROR;
    fl_wire_message *m = fl_xmalloc(sizeof *m);
    refused = refused && fl_wire_parse(&f, m, &why) == 0 &&
              strstr(m->u.error.message, "REGISTER_PARTITION before HELLO") != NULL;
    if (!refused)
        diag("the ps said: %s", m->type == FL_WIRE_ERROR ? m->u.error.message : why.message);
    free(m);
    fl_wire_buf_free(&buf);
    close(fd);
    return refused;
}

/* The worker's training: UPDATES steps of w -= 1 on its partition on the
 * ps, the attack going on; *w gets w's last value. */
static int train(fl_task_client *c, int fds[ATTACKERS], const unsigned char *hello, size_t hello_len,
                 int *most_open, fl_tensor **w)
{
    fl_tensor *minus_ones = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, WIDTH));
    for (int i = 0; i < WIDTH; i++)
        fl_tensor_floats(minus_ones)[i] = -1;
    uint64_t handle = counter_register(c, WIDTH);
    int failures = !handle || counter_step(c, handle, 1, NULL, NULL) != 0;
    double next_byte = fl_now_s();
    for (int i = 0, at = 0; i < UPDATES; i++) {
        failures += handle && counter_step(c, handle, 2 + (uint64_t)i, minus_ones, w) != 0;
        if (fl_now_s() >= next_byte && (size_t)at < hello_len - 1) { /* never the last byte */
            int open_count = trickle(fds, hello, (size_t)at++);
            *most_open = open_count > *most_open ? open_count : *most_open;
            next_byte = fl_now_s() + 0.2;
        }
        struct timespec pause = {0, 5 * 1000 * 1000}; /* a worker computes between steps */
        nanosleep(&pause, NULL);
    }
    fl_tensor_free(minus_ones);
    return failures;
}

/* Waits up to `seconds` for every attacker to be closed by the ps. */
static int still_open_after(int fds[ATTACKERS], double seconds)
{
    double end = fl_now_s() + seconds;
    int open_count = ATTACKERS;
    while (open_count > 0 && fl_now_s() < end) {
        open_count = 0;
        for (int i = 0; i < ATTACKERS; i++) {
            if (fds[i] < 0)
                continue;
            char drain[256];
            ssize_t n = recv(fds[i], drain, sizeof drain, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno == ECONNRESET)) {
                close(fds[i]);
                fds[i] = -1;
            } else {
                open_count++;
            }
        }
        poll(NULL, 0, 50);
    }
    return open_count;
}

/* The worker's goodbye on its own connection; a stranger's GOODBYE before it changes nothing. */
static void say_stranger_goodbye(int port)
{
    fl_wire_buf buf = {0};
    fl_wire_put_hello(&buf, 1, "client", 0);
    fl_wire_put_goodbye(&buf, 2);
    int fd = loopback_connect(port, 5);
    if (fd >= 0)
        fl_socket_write_all(fd, buf.data, buf.len);
    fl_wire_frame f;
    fl_status why = {0};
    while (fd >= 0 && fl_read_frame(fd, &buf, &f, &why) == 1)
        ; /* CHALLENGE, then ERROR and the end */
    if (fd >= 0)
        close(fd);
    fl_wire_buf_free(&buf);
}

/* The child's exit status within `seconds`, or -1 (then it is killed). */
static int wait_child(pid_t pid, double seconds)
{
    int status;
    for (double end = fl_now_s() + seconds; fl_now_s() < end; poll(NULL, 0, 20))
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void attack_while_training(fl_task_client *worker, int port, pid_t ps)
{
    static int fds[ATTACKERS];
    fl_wire_buf hello = {0};
    fl_wire_put_hello(&hello, 1, "worker", 0);
    ok(open_attackers(port, fds) == ATTACKERS, "%d attackers connect", ATTACKERS);
    ok(big_frame_refused_from_header(port),
       "a 60 MB REGISTER_PARTITION announced before HELLO_OK is refused from its header");
    say_stranger_goodbye(port);
    int most_open = 0;
    double start = fl_now_s();
    fl_tensor *last = NULL;
    int failures = train(worker, fds, hello.data, hello.len, &most_open, &last);
    ok(failures == 0, "the worker with the secret trained %d steps under the attack in %.1f s", UPDATES,
       fl_now_s() - start);
    const float *w = last ? fl_tensor_floats(last) : (const float[WIDTH]){0};
    ok(w[0] == -UPDATES && w[WIDTH - 1] == -UPDATES, "every update landed: w = %g (want %d)", (double)w[0],
       -UPDATES);
    fl_tensor_free(last);
    int left = still_open_after(fds, 5);
    ok(left == 0, "every trickling connection was dropped by the 1 s deadline (%d still open after 5 s more)", left);
    ok(waitpid(ps, NULL, WNOHANG) == 0, "the stranger's GOODBYE as client did not end the ps");
    fl_wire_buf_free(&hello);
}

/* A ps without a secret on this process's thread, in a cluster on free loopback ports. */
static fl_server *start_local_ps(const fl_server_options *options, fl_cluster **spec, int *port)
{
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    *port = atoi(strchr(ps_hosts, ':') + 1);
    *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    return fl_server_start(*spec, options);
}

/* HELLO as job/task, then GOODBYE; true when the GOODBYE was answered OK. */
static bool goodbye_as(int port, const char *job, int task)
{
    fl_wire_buf buf = {0};
    fl_wire_put_hello(&buf, 1, job, (uint32_t)task);
    fl_wire_put_goodbye(&buf, 2);
    int fd = loopback_connect(port, 5);
    if (fd >= 0)
        fl_socket_write_all(fd, buf.data, buf.len);
    fl_wire_frame f;
    fl_status why = {0};
    bool welcomed = fd >= 0 && fl_read_frame(fd, &buf, &f, &why) == 1 &&
                    f.type == FL_WIRE_HELLO_OK;
    bool answered = welcomed && fl_read_frame(fd, &buf, &f, &why) == 1 &&
                    f.type == FL_WIRE_OK;
    if (fd >= 0)
        close(fd);
    fl_wire_buf_free(&buf);
    return answered;
}

static void test_goodbyes_from_others(void)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server_options options = {.log = log};
    fl_server *ps = start_local_ps(&options, &spec, &port);
    fl_connect_options o = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 10};
    fl_task_client *worker = ps ? fl_task_client_open(&o, "worker", 0) : NULL;
    bool has_value = true;
    ok(worker && fl_task_client_wait(worker, fl_task_client_is_initialized(worker, "w", &has_value)) == 0 &&
           !has_value, "a ps without a secret serves worker 0 (%s)", worker ? "" : fl_last_error());
    ok(goodbye_as(port, "client", 0), "a stranger's GOODBYE as client is answered");
    ok(fl_server_join(ps, 0.3) == 1, "but does not end a ps that serves workers");
    ok(goodbye_as(port, "ps", 0), "a GOODBYE from /job:ps/task:0 is answered");
    ok(fl_server_join(ps, 0.3) == 1, "but is not counted as worker 0's");
    ok(worker && fl_task_client_goodbye(worker) == 0 && fl_server_join(ps, 10) == 0,
       "worker 0's own goodbye ends the ps");
    if (worker)
        fl_task_client_close(worker);
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fclose(log);
}

/* A raw connection that registers a partition holding a 256 KB variable
 * `big` and initialises it; its handle, or 0. */
static uint64_t register_big(int fd, fl_wire_buf *buf)
{
    fl_graph_partition p = {.task = 0};
    snprintf(p.job, sizeof p.job, "ps");
    p.graph = fl_graph_new();
    fl_get_variable(p.graph, "big", fl_shape_make(1, 65536), fl_zeros_initializer());
    fl_wire_buf graph = {0};
    fl_partition_def_encode(&p, &graph);
    fl_graph_partition_free(&p);
    const char *init[] = {"big/Assign"};
    fl_wire_name_list lists[2] = {{0, NULL}, {1, init}};
    fl_wire_put_hello(buf, 1, "worker", 0);
    fl_wire_put_register_partition(buf, 2, graph.data, graph.len);
    fl_wire_put_run_partition(buf, 3, 1, 1, 0, 0, NULL, NULL, lists); /* the first handle a ps gives is 1 */
    fl_wire_buf_free(&graph);
    fl_socket_write_all(fd, buf->data, buf->len);
    fl_wire_frame f;
    fl_status why = {0};
    uint64_t handle = 0;
    bool welcomed = fl_read_frame(fd, buf, &f, &why) == 1 && f.type == FL_WIRE_HELLO_OK;
    bool registered = welcomed && fl_read_frame(fd, buf, &f, &why) == 1 && fl_wire_parse_number(&f, &handle, &why) == 0;
    bool ran = registered && fl_read_frame(fd, buf, &f, &why) == 1 && f.type == FL_WIRE_PARTITION_DONE;
    buf->len = 0;
    return ran ? handle : 0;
}

/* A client that runs 200 steps fetching a 256 KB variable and reads
 * nothing: the ps queues at most about --max_unread_reply_bytes (1 MiB
 * here), then every reply still comes once it reads. */
static void test_unread_replies(void)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server_options options = {.log = log, .max_unread_reply_bytes = 1 << 20};
    fl_server *ps = start_local_ps(&options, &spec, &port);
    int fd = ps ? loopback_connect(port, 10) : -1;
    fl_wire_buf buf = {0};
    uint64_t handle = fd >= 0 ? register_big(fd, &buf) : 0;
    ok(handle == 1, "a partition holding a variable of 256 KB, initialised (handle %llu)", (unsigned long long)handle);
    const char *fetch[] = {"big"};
    fl_wire_name_list lists[2] = {{1, fetch}, {0, NULL}};
    for (uint32_t i = 0; i < 200; i++)
        fl_wire_put_run_partition(&buf, 4 + i, handle, 2 + i, 0, 0, NULL, NULL, lists);
    if (fd >= 0)
        fl_socket_write_all(fd, buf.data, buf.len);
    fl_server_stats st = {0};
    for (double end = fl_now_s() + 2; fl_now_s() < end; poll(NULL, 0, 50))
        fl_server_get_stats(ps, &st);
    /* 1 MiB in the ps, the rest in the kernel's socket buffers; 52 MB without the cap */
    ok(st.bytes_out < 16u << 20, "with no reader, the ps sent %llu bytes of 200 x 256 KB and paused",
       (unsigned long long)st.bytes_out);
    fl_wire_frame f;
    fl_status why = {0};
    int values = 0;
    for (int i = 0; i < 201 && fd >= 0 && fl_read_frame(fd, &buf, &f, &why) == 1; i++)
        values += f.type == FL_WIRE_PARTITION_DONE;
    ok(values == 200, "once read, all 200 replies come (%d)", values);
    if (fd >= 0)
        close(fd);
    fl_wire_buf_free(&buf);
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fclose(log);
}

/* A partition with variables `names` (1 float each) registered on c,
 * then initialised: 0, or -1 as fl_partition_run_remote. */
static int add_variables(fl_task_client *c, const char *const *names, int count)
{
    fl_graph_partition p = {.task = 0};
    snprintf(p.job, sizeof p.job, "ps");
    p.graph = fl_graph_new();
    const char *inits[4];
    char init_names[4][32];
    for (int i = 0; i < count && i < 4; i++) {
        fl_get_variable(p.graph, names[i], fl_shape_make(1, 1), fl_zeros_initializer());
        snprintf(init_names[i], sizeof init_names[i], "%s/Assign", names[i]);
        inits[i] = init_names[i];
    }
    uint64_t handle;
    int rc = fl_partition_register(c, &p, &handle);
    fl_graph_partition_free(&p);
    fl_partition_run run = {.step_id = 1, .target_names = inits, .ntargets = count};
    return rc == 0 ? fl_partition_run_remote(c, handle, &run, NULL, NULL) : rc;
}

/* --max_variables 2: partitions bringing a and b run, and one that shares
 * a; one that would bring a third fails, naming the flag. */
static void test_max_variables(void)
{
    fl_cluster *spec;
    int port;
    FILE *log = tmpfile();
    fl_server_options options = {.log = log, .max_variables = 2};
    fl_server *ps = start_local_ps(&options, &spec, &port);
    fl_connect_options o = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 10};
    fl_task_client *worker = ps ? fl_task_client_open(&o, "worker", 0) : NULL;
    const char *ab[] = {"a", "b"}, *a_again[] = {"a"}, *third[] = {"a", "c"};
    ok(worker && add_variables(worker, ab, 2) == 0 && add_variables(worker, a_again, 1) == 0,
       "partitions holding a and b, then a again, run (%s)", worker ? fl_last_error() : "no worker");
    ok(worker && add_variables(worker, third, 2) != 0 && fl_last_error_code() == FL_RESOURCE_EXHAUSTED,
       "one that brings a third variable fails (--max_variables 2): %s", fl_last_error());
    contains(fl_last_error(), "--max_variables", "the error names the flag");
    if (worker)
        fl_task_client_close(worker);
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fclose(log);
}

/* Silent strangers past --max_unauthenticated_per_address 4: the oldest
 * are dropped, the newest 4 held until their deadline. */
static void test_strangers_per_address(void)
{
    enum { STRANGERS = 10 };
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    int port = atoi(strchr(ps_hosts, ':') + 1), fds[STRANGERS], left = STRANGERS;
    fl_cluster *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    FILE *log = tmpfile();
    fl_server_options options = {.log = log, .max_unauthenticated_per_address = 4};
    fl_server *ps = fl_server_start(spec, &options);
    for (int i = 0; i < STRANGERS; i++)
        fds[i] = loopback_connect(port, 1);
    for (double end = fl_now_s() + 5; left > 4 && fl_now_s() < end; poll(NULL, 0, 20)) {
        left = 0;
        for (int i = 0; i < STRANGERS; i++) {
            char b;
            if (fds[i] >= 0 && recv(fds[i], &b, 1, MSG_DONTWAIT) == 0) {
                close(fds[i]);
                fds[i] = -1;
            }
            left += fds[i] >= 0;
        }
    }
    ok(left == 4, "of %d silent connections from one address, %d are held (waited up to 5 s for 4)", STRANGERS,
       left);
    ok(fds[STRANGERS - 1] >= 0 && fds[0] < 0, "the newest stay, the oldest went");
    for (int i = 0; i < STRANGERS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    fl_server_stop(ps);
    fflush(log);
    rewind(log);
    char text[4096] = "";
    text[fread(text, 1, sizeof text - 1, log)] = '\0';
    contains(text, "--max_unauthenticated_per_address", "the log names the flag");
    fl_cluster_free(spec);
    fclose(log);
}

/* Whether fd's peer closes within `seconds` (EOF); bytes before it are read. */
static bool closed_within(int fd, double seconds)
{
    for (double end = fl_now_s() + seconds; fl_now_s() < end;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        char b[256];
        ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
    }
    return false;
}

/* Which stranger makes room (server_guard.c's eviction_rank), with room for
 * 3 from one address: two that sent a byte of HELLO go first, then the
 * oldest not yet heard; one that sent a whole HELLO and is being
 * challenged for the secret stays, although it is older. */
static void test_eviction_order(void)
{
    write_secret();
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    int port = atoi(strchr(ps_hosts, ':') + 1);
    fl_cluster *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    fl_cluster_set_secret_file(spec, secret_file);
    FILE *log = tmpfile();
    fl_server_options options = {.log = log, .max_unauthenticated_per_address = 3};
    fl_server *ps = fl_server_start(spec, &options);
    fl_wire_buf hello = {0};
    fl_wire_put_hello(&hello, 1, "worker", 0);
    int trickling[2], proving = -1, silent[3];
    for (int i = 0; i < 2; i++) {
        trickling[i] = loopback_connect(port, 1);
        send(trickling[i], hello.data, 1, MSG_NOSIGNAL);
    }
    proving = loopback_connect(port, 1);
    send(proving, hello.data, hello.len, MSG_NOSIGNAL);
    struct pollfd p = {.fd = proving, .events = POLLIN};
    ok(poll(&p, 1, 5000) == 1, "the stranger that sent a whole HELLO is challenged (waited up to 5 s)");
    bool order_kept = true;
    for (int i = 0; i < 3; i++) {
        silent[i] = loopback_connect(port, 1);
        int victim = i < 2 ? trickling[i] : silent[0];
        if (!closed_within(victim, 5)) {
            diag("after silent connection %d: waited 5 s for %s to be dropped", i + 1,
                 i < 2 ? "a trickling one" : "the oldest silent one");
            order_kept = false;
        }
    }
    ok(order_kept, "the trickling strangers went first, then the oldest silent one");
    ok(!closed_within(proving, 0.2), "the stranger proving the secret is still held, though the oldest left");
    for (int i = 0; i < 2; i++)
        close(trickling[i]);
    for (int i = 0; i < 3; i++)
        close(silent[i]);
    close(proving);
    fl_wire_buf_free(&hello);
    fl_server_stop(ps);
    fl_cluster_free(spec);
    fclose(log);
    unlink(secret_file);
    rmdir(dir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    write_secret();
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    int port = atoi(strchr(ps_hosts, ':') + 1);
    pid_t ps = fork();
    if (ps == 0)
        run_ps(ps_hosts, worker_hosts);
    fl_cluster *mine = fl_cluster_from_flags(ps_hosts, worker_hosts, "worker", 0);
    fl_cluster_set_secret_file(mine, secret_file);
    fl_task_client *worker = open_worker(port, mine);
    ok(worker != NULL, "the worker with the secret connects (%s)", worker ? "" : fl_last_error());
    if (worker) {
        attack_while_training(worker, port, ps);
        ok(fl_task_client_goodbye(worker) == 0, "the worker says goodbye");
        fl_task_client_close(worker);
    }
    int rc = wait_child(ps, 20);
    ok(rc == 0, "the ps exits 0 after the worker's goodbye (status %d; -1: killed after 20 s)", rc);
    long size = file_size(log_path);
    ok(size >= 0 && size < 64 * 1024, "the ps's log stays small under the attack (%ld bytes)", size);
    char *text = NULL;
    FILE *f = fopen(log_path, "r");
    if (f) {
        text = calloc(1, 64 * 1024 + 1);
        fread(text, 1, 64 * 1024, f);
        fclose(f);
    }
    contains(text ? text : "", "no HELLO_OK within 1 s", "the log names the deadline");
    contains(text ? text : "", "cannot accept connections", "and that accepting paused, in a few lines");
    if (text && (!strstr(text, "cannot accept") || getenv("FLOWLAB_TEST_VERBOSE")))
        diag("the ps's log:\n%s", text);
    free(text);
    fl_cluster_free(mine);
    unlink(secret_file);
    unlink(log_path);
    rmdir(dir);
    test_goodbyes_from_others();
    test_unread_replies();
    test_max_variables();
    test_strangers_per_address();
    test_eviction_order();
    return done_testing();
}
