/* saver.c: tf.train.Saver for a session. fl_session_save copies every
 * initialized global variable off its device into DIR/model.ckpt-STEP and
 * names it in DIR/checkpoint; fl_session_restore_latest loads it back.
 * Both first remove the temporary files a killed save left in DIR. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime.h"
#include "session_access.h"
#include "saver_tasks.h"
#include "temp_files.h"

#define STATE_FILE "checkpoint"
#define CKPT_PREFIX "model.ckpt-"
#define NAME_LEN 64         /* "model.ckpt-" and a 64-bit step fit easily */
#define MAX_LISTED 64       /* names kept from an old DIR/checkpoint */

static char *join_path(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = fl_xmalloc(len);
    snprintf(path, len, "%s/%s", dir, name);
    return path;
}

/* ---- saving ---- */

/* A client's variables live on the tasks: every one is read, in one run
 * (one without a value fails it, naming it, as TensorFlow's Saver does). */
static int collect_from_tasks(fl_session *s, fl_node **vars, int nvars, fl_named_tensor *list)
{
    fl_tensor **values = fl_xcalloc((size_t)(nvars ? nvars : 1), sizeof *values);
    int rc = nvars ? fl_saver_read_from_tasks(s, vars, nvars, values) : 0;
    for (int i = 0; rc == 0 && i < nvars; i++)
        list[i] = (fl_named_tensor){fl_xstrdup(vars[i]->name), values[i]};
    free(values);
    if (rc != 0)
        fl_checkpoint_free(list, 0);
    return rc == 0 ? nvars : -1;
}

/* The session's own: each initialized one, copied off its device. Both
 * free list on failure. */
static int collect_from_devices(fl_session *s, fl_node **vars, int nvars, fl_named_tensor *list)
{
    int n = 0;
    for (int i = 0; i < nvars; i++) {
        if (!fl_session_variable_initialized(s, vars[i]))
            continue;
        list[n].tensor = fl_session_read_variable(s, vars[i]);
        if (!list[n].tensor) {
            fl_checkpoint_free(list, n);
            return -1;
        }
        list[n++].name = fl_xstrdup(vars[i]->name);
    }
    return n;
}

/* Fills out with every initialized global variable; returns the count or -1. */
static int collect_variables(fl_session *s, fl_named_tensor **out)
{
    fl_graph *g = fl_session_graph(s);
    int nvars = fl_global_variables(g, NULL, 0);
    fl_node **vars = fl_xcalloc((size_t)(nvars ? nvars : 1), sizeof *vars);
    fl_global_variables(g, vars, nvars);
    fl_named_tensor *list = fl_xcalloc((size_t)(nvars ? nvars : 1), sizeof *list);
    int n = fl_session_in_client(s) ? collect_from_tasks(s, vars, nvars, list)
                                    : collect_from_devices(s, vars, nvars, list);
    free(vars);
    *out = n < 0 ? NULL : list;
    return n;
}

static int ensure_directory(fl_session *s, const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return fl_session_fail_code(s, fl_errno_code(errno), "%s: cannot create the checkpoint directory: %s",
                                    dir, strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "%s: exists and is not a directory", dir);
    return 0;
}

/* Only names this saver writes are trusted from DIR/checkpoint: an edited
 * file must never make us delete something else. */
static bool is_checkpoint_name(const char *name)
{
    size_t prefix = strlen(CKPT_PREFIX);
    if (strncmp(name, CKPT_PREFIX, prefix) != 0 || !name[prefix] || strlen(name) >= NAME_LEN)
        return false;
    for (const char *c = name + prefix; *c; c++)
        if ((*c < '0' || *c > '9') && *c != '-')
            return false;
    return true;
}

/* The files a saver writes in DIR, whose leftover temporaries it may clean. */
static bool is_saver_file(const char *name)
{
    return strcmp(name, STATE_FILE) == 0 || is_checkpoint_name(name);
}

/* The text between the quotes of a line `key: "text"`, into out. */
static bool quoted_value(const char *line, const char *key, char *out, size_t len)
{
    size_t klen = strlen(key);
    if (strncmp(line, key, klen) != 0 || strncmp(line + klen, ": \"", 3) != 0)
        return false;
    const char *start = line + klen + 3;
    const char *end = strchr(start, '"');
    if (!end || (size_t)(end - start) >= len)
        return false;
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    return true;
}

