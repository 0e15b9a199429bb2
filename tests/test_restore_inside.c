/* test_restore_inside.c: a restore reads only checkpoints inside its
 * directory (src/io/saver.c). A state file DIR/checkpoint that names
 * ../elsewhere/model.ckpt-N or an absolute path outside DIR is refused,
 * naming the state file and the path, and leaves the variable as it was;
 * names TensorFlow writes (absolute ones into DIR, ./name) still restore. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "flowlab.h"

static char root[64], dir[128], elsewhere[128];

/* One variable v, initialized to value; its session. */
static fl_session *session_with(fl_graph **g, fl_node **v, float value)
{
    *g = fl_graph_new();
    *v = fl_get_variable(*g, "v", fl_shape_make(1, 2), fl_constant_initializer(value));
    fl_node *init = fl_global_variables_initializer(*g);
    fl_session *s = fl_session_new(*g, NULL);
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) != 0)
        diag("init: %s", fl_session_error(s));
    return s;
}

static float value_of(fl_session *s, fl_node *v)
{
    fl_tensor *t = NULL;
    if (fl_session_run(s, NULL, 0, &v, 1, &t, NULL, 0) != 0)
        return -1;
    float x = ((const float *)t->data)[0];
    fl_tensor_free(t);
    return x;
}

static void write_state(const char *name)
{
    char path[200];
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        skip_all("cannot write the state file");
    fprintf(f, "model_checkpoint_path: \"%s\"\nall_model_checkpoint_paths: \"%s\"\n", name, name);
    fclose(f);
}

/* Restores from dir with its state file naming name: the result, the
 * variable's value after, the error. */
static int restore_named(const char *name, float *after, char *why, size_t len)
{
    fl_graph *g;
    fl_node *v;
    fl_session *s = session_with(&g, &v, 1.0f);
    write_state(name);
    int rc = fl_session_restore_latest(s, dir);
    snprintf(why, len, "%s", rc < 0 ? fl_session_error(s) : "");
    *after = value_of(s, v);
    fl_session_free(s);
    fl_graph_free(g);
    return rc;
}

static void refused(const char *name, const char *what)
{
    float after = 0;
    char why[600];
    int rc = restore_named(name, &after, why, sizeof why);
    ok(rc == -1 && after == 1.0f, "%s is refused and the variable is left as it was (%g): %s", what, after, why);
    contains(why, name, "the error names the path");
    contains(why, "/checkpoint names the checkpoint", "and the state file");
    contains(why, "not in the checkpoint directory", "and says why");
}

static void restored(const char *name, const char *what)
{
    float after = 0;
    char why[600];
    int rc = restore_named(name, &after, why, sizeof why);
    ok(rc == 1 && after == 5.0f, "%s restores (%g) %s", what, after, why);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/flowlab_restore_XXXXXX");
    if (!mkdtemp(root))
        skip_all("no temporary directory");
    snprintf(dir, sizeof dir, "%s/ckpt", root);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", root);
    fl_graph *g;
    fl_node *v;
    fl_session *s = session_with(&g, &v, 5.0f);
    ok(fl_session_save(s, dir, 1) == 0 && fl_session_save(s, elsewhere, 2) == 0, "a checkpoint in each directory");
    fl_session_free(s);
    fl_graph_free(g);

    char name[300];
    refused("../elsewhere/model.ckpt-2", "a state file naming ../elsewhere/model.ckpt-2");
    snprintf(name, sizeof name, "%s/model.ckpt-2", elsewhere);
    refused(name, "a state file naming an absolute path in another directory");
    refused("/etc/passwd", "a state file naming /etc/passwd");
    refused("..", "a state file naming ..");
    snprintf(name, sizeof name, "%s/model.ckpt-1", dir);
    restored(name, "an absolute path into the directory itself (as TensorFlow writes them)");
    restored("./model.ckpt-1", "./model.ckpt-1");
    restored("model.ckpt-1", "a bare name");

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        diag("could not remove %s", root);
    return done_testing();
}
