/* test_saver.c: fl_session_save and fl_session_restore_latest.
 * A small classifier trained with Adam is saved, restored into a new session
 * bit for bit, trains on identically, and bad checkpoints are refused. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools.h"
#include "tap.h"
#include "flowlab.h"

typedef struct {
    fl_graph *g;
    fl_node *loss, *train, *step;
} model;

/* The whole model on device ("" for none); soft placement lets ops without
 * an accelerator kernel fall back to the host. */
static const fl_session_options OPTIONS = {.allow_soft_placement = true};

static model build_model(const char *device)
{
    model m = {fl_graph_new(), NULL, NULL, NULL};
    fl_device_scope_push(m.g, device);
    const float xs[8] = {0, 0, 0, 1, 1, 0, 1, 1};
    const int32_t ys[4] = {0, 1, 1, 0};
    fl_tensor *xt = fl_tensor_from_floats(fl_shape_make(2, 4, 2), xs);
    fl_tensor *yt = fl_tensor_from_ints(fl_shape_make(1, 4), ys);
    fl_node *x = fl_constant(m.g, xt, "x"), *y = fl_constant(m.g, yt, "y");
    fl_variable_scope_push(m.g, "dense", FL_REUSE_INHERIT);
    fl_node *w = fl_get_variable(m.g, "kernel", fl_shape_make(2, 2, 3), fl_glorot_uniform_initializer(1));
    fl_node *b = fl_get_variable(m.g, "bias", fl_shape_make(1, 3), fl_zeros_initializer());
    fl_variable_scope_pop(m.g);
    fl_node *w2 = fl_get_variable(m.g, "out", fl_shape_make(2, 3, 2), fl_glorot_uniform_initializer(2));
    fl_node *h = fl_tanh(m.g, fl_add(m.g, fl_matmul(m.g, x, w, false, false, NULL), b, NULL), NULL);
    fl_node *logits = fl_matmul(m.g, h, w2, false, false, NULL);
    fl_node *xent = fl_sparse_softmax_cross_entropy_with_logits(m.g, y, logits, NULL);
    m.loss = fl_reduce_mean(m.g, xent, NULL, 0, false, "loss");
    m.step = fl_get_or_create_global_step(m.g);
    fl_optimizer *adam = fl_adam_optimizer(0.05f, 0.9f, 0.999f, 1e-8f);
    m.train = fl_minimize(adam, m.g, m.loss, m.step, "train");
    fl_optimizer_free(adam);
    fl_device_pop(m.g);
    fl_tensor_free(xt);
    fl_tensor_free(yt);
    if (fl_graph_error(m.g))
        diag("graph error: %s", fl_graph_error(m.g));
    return m;
}

/* One training step; returns the loss before the update (NAN on failure). */
static float train_step(fl_session *s, const model *m)
{
    fl_tensor *loss = NULL;
    if (fl_session_run(s, NULL, 0, &m->loss, 1, &loss, &m->train, 1) != 0) {
        diag("train failed: %s", fl_session_error(s));
        return NAN;
    }
    float value = fl_tensor_scalar(loss);
    fl_tensor_free(loss);
    return value;
}

static fl_tensor *fetch(fl_session *s, fl_node *n)
{
    fl_tensor *t = NULL;
    if (fl_session_run(s, NULL, 0, &n, 1, &t, NULL, 0) != 0)
        diag("fetching %s failed: %s", fl_node_name(n), fl_session_error(s));
    return t;
}

static bool same_bytes(const fl_tensor *a, const fl_tensor *b)
{
    if (!a || !b || a->dtype != b->dtype || !fl_shape_equal(a->shape, b->shape))
        return false;
    return memcmp(a->data, b->data, (size_t)fl_shape_size(a->shape) * 4) == 0;
}