/* The newest max checkpoints DIR/checkpoint lists, oldest first; the file
 * may be absent. */
static int read_listed(const char *dir, char names[][NAME_LEN], int max)
{
    char *path = join_path(dir, STATE_FILE);
    FILE *f = fopen(path, "r");
    free(path);
    if (!f)
        return 0;
    int n = 0;
    char line[512];
    char name[NAME_LEN];
    while (fgets(line, sizeof line, f)) {
        if (!quoted_value(line, "all_model_checkpoint_paths", name, NAME_LEN) || !is_checkpoint_name(name))
            continue;
        if (n == max) /* a list kept with max_to_keep 0 outgrows ours: keep its newest */
            memmove(names[0], names[1], (size_t)--n * NAME_LEN);
        memcpy(names[n++], name, NAME_LEN);
    }
    fclose(f);
    return n;
}

/* Writes the lines to f and closes it; returns 0 or the errno of the failure. */
static int write_state(FILE *f, char names[][NAME_LEN], int n)
{
    fprintf(f, "model_checkpoint_path: \"%s\"\n", names[n - 1]);
    for (int i = 0; i < n; i++)
        fprintf(f, "all_model_checkpoint_paths: \"%s\"\n", names[i]);
    int err = 0;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        err = errno;
    if (fclose(f) != 0 && !err)
        err = errno;
    return err;
}

/* Writes DIR/checkpoint the way checkpoint_write.c writes checkpoints: a
 * temporary file, flushed, synced and renamed, so it is never half written. */
static int write_state_file(fl_session *s, const char *dir, char names[][NAME_LEN], int n)
{
    char *path = join_path(dir, STATE_FILE);
    char *temp = fl_temp_path_for(path);
    FILE *f = fopen(temp, "w");
    int err = f ? write_state(f, names, n) : errno;
    if (!err && rename(temp, path) != 0)
        err = errno;
    if (err) {
        unlink(temp);
        fl_session_fail_code(s, fl_errno_code(err), "%s: cannot write it: %s", path, strerror(err));
    }
    free(temp);
    free(path);
    return err ? -1 : 0;
}

static void delete_checkpoint(const char *dir, const char *name)
{
    char *path = join_path(dir, name);
    unlink(path);
    free(path);
}

/* Adds name as the newest checkpoint, keeps the newest max_to_keep (0: all;
 * DIR/checkpoint then lists the newest MAX_LISTED) in DIR/checkpoint and only
 * then deletes the rest, so the state file never names a file that is gone. */
static int record_checkpoint(fl_session *s, const char *dir, const char *name, int max_to_keep)
{
    char names[MAX_LISTED + 1][NAME_LEN];
    int listed = read_listed(dir, names, MAX_LISTED);
    int n = 0;
    for (int i = 0; i < listed; i++) /* saving the same step again moves it last */
        if (strcmp(names[i], name) != 0)
            memcpy(names[n++], names[i], NAME_LEN);
    snprintf(names[n++], NAME_LEN, "%s", name);
    int drop = max_to_keep > 0 && n > max_to_keep ? n - max_to_keep : 0;
    int unlisted = n - drop > MAX_LISTED ? n - drop - MAX_LISTED : 0;
    if (write_state_file(s, dir, names + drop + unlisted, n - drop - unlisted) != 0)
        return -1;
    for (int i = 0; i < drop; i++)
        delete_checkpoint(dir, names[i]);
    return 0;
}

int fl_session_save(fl_session *s, const char *dir, int64_t step)
{
    return fl_session_save_keeping(s, dir, step, FL_DEFAULT_MAX_TO_KEEP);
}

