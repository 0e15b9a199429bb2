/* test_summary.c: the event files of src/summary/ read back by our own
 * TFRecord reader and protobuf-c: CRC-32C against the published vectors
 * (both the SSE4.2 and the table path), each record's masked CRCs, the
 * scalar, histogram and graph events, and a run killed mid-training that
 * leaves only whole records. TensorBoard's own reader: tests/tensorboard.t. */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flowlab.h"
#include "summary_internal.h"
#include "tap.h"

#define MAX_EVENTS 64

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Decodes every whole record of path into events; returns how many, or -1
 * when a CRC is wrong. A cut last record ends the file quietly. */
static int read_events(const char *path, Tensorflow__Event **events)
{
    size_t len = 0;
    FILE *f = fopen(path, "rb");
    static unsigned char buf[1 << 20];
    if (f) {
        len = fread(buf, 1, sizeof buf, f);
        fclose(f);
    }
    int n = 0;
    for (size_t at = 0; at + 12 <= len && n < MAX_EVENTS;) {
        uint64_t size = get_le(buf + at, 8);
        if (at + 16 + size > len)
            break;
        if (get_le(buf + at + 8, 4) != fl_masked_crc32c(buf + at, 8) ||
            get_le(buf + at + 12 + size, 4) != fl_masked_crc32c(buf + at + 12, size))
            return -1;
        events[n++] = tensorflow__event__unpack(NULL, size, buf + at + 12);
        at += 16 + size;
    }
    return n;
}

static void free_events(Tensorflow__Event **events, int n)
{
    for (int i = 0; i < n; i++)
        tensorflow__event__free_unpacked(events[i], NULL);
}

static void test_crc32c(void)
{
    unsigned char zeros[32] = {0}, ones[32];
    memset(ones, 0xFF, sizeof ones);
    ok(fl_crc32c("123456789", 9) == 0xE3069283u, "crc32c(\"123456789\") is 0xE3069283 (the check value)");
    ok(fl_crc32c_table("123456789", 9) == 0xE3069283u, "the table fallback gives the same");
    ok(fl_crc32c(zeros, 32) == 0x8A9136AAu && fl_crc32c_table(zeros, 32) == 0x8A9136AAu,
       "32 zero bytes: 0x8A9136AA (RFC 3720)");
    ok(fl_crc32c(ones, 32) == 0x62A8AB43u && fl_crc32c_table(ones, 32) == 0x62A8AB43u,
       "32 0xFF bytes: 0x62A8AB43 (RFC 3720)");
}

static fl_graph *small_graph(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    fl_variable_scope_push(g, "dense", FL_REUSE_INHERIT);
    fl_node *w = fl_get_variable(g, "kernel", fl_shape_make(2, 3, 2), fl_zeros_initializer());
    fl_variable_scope_pop(g);
    fl_name_scope_push(g, "dense");
    fl_matmul(g, x, w, false, false, NULL);
    fl_name_scope_pop(g);
    return g;
}

static void test_events(const char *dir)
{
    fl_summary_file_writer *w = fl_summary_file_writer_new(dir);
    if (!ok(w != NULL, "a writer in %s", dir)) {
        diag("%s", fl_last_error());
        return;
    }
    float values[] = {-1, 0, 0.5f, 2, 2};
    fl_tensor *t = fl_tensor_from_floats(fl_shape_make(1, 5), values);
    fl_graph *g = small_graph();
    ok(fl_summary_add_scalar(w, "loss", 0.25, 100) == 0, "a scalar");
    ok(fl_summary_add_histogram(w, "dense/kernel", t, 100) == 0, "a histogram");
    ok(fl_summary_add_graph(w, g) == 0, "the graph");
    char path[512];
    snprintf(path, sizeof path, "%s", fl_summary_file_writer_path(w));
    ok(fl_summary_file_writer_close(w) == 0, "closed");
    Tensorflow__Event *ev[MAX_EVENTS];
    int n = read_events(path, ev);
    if (!ok(n == 4, "4 whole records with good CRCs (got %d)", n))
        return;
    is_string(ev[0]->file_version, "brain.Event:2", "the first record is the file's version");
    Tensorflow__Summary__Value *loss = ev[1]->summary->value[0];
    ok(ev[1]->step == 100 && strcmp(loss->tag, "loss") == 0 && loss->simple_value == 0.25f, "loss 0.25 at step 100");
    Tensorflow__HistogramProto *h = ev[2]->summary->value[0]->histo;
    double counted = 0;
    for (size_t b = 0; b < h->n_bucket; b++)
        counted += h->bucket[b];
    ok(h->min == -1 && h->max == 2 && h->num == 5 && h->sum == 3.5 && counted == 5 && h->n_bucket == 30 &&
       h->bucket_limit[29] == 2, "the histogram's range, count, sum and 30 buckets");
    Tensorflow__GraphDef *gd = tensorflow__graph_def__unpack(NULL, ev[3]->graph_def.len, ev[3]->graph_def.data);
    ok(gd && gd->n_node == (size_t)fl_graph_node_count(g), "the GraphDef has every node");
    const Tensorflow__NodeDef *mm = gd ? gd->node[gd->n_node - 1] : NULL;
    ok(mm && strcmp(mm->name, "dense/MatMul") == 0 && strcmp(mm->op, "MatMul") == 0 && mm->n_input == 2 &&
       strcmp(mm->input[1], "dense/kernel") == 0, "dense/MatMul with its op and inputs");
    tensorflow__graph_def__free_unpacked(gd, NULL);
    free_events(ev, n);
    fl_graph_free(g);
    fl_tensor_free(t);
}