static char *path_in(const char *dir, const char *name)
{
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Counts the entries of dir whose name contains part. */
static int count_named(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, part) != NULL;
    if (d)
        closedir(d);
    return n;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            unlink(path_in(dir, e->d_name));
    if (d)
        closedir(d);
    rmdir(dir);
}

static void check_same_variables(fl_session *a, fl_session *b, const fl_graph *g)
{
    fl_node *vars[64];
    int n = fl_global_variables(g, vars, 64);
    ok(n == 12, "12 global variables: 3 weights, 6 Adam slots, 2 beta powers, global_step (got %d)", n);
    for (int i = 0; i < n; i++) {
        fl_tensor *ta = fetch(a, vars[i]), *tb = fetch(b, vars[i]);
        ok(same_bytes(ta, tb), "restored %s is byte-identical", fl_node_name(vars[i]));
        fl_tensor_free(ta);
        fl_tensor_free(tb);
    }
}

/* Saves steps 1..7 while training; returns the session, trained 7 steps. */
static fl_session *train_and_save(const model *m, const char *dir)
{
    fl_session *s = fl_session_new(m->g, &OPTIONS);
    fl_node *init = fl_global_variables_initializer(m->g);
    fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    int saved = 0;
    for (int step = 1; step <= 7; step++) {
        train_step(s, m);
        saved += fl_session_save(s, dir, step) == 0;
    }
    ok(saved == 7, "seven saves succeed");
    if (saved != 7)
        diag("%s", fl_session_error(s));
    return s;
}

static void check_directory(const char *dir)
{
    char name[64];
    int kept = 0, gone = 0;
    for (int step = 1; step <= 7; step++) {
        snprintf(name, sizeof name, "model.ckpt-%d", step);
        kept += step > 2 && exists(path_in(dir, name));
        gone += step <= 2 && !exists(path_in(dir, name));
    }
    ok(kept == 5 && gone == 2, "only the last 5 checkpoints remain (steps 3..7)");
    ok(count_named(dir, "model.ckpt-") == 5, "no other checkpoint files");
    ok(count_named(dir, ".tmp") == 0, "no temporary files remain");
    char *state = read_text(path_in(dir, "checkpoint"));
    contains(state, "model_checkpoint_path: \"model.ckpt-7\"", "DIR/checkpoint names the latest");
    contains(state, "all_model_checkpoint_paths: \"model.ckpt-3\"", "and lists the oldest kept");
    ok(state && !strstr(state, "model.ckpt-2\""), "and not a deleted one");
    free(state);
}

static void check_continues(fl_session *a, fl_session *b, const model *m)
{
    bool same = true;
    for (int i = 0; i < 4; i++) {
        float la = train_step(a, m), lb = train_step(b, m);
        if (memcmp(&la, &lb, sizeof la) != 0 || isnan(la)) {
            diag("step %d: original %.9g, restored %.9g", i, la, lb);
            same = false;
        }
    }
    ok(same, "training continues with the same loss sequence after restoring");
    fl_tensor *sa = fetch(a, m->step), *sb = fetch(b, m->step);
    ok(same_bytes(sa, sb) && fl_tensor_ints(sa)[0] == 11, "global_step agrees: 11 in both");
    fl_tensor_free(sa);
    fl_tensor_free(sb);
}

static void check_round_trip(const model *m, const char *dir)
{
    fl_session *a = train_and_save(m, dir);
    check_directory(dir);
    fl_session *b = fl_session_new(m->g, &OPTIONS);
    int rc = fl_session_restore_latest(b, dir);
    ok(rc == 1, "restore_latest into a new session returns 1");
    if (rc != 1)
        diag("%s", fl_session_error(b));
    check_same_variables(a, b, m->g);
    check_continues(a, b, m);
    ok(fl_session_restore_latest(a, dir) == 1, "a session that trained on can restore too");
    fl_tensor *step = fetch(a, m->step);
    ok(step && fl_tensor_ints(step)[0] == 7, "and its global_step goes back to 7");
    fl_tensor_free(step);
    fl_session_free(a);
    fl_session_free(b);
}