int fl_session_save_keeping(fl_session *s, const char *dir, int64_t step, int max_to_keep)
{
    if (!s) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_session_save: the session is NULL");
        return -1;
    }
    if (!dir || !dir[0])
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "fl_session_save: no directory given");
    if (max_to_keep < 0)
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "%s: max_to_keep %d: give the number of checkpoints "
                                    "to keep, or 0 for all", dir, max_to_keep);
    fl_session_clear_error(s);
    fl_graph *g = fl_session_graph(s);
    if (fl_graph_failed(g))
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "the graph has an error: %s", fl_graph_error(g));
    if (ensure_directory(s, dir) != 0)
        return -1;
    fl_remove_stale_temps(dir, is_saver_file);
    fl_named_tensor *tensors = NULL;
    int n = collect_variables(s, &tensors);
    if (n < 0)
        return -1;
    if (n == 0) {
        fl_checkpoint_free(tensors, 0);
        return fl_session_fail_code(s, FL_FAILED_PRECONDITION,
                                    "%s: nothing to save: no variable is initialized in this session "
                                    "(run fl_global_variables_initializer() first)", dir);
    }
    char name[NAME_LEN];
    snprintf(name, sizeof name, CKPT_PREFIX "%lld", (long long)step);
    char *path = join_path(dir, name);
    int rc = fl_checkpoint_write(path, tensors, n);
    fl_checkpoint_free(tensors, n);
    free(path);
    if (rc != 0)
        return fl_session_fail(s, "%s", fl_last_error());
    return record_checkpoint(s, dir, name, max_to_keep);
}

/* ---- restoring ---- */

long fl_latest_checkpoint_step(const char *dir)
{
    char names[MAX_LISTED][NAME_LEN];
    int n = dir ? read_listed(dir, names, MAX_LISTED) : 0;
    return n > 0 ? atol(names[n - 1] + strlen(CKPT_PREFIX)) : -1;
}

/* Whether a and b are one directory (through links and spellings alike). */
static bool same_directory(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && S_ISDIR(sa.st_mode) && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* DIR/name for the name a state file gives, only when it names a file in
 * DIR itself: a bare name, or a path (TensorFlow writes absolute ones) whose
 * directory is DIR. Anything else, ../elsewhere or /etc/x, is refused: a
 * restore reads only checkpoints inside its directory. NULL with *rc -1. */
static char *inside_dir(fl_session *s, const char *dir, const char *state, const char *name, int *rc)
{
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    bool inside = *base && strcmp(base, ".") != 0 && strcmp(base, "..") != 0;
    if (inside && slash) { /* a relative path is relative to DIR, as TensorFlow reads it */
        char *parent = fl_xstrdup(name);
        parent[slash == name ? 1 : slash - name] = '\0';
        char *full = name[0] == '/' ? fl_xstrdup(parent) : join_path(dir, parent);
        inside = same_directory(full, dir);
        free(full);
        free(parent);
    }
    if (inside)
        return join_path(dir, base);
    *rc = fl_session_fail_code(s, FL_PERMISSION_DENIED, "%s names the checkpoint \"%s\", which is not in the "
                               "checkpoint directory %s: refused, a restore reads only checkpoints inside it "
                               "(remove or fix that line of %s)", state, name, dir, state);
    return NULL;
}

/* The checkpoint DIR/checkpoint names, as a path; NULL with *rc 0 when there
 * is none yet, NULL with *rc -1 on an error. */
static char *latest_path(fl_session *s, const char *dir, int *rc)
{
    char *state = join_path(dir, STATE_FILE);
    FILE *f = fopen(state, "r");
    *rc = 0;
    if (!f) {
        if (errno != ENOENT && errno != ENOTDIR)
            *rc = fl_session_fail_code(s, fl_errno_code(errno), "%s: cannot open: %s", state, strerror(errno));
        free(state);
        return NULL;
    }
    char line[1024], name[1024] = "";
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = quoted_value(line, "model_checkpoint_path", name, sizeof name);
    fclose(f);
    if (!found) {
        *rc = fl_session_fail_code(s, FL_DATA_LOSS, "%s: no model_checkpoint_path line naming the latest checkpoint",
                              state);
        free(state);
        return NULL;
    }
    char *path = inside_dir(s, dir, state, name, rc);
    free(state);
    return path;
}

static const fl_tensor *find_tensor(const fl_named_tensor *tensors, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(tensors[i].name, name) == 0)
            return tensors[i].tensor;
    return NULL;
}

/* Checks every variable before touching any, so a refused checkpoint
 * leaves the session as it was. Tensors no variable asks for are ignored,
 * as TensorFlow's Saver ignores them. */