/* A child writes 20 scalars, flushing at each, and is killed: the file
 * holds the version and the 20 records, every one whole. */
static void test_killed_run(const char *dir)
{
    pid_t child = fork();
    if (child == 0) {
        setenv("FLOWLAB_SUMMARY_FLUSH_SECS", "0", 1);
        fl_summary_file_writer *w = fl_summary_file_writer_new(dir);
        for (int step = 1; w && step <= 20; step++)
            fl_summary_add_scalar(w, "loss", 1.0 / step, step);
        raise(SIGKILL);
        _exit(1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writing child was killed");
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[1024] = "";
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, "tfevents"))
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    Tensorflow__Event *ev[MAX_EVENTS];
    int n = read_events(path, ev);
    ok(n == 21 && ev[20]->step == 20, "the killed run's file reads to its last record (%d records)", n);
    free_events(ev, n > 0 ? n : 0);
}

/* Without a flush, the writer's thread writes a record within about
 * FLOWLAB_SUMMARY_FLUSH_SECS (0.2 s here; the test waits up to 20 s). */
static void test_flush_thread(const char *dir)
{
    setenv("FLOWLAB_SUMMARY_FLUSH_SECS", "0.2", 1);
    fl_summary_file_writer *w = fl_summary_file_writer_new(dir);
    unsetenv("FLOWLAB_SUMMARY_FLUSH_SECS");
    if (!ok(w != NULL, "a writer that flushes every 0.2 s"))
        return;
    fl_summary_add_scalar(w, "loss", 0.5, 1);
    Tensorflow__Event *ev[MAX_EVENTS];
    int n = 0;
    for (int tries = 0; tries < 200 && n < 2; tries++) {
        usleep(100 * 1000);
        free_events(ev, n);
        n = read_events(fl_summary_file_writer_path(w), ev);
    }
    ok(n == 2, "the thread wrote the scalar without a flush (%d records after waiting)", n);
    free_events(ev, n > 0 ? n : 0);
    ok(fl_summary_file_writer_close(w) == 0, "closing stops the thread");
}

static void test_errors(const char *dir)
{
    char file[600];
    snprintf(file, sizeof file, "%s/not_a_dir", dir);
    fclose(fopen(file, "w"));
    ok(fl_summary_file_writer_new(file) == NULL && fl_last_error_code() == FL_INVALID_ARGUMENT,
       "a log dir that is a file is refused");
    contains(fl_last_error(), "not_a_dir", "the message names it");
    ok(fl_summary_add_scalar(NULL, "loss", 1, 1) == -1, "no writer: an error, not a crash");
    unlink(file);
}

static void remove_temp_dir(const char *dir)
{
    char command[700];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0)
        diag("could not remove %s", dir);
}

int main(void)
{
    char dir[] = "/tmp/test_summary.XXXXXX", killed[600];
    if (!mkdtemp(dir))
        skip_all("cannot make a temporary directory");
    test_crc32c();
    test_events(dir);
    test_errors(dir);
    snprintf(killed, sizeof killed, "%s/flushed", dir);
    test_flush_thread(killed);
    snprintf(killed, sizeof killed, "%s/killed", dir);
    test_killed_run(killed);
    remove_temp_dir(dir);
    return done_testing();
}