static void check_nothing_to_restore(const model *m, const char *dir)
{
    fl_session *s = fl_session_new(m->g, NULL);
    ok(fl_session_restore_latest(s, dir) == 0, "an empty directory: nothing to restore, 0");
    ok(fl_session_restore_latest(s, path_in(dir, "missing")) == 0, "a missing directory: 0");
    ok(fl_session_save(s, dir, 0) == -1, "saving before initializing is refused");
    contains(fl_session_error(s), "initialized", "saying no variable is initialized");
    fl_session_free(s);
}

/* Flips one bit of the byte at offset from the end of DIR/model.ckpt-7. */
static void flip_byte_from_end(const char *dir, long offset)
{
    FILE *f = fopen(path_in(dir, "model.ckpt-7"), "r+b");
    fseek(f, offset, SEEK_END);
    int c = fgetc(f);
    fseek(f, offset, SEEK_END);
    fputc(c ^ 0x01, f);
    fclose(f);
}

/* Restores DIR's latest checkpoint with stderr going to a buffer, where
 * the saver says which checkpoint it refused and which it used instead. */
static int restore_capturing_stderr(fl_session *s, const char *dir, char *said, size_t len)
{
    char path[] = "/tmp/test_saver_stderr.XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    fflush(stderr);
    dup2(fd, 2);
    int rc = fl_session_restore_latest(s, dir);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, said, len - 1, 0);
    said[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return rc;
}

/* Flips the last payload byte of the last variable saved (its CRC follows). */
static void check_corrupted(const model *m, const char *dir)
{
    fl_session *a = train_and_save(m, dir);
    flip_byte_from_end(dir, -5);
    fl_session *b = fl_session_new(m->g, NULL);
    fl_node *vars[64];
    int n = fl_global_variables(m->g, vars, 64);
    char want[128];
    snprintf(want, sizeof want, "tensor '%s' is corrupted", fl_node_name(vars[n - 1]));
    char said[2048];
    ok(restore_capturing_stderr(b, dir, said, sizeof said) == 1,
       "a corrupted latest checkpoint is refused and the previous one restored");
    contains(said, want, "naming the tensor (the last one saved)");
    contains(said, "model.ckpt-7", "and the file");
    contains(said, "restoring the previous checkpoint", "saying the previous one is used");
    contains(said, "model.ckpt-6", "naming it");
    fl_session_free(a);
    fl_session_free(b);
}

/* Flips a byte in the name of dense/kernel: before the CRC covered names,
 * this read back quietly and the restore said the variable was missing. */
static void check_corrupted_name(const model *m, const char *dir)
{
    fl_session *a = train_and_save(m, dir);
    const char *path = path_in(dir, "model.ckpt-7");
    size_t len = 0;
    FILE *f = fopen(path, "r+b");
    char *bytes = calloc(1, 1 << 16);
    len = fread(bytes, 1, 1 << 16, f);
    char *name = NULL;
    for (size_t i = 0; !name && i + 12 <= len; i++)
        if (memcmp(bytes + i, "dense/kernel", 12) == 0)
            name = bytes + i;
    if (name) {
        fseek(f, (long)(name - bytes), SEEK_SET);
        fputc('D', f);
    }
    fclose(f);
    free(bytes);
    fl_session *b = fl_session_new(m->g, NULL);
    char want[600];
    snprintf(want, sizeof want, "%s: tensor 'Dense/kernel' is corrupted", path);
    char said[2048];
    ok(name && restore_capturing_stderr(b, dir, said, sizeof said) == 1,
       "a flipped byte in a name is refused; the previous checkpoint is used");
    contains(said, want, "the message names the file and the tensor as read");
    fl_session_free(a);
    fl_session_free(b);
}

/* A dead process's id: a child that has exited and been reaped. */
static long dead_pid(void)
{
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    return (long)child;
}