static int check_variables(fl_session *s, const char *path, fl_node *const *vars, int nvars,
                           const fl_named_tensor *tensors, int n)
{
    char want[64], got[64];
    for (int i = 0; i < nvars; i++) {
        const fl_node *v = vars[i];
        const fl_tensor *t = find_tensor(tensors, n, v->name);
        if (!t)
            return fl_session_fail_code(s, FL_NOT_FOUND, "%s: variable %s is not in the checkpoint (was it saved "
                                      "from the same model?)", path, v->name);
        if (t->dtype != v->dtype || !fl_shape_equal(t->shape, v->attrs.shape))
            return fl_session_fail_code(s, FL_INVALID_ARGUMENT,
                                        "%s: variable %s is %s %s in the graph but %s %s in the "
                                        "checkpoint", path, v->name, fl_dtype_name(v->dtype),
                                        fl_shape_format(v->attrs.shape, want, sizeof want),
                                        fl_dtype_name(t->dtype), fl_shape_format(t->shape, got, sizeof got));
    }
    return 0;
}

static int restore_from(fl_session *s, const char *path, const fl_named_tensor *tensors, int n)
{
    fl_graph *g = fl_session_graph(s);
    int nvars = fl_global_variables(g, NULL, 0);
    fl_node **vars = fl_xcalloc((size_t)(nvars ? nvars : 1), sizeof *vars);
    fl_global_variables(g, vars, nvars);
    int rc = check_variables(s, path, vars, nvars, tensors, n);
    const fl_tensor **values = fl_xcalloc((size_t)(nvars ? nvars : 1), sizeof *values);
    for (int i = 0; rc == 0 && i < nvars; i++)
        values[i] = find_tensor(tensors, n, vars[i]->name);
    if (rc == 0 && fl_session_in_client(s)) /* its variables live on the tasks */
        rc = fl_saver_write_to_tasks(s, vars, values, nvars);
    else
        for (int i = 0; rc == 0 && i < nvars; i++)
            rc = fl_session_write_variable(s, vars[i], values[i]);
    free(values);
    free(vars);
    return rc;
}

/* Reads and restores one checkpoint file: 0, or -1 with the error set
 * (*unreadable when the file itself was refused, not the variables). */
static int restore_file(fl_session *s, const char *path, bool *unreadable)
{
    fl_named_tensor *tensors = NULL;
    int n = 0;
    *unreadable = fl_checkpoint_read(path, &tensors, &n) != 0;
    if (*unreadable)
        return fl_session_fail(s, "%s", fl_last_error());
    int rc = restore_from(s, path, tensors, n);
    fl_checkpoint_free(tensors, n);
    return rc;
}

/* The latest checkpoint was refused (truncated, a flipped byte): the ones
 * before it, newest first, as DIR/checkpoint lists them. */
static int restore_previous(fl_session *s, const char *dir, const char *refused)
{
    char (*names)[NAME_LEN] = fl_xcalloc(MAX_LISTED, NAME_LEN);
    int n = read_listed(dir, names, MAX_LISTED), rc = -1;
    char why[512];
    snprintf(why, sizeof why, "%s", fl_session_error(s));
    for (int i = n - 1; i >= 0 && rc != 0; i--) {
        char *path = join_path(dir, names[i]);
        bool unreadable = false;
        if (strcmp(path, refused) != 0) {
            fprintf(stderr, "flowlab: %s; restoring the previous checkpoint %s instead\n", why, path);
            rc = restore_file(s, path, &unreadable);
        }
        free(path);
    }
    free(names);
    return rc;
}

int fl_session_restore_latest(fl_session *s, const char *dir)
{
    if (!s) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_session_restore_latest: the session is NULL");
        return -1;
    }
    if (!dir || !dir[0])
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "fl_session_restore_latest: no directory given");
    fl_session_clear_error(s);
    fl_graph *g = fl_session_graph(s);
    if (fl_graph_failed(g))
        return fl_session_fail_code(s, FL_INVALID_ARGUMENT, "the graph has an error: %s", fl_graph_error(g));
    fl_remove_stale_temps(dir, is_saver_file);
    int rc;
    char *path = latest_path(s, dir, &rc);
    if (!path)
        return rc;
    bool unreadable = false;
    rc = restore_file(s, path, &unreadable);
    if (rc != 0 && unreadable && restore_previous(s, dir, path) == 0) {
        rc = 0;
        fl_session_clear_error(s); /* said on stderr; the restore succeeded */
    }
    free(path);
    return rc == 0 ? 1 : -1;
}
