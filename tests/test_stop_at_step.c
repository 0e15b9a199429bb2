/* test_stop_at_step.c: the monitored session's stop hook is asked before
 * the first step. A run that restores a checkpoint at or past its last step
 * trains nothing and saves no later checkpoint (before the fix, a second
 * `--train_steps 10` trained step 11 and saved model.ckpt-11); a run that
 * restores below it trains exactly the steps that are missing.
 * max_checkpoints_to_keep: 0 keeps every checkpoint, as TensorFlow's
 * max_to_keep=0 and fl_session_save_keeping's 0; FL_DEFAULT_MAX_TO_KEEP
 * keeps the newest 5; a negative count is refused, naming the option. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowlab.h"
#include "flowlab_monitored.h"
#include "tap.h"

/* Trains a one-weight model under a monitored session saving into dir at
 * every step, keeping keep checkpoints, until the global step reaches
 * last_step; the steps it ran, or -1. */
static int train_keeping(const char *dir, long last_step, int keep, long *global_step)
{
    FILE *quiet = fopen("/dev/null", "w"); /* the session's "saved" lines */
    fl_graph *g = fl_graph_new();
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 1), fl_zeros_initializer());
    fl_node *step = fl_get_or_create_global_step(g);
    fl_node *err = fl_sub(g, w, fl_scalar(g, 3, NULL), NULL);
    fl_node *loss = fl_reduce_sum(g, fl_mul(g, err, err, NULL), NULL, 0, false, "loss");
    fl_optimizer *sgd = fl_gradient_descent_optimizer(0.1f);
    fl_node *train_op = fl_minimize(sgd, g, loss, step, NULL);
    fl_session_hook *stop = fl_stop_at_step_hook(last_step);
    fl_monitored_session_options o = {.checkpoint_dir = dir, .save_checkpoint_steps = 1, .log_step_count_steps = -1,
                                      .max_checkpoints_to_keep = keep, .hooks = &stop, .nhooks = 1,
                                      .log = quiet ? quiet : stderr};
    fl_monitored_session *ms = fl_monitored_training_session(g, step, &o);
    int steps = ms ? 0 : -1;
    while (ms && !fl_monitored_session_should_stop(ms) && steps < 100)
        steps = fl_monitored_session_run(ms, NULL, 0, NULL, 0, NULL, &train_op, 1) == 0 ? steps + 1 : 100;
    if (ms)
        *global_step = fl_monitored_session_global_step(ms);
    if (!ms)
        diag("the monitored session: %s", fl_last_error());
    fl_monitored_session_close(ms);
    fl_session_hook_free(stop);
    fl_optimizer_free(sgd);
    fl_graph_free(g);
    if (quiet)
        fclose(quiet);
    return steps;
}

static int train_until(const char *dir, long last_step, long *global_step)
{
    return train_keeping(dir, last_step, 0, global_step);
}

static bool checkpoint_exists(const char *dir, long step)
{
    char path[512];
    snprintf(path, sizeof path, "%s/model.ckpt-%ld.index", dir, step);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(path, sizeof path, "%s/model.ckpt-%ld", dir, step);
        f = fopen(path, "rb");
    }
    if (f)
        fclose(f);
    return f != NULL;
}

/* The checkpoints in dir among steps 1 to last, as a string of 1s and 0s. */
static void kept(const char *dir, long last, char *out)
{
    for (long step = 1; step <= last; step++)
        out[step - 1] = checkpoint_exists(dir, step) ? '1' : '0';
    out[last] = '\0';
}

static void test_max_to_keep(void)
{
    char all[] = "/tmp/flowlab-keep-XXXXXX", five[] = "/tmp/flowlab-keep-XXXXXX", which[16], cmd[600];
    long step = -1;
    if (!mkdtemp(all) || !mkdtemp(five)) {
        ok(false, "mkdtemp made the checkpoint directories");
        return;
    }
    int steps = train_keeping(all, 8, 0, &step);
    ok(steps == 8, "8 steps saved at each, max_checkpoints_to_keep 0 (%d, global step %ld)", steps, step);
    kept(all, 8, which);
    ok(strcmp(which, "11111111") == 0, "0 keeps all 8 checkpoints, as TensorFlow's max_to_keep=0 (%s)", which);
    ok(train_keeping(five, 8, FL_DEFAULT_MAX_TO_KEEP, &step) == 8, "8 steps with FL_DEFAULT_MAX_TO_KEEP");
    kept(five, 8, which);
    ok(strcmp(which, "00011111") == 0, "FL_DEFAULT_MAX_TO_KEEP keeps the newest 5 (%s)", which);
    ok(train_keeping(five, 9, -1, &step) == -1 && strstr(fl_last_error(), "max_checkpoints_to_keep -1"),
       "a negative count is refused, naming the option: %s", fl_last_error());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", all, five);
    if (system(cmd) != 0)
        diag("could not remove %s and %s", all, five);
}

int main(void)
{
    test_max_to_keep();
    char dir[] = "/tmp/flowlab-stop-XXXXXX";
    if (!mkdtemp(dir))
        skip_all("mkdtemp failed");
    long step = -1;
    int steps = train_until(dir, 3, &step);
    ok(steps == 3 && step == 3, "a fresh run with a stop at step 3 trains 3 steps (%d, global step %ld)", steps, step);
    ok(checkpoint_exists(dir, 3), "and saves model.ckpt-3");

    steps = train_until(dir, 3, &step);
    ok(steps == 0 && step == 3, "restored at step 3, the same stop trains no step (%d, global step %ld)", steps, step);
    ok(!checkpoint_exists(dir, 4), "and saves no model.ckpt-4");

    steps = train_until(dir, 2, &step);
    ok(steps == 0 && step == 3, "restored past a stop at step 2, no step either (%d, global step %ld)", steps, step);

    steps = train_until(dir, 5, &step);
    ok(steps == 2 && step == 5, "restored at step 3, a stop at step 5 trains the 2 missing steps (%d, global step %ld)",
       steps, step);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