/* Creates DIR/NAME.tmp.PID, last written age_s seconds ago. */
static void leave_temp(const char *dir, const char *name, long pid, int age_s)
{
    char file[128];
    snprintf(file, sizeof file, "%s.tmp.%ld", name, pid);
    const char *path = path_in(dir, file);
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs("half a checkpoint", f);
        fclose(f);
    }
    struct timespec when[2] = {{time(NULL) - age_s, 0}, {time(NULL) - age_s, 0}};
    utimensat(AT_FDCWD, path, when, 0);
}

static bool temp_exists(const char *dir, const char *name, long pid)
{
    char file[128];
    snprintf(file, sizeof file, "%s.tmp.%ld", name, pid);
    return exists(path_in(dir, file));
}

/* What a save killed mid-write leaves: removed by the next save or restore
 * once its writer is dead and it has not been written for a minute. */
static void check_stale_temps(const model *m, const char *dir)
{
    fl_session *s = train_and_save(m, dir);
    long dead = dead_pid(), alive = (long)getppid();
    leave_temp(dir, "model.ckpt-8", dead, 3600);
    leave_temp(dir, "checkpoint", dead, 3600);
    leave_temp(dir, "model.ckpt-9", dead, 0);
    leave_temp(dir, "model.ckpt-10", alive, 3600);
    leave_temp(dir, "notes.txt", dead, 3600);
    ok(fl_session_save(s, dir, 11) == 0, "a save into a directory with leftover temporaries");
    ok(!temp_exists(dir, "model.ckpt-8", dead), "a stale checkpoint temporary is removed");
    ok(!temp_exists(dir, "checkpoint", dead), "a stale DIR/checkpoint temporary is removed");
    ok(temp_exists(dir, "model.ckpt-9", dead), "one written just now is kept (a writer elsewhere?)");
    ok(temp_exists(dir, "model.ckpt-10", alive), "one of a live process is kept");
    ok(temp_exists(dir, "notes.txt", dead), "a file the saver does not write is kept");

    leave_temp(dir, "model.ckpt-12", dead, 3600);
    fl_session *b = fl_session_new(m->g, NULL);
    ok(fl_session_restore_latest(b, dir) == 1, "restoring from that directory works");
    ok(!temp_exists(dir, "model.ckpt-12", dead), "and removes a stale temporary too");
    fl_session_free(b);
    fl_session_free(s);
}

/* A graph with one variable: name it like the model's, or not. */
static void check_other_graph(const char *dir, const char *name, fl_shape shape,
                              const char *want, const char *what)
{
    fl_graph *g = fl_graph_new();
    fl_get_variable(g, name, shape, fl_zeros_initializer());
    fl_session *s = fl_session_new(g, NULL);
    ok(fl_session_restore_latest(s, dir) == -1, "%s is refused", what);
    contains(fl_session_error(s), want, "the error names the variable and what is wrong");
    fl_session_free(s);
    fl_graph_free(g);
}

static bool have_accelerator(void)
{
    fl_device_info info[8];
    int n = fl_list_devices(info, 8);
    for (int i = 0; i < n; i++)
        if (strcmp(info[i].name, "/gpu:0") == 0)
            return true;
    return false;
}

/* Variables living in device buffers go through copy_out and copy_in. */
static void check_on_accelerator(const char *dir)
{
    if (!have_accelerator()) {
        printf("ok %d - round trip on /gpu:0 # SKIP no accelerator: %s\n", ++tap_count, fl_last_error());
        return;
    }
    diag("the same round trip with the model on /gpu:0");
    model m = build_model("/gpu:0");
    check_round_trip(&m, dir);
    fl_graph_free(m.g);
}

/* Saves steps 1..saves keeping max_to_keep; true when exactly the steps
 * after first_kept remain and DIR/checkpoint names the last one. */
