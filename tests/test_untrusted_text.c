/* test_untrusted_text.c: bytes from files and peers reach log lines and
 * errors escaped (fl_escape_untrusted, src/untrusted_text.c): the function
 * itself; a checkpoint whose tensor name was corrupted (the finding:
 * "tensor '\xa5onv_1/kernel' is corrupted" put the raw byte on the
 * terminal); a TF_CONFIG whose job name and address hold control bytes;
 * a peer's job name and a peer's refusal text in a ps's log and a worker's
 * error. No message may hold a byte outside ' '..'~'. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "distributed_runtime/transport/frame_reader.h"
#include "distributed_runtime/transport/task_client.h"
#include "distributed_runtime/transport/socket_writer.h"
#include "loopback.h"

static bool printable(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if (*p < ' ' || *p > '~')
            return false;
    return true;
}

static void test_the_function(void)
{
    char out[64];
    size_t n = fl_escape_untrusted("\xa5onv_1/kernel", 13, out, sizeof out);
    is_string(out, "\\xa5onv_1/kernel", "a high byte becomes \\xa5");
    ok(n == strlen(out), "the length is returned (%zu)", n);
    fl_escape_untrusted("a\nb\x1b[2J\\c", 9, out, sizeof out);
    is_string(out, "a\\x0ab\\x1b[2J\\\\c", "a newline, an ESC and a backslash are escaped");
    fl_escape_untrusted("ab\x01", 3, out, 5);
    is_string(out, "ab", "a short buffer is cut between escapes, never inside one");
    fl_escape_untrusted("x\0y", 3, out, sizeof out);
    is_string(out, "x\\x00y", "a NUL inside the length is shown, not an end");
    ok(fl_escape_untrusted("abc", 3, out, 0) == 0, "an empty buffer is left alone");
}

/* The finding: a checkpoint whose name's first byte changed to 0xa5. */
static void test_checkpoint_name(void)
{
    char path[] = "/tmp/flowlab_untrusted_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    float values[2] = {1, 2};
    fl_named_tensor t = {"conv_1/kernel", fl_tensor_from_floats(fl_shape_make(1, 2), values)};
    ok(fl_checkpoint_write(path, &t, 1) == 0, "a checkpoint is written");
    FILE *f = fopen(path, "r+b");
    unsigned char bytes[4096];
    size_t len = f ? fread(bytes, 1, sizeof bytes, f) : 0;
    unsigned char *name = NULL;
    for (size_t i = 0; i + 13 <= len && !name; i++)
        name = memcmp(bytes + i, "conv_1/kernel", 13) == 0 ? bytes + i : NULL;
    if (f && name) {
        fseek(f, (long)(name - bytes), SEEK_SET);
        fputc(0xa5, f);
    }
    if (f)
        fclose(f);
    fl_named_tensor *read = NULL;
    int n = 0;
    ok(fl_checkpoint_read(path, &read, &n) != 0, "the damaged checkpoint is refused: %s", fl_last_error());
    contains(fl_last_error(), "tensor '\\xa5onv_1/kernel'", "naming the tensor with its byte escaped");
    ok(printable(fl_last_error()), "and no raw byte reaches the message");
    fl_tensor_free(t.tensor);
    unlink(path);
}

static void test_tf_config(void)
{
    fl_cluster *c = fl_cluster_from_tf_config(
        "{\"cluster\": {\"wor\\u001bker\": [\"h:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
    ok(!c, "a TF_CONFIG job name with an ESC is refused");
    contains(fl_last_error(), "wor\\x1bker", "the name is shown escaped");
    ok(printable(fl_last_error()), "and no raw byte reaches the message: %s", fl_last_error());
    c = fl_cluster_from_tf_config(
        "{\"cluster\": {\"worker\": [\"h\\n:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
    ok(!c && printable(fl_last_error()), "an address with a newline is refused, escaped: %s", fl_last_error());
    contains(fl_last_error(), "h\\x0a:1", "the newline shown as \\x0a");
    c = fl_cluster_from_tf_config("{\"a\\u0007\": 1, \"a\\u0007\": 2}");
    ok(!c && printable(fl_last_error()), "a duplicate key is named escaped: %s", fl_last_error());
    contains(fl_last_error(), "duplicate key \"a\\x07\"", "the BEL shown as \x07");
}

/* A peer's words: a job name with a backslash, logged by the ps, and an
 * ERROR's text from a false ps, in a worker's error. */
static void *refuse_with_text(void *arg)
{
    int listener = *(int *)arg, fd = accept(listener, NULL, NULL);
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_status why = {0};
    struct timeval deadline = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
    if (fl_read_frame(fd, &buf, &f, &why) == 1) {
        fl_wire_put_error(&buf, 0, FL_WIRE_E_MISMATCH, "no\\x1b[2J");
        fl_socket_write_all(fd, buf.data, buf.len);
    }
    close(fd);
    fl_wire_buf_free(&buf);
    return NULL;
}

static void test_peer_words(void)
{
    char ps_hosts[64], worker_hosts[64];
    loopback_cluster_hosts(ps_hosts, worker_hosts, sizeof ps_hosts);
    fl_cluster *spec = fl_cluster_from_flags(ps_hosts, worker_hosts, "ps", 0);
    FILE *log = tmpfile();
    fl_server_options options = {.log = log, .hello_timeout_s = 5};
    fl_server *ps = fl_server_start(spec, &options);
    fl_wire_buf buf = {0};
    fl_wire_put_hello(&buf, 1, "ev\\x1bil", 0);
    int fd = loopback_connect(fl_cluster_task_port(spec, "ps", 0), 10);
    fl_socket_write_all(fd, buf.data, buf.len);
    fl_wire_frame f;
    fl_status why = {0};
    fl_read_frame(fd, &buf, &f, &why); /* the refusal */
    close(fd);
    fl_server_stop(ps);
    fflush(log);
    rewind(log);
    char text[2048] = "";
    text[fread(text, 1, sizeof text - 1, log)] = '\0';
    contains(text, "/job:ev\\\\x1bil/task:0", "a peer's job name is logged with its backslash escaped");
    fclose(log);
    fl_cluster_free(spec);

    int port = 0, listener = loopback_bind(&port, 1);
    pthread_t thread;
    pthread_create(&thread, NULL, refuse_with_text, &listener);
    fl_connect_options o = {.who = "/job:ps/task:0", .host = "127.0.0.1", .port = port, .deadline_s = 10};
    fl_task_client *c = fl_task_client_open(&o, "worker", 0);
    ok(!c, "a ps that refuses the HELLO is not connected to");
    contains(fl_last_error(), "no\\\\x1b[2J", "its words reach the worker's error escaped");
    pthread_join(thread, NULL);
    close(listener);
    fl_wire_buf_free(&buf);
}

int main(void)
{
    test_the_function();
    test_checkpoint_name();
    test_tf_config();
    test_peer_words();
    return done_testing();
}