static bool keeps(const model *m, const char *dir, int saves, int max_to_keep, int first_kept)
{
    fl_session *s = fl_session_new(m->g, &OPTIONS);
    fl_node *init = fl_global_variables_initializer(m->g);
    fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    int failed = 0, wrong = 0;
    for (int step = 1; step <= saves; step++)
        failed += fl_session_save_keeping(s, dir, step, max_to_keep) != 0;
    char name[64], line[128] = "", want[128];
    for (int step = 1; step <= saves; step++) {
        snprintf(name, sizeof name, "model.ckpt-%d", step);
        wrong += exists(path_in(dir, name)) != (step >= first_kept);
    }
    FILE *f = fopen(path_in(dir, "checkpoint"), "r");
    if (f && !fgets(line, sizeof line, f))
        line[0] = '\0';
    if (f)
        fclose(f);
    snprintf(want, sizeof want, "model_checkpoint_path: \"model.ckpt-%d\"\n", saves);
    fl_session_free(s);
    remove_dir(dir);
    mkdir(dir, 0700);
    return failed == 0 && wrong == 0 && strcmp(line, want) == 0;
}

/* TensorFlow's max_to_keep: older checkpoints are deleted, 0 keeps all (also
 * past the 64 that DIR/checkpoint lists), a negative count is refused. */
static void check_max_to_keep(const model *m, const char *dir)
{
    ok(keeps(m, dir, 4, 2, 3), "max_to_keep 2: after 4 saves only the newest 2 remain, the last named latest");
    ok(keeps(m, dir, 4, 0, 1), "max_to_keep 0: all 4 checkpoints remain");
    ok(keeps(m, dir, 70, 0, 1), "max_to_keep 0: all 70 remain, the last named latest");
    ok(keeps(m, dir, 7, FL_DEFAULT_MAX_TO_KEEP, 3), "the default keeps the newest 5");
    fl_session *s = fl_session_new(m->g, &OPTIONS);
    fl_node *init = fl_global_variables_initializer(m->g);
    fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    ok(fl_session_save_keeping(s, dir, 1, -1) == -1 && strstr(fl_session_error(s), "max_to_keep -1"),
       "a negative max_to_keep is refused, naming it");
    fl_session_free(s);
}

static char *make_temp_dir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/test_saver.XXXXXX");
    return mkdtemp(buf);
}

int main(void)
{
    char dir[64], empty[64], bad[64], gpu[64], bad_name[64], stale[64], keep[64];
    if (!make_temp_dir(dir, sizeof dir) || !make_temp_dir(empty, sizeof empty) || !make_temp_dir(keep, sizeof keep) ||
        !make_temp_dir(bad, sizeof bad) || !make_temp_dir(gpu, sizeof gpu) ||
        !make_temp_dir(bad_name, sizeof bad_name) || !make_temp_dir(stale, sizeof stale))
        skip_all("cannot make a temporary directory");
    model m = build_model("");
    check_round_trip(&m, dir);
    check_nothing_to_restore(&m, empty);
    check_other_graph(dir, "dense/kernel", fl_shape_make(2, 3, 3),
                      "dense/kernel is float32 [3,3] in the graph but float32 [2,3] in the checkpoint",
                      "a variable of another shape");
    check_other_graph(dir, "extra", fl_shape_make(1, 1),
                      "variable extra is not in the checkpoint (was it saved from the same model?)",
                      "a variable the checkpoint lacks");
    check_corrupted(&m, bad);
    check_corrupted_name(&m, bad_name);
    check_stale_temps(&m, stale);
    check_max_to_keep(&m, keep);
    check_on_accelerator(gpu);
    ok(count_named(dir, ".tmp") == 0 && count_named(bad, ".tmp") == 0, "no temporary files anywhere");
    fl_graph_free(m.g);
    remove_dir(dir);
    remove_dir(empty);
    remove_dir(bad);
    remove_dir(gpu);
    remove_dir(bad_name);
    remove_dir(stale);
    remove_dir(keep);
    return done_testing();
}
