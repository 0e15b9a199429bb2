/* test_nan_loss.c: a NaN loss ends a lab's training with a non-zero exit
 * naming the step (labs/common/loss_check.h). A variable is poisoned as an
 * attacker's ASSIGN would: a checkpoint's variables are rewritten as NaN;
 * chapter 1's lab, and chapter 3's workers under launch_cluster,
 * restore it and must stop, not train on and exit 0. */
#include <math.h>

#include "lab_runner.h"
#include "flowlab.h"
#include "runtime.h"

#define QUICK "--device /cpu:0 --max_examples 256 --batch_size 32 --log_every 1 --seed 5"

/* Rewrites DIR's latest checkpoint with every float tensor (the variables
 * and their optimizer slots) all NaN: the count, or 0. One NaN kernel alone
 * may not show: a ReLU after it turns NaN into 0. */
static int poison_checkpoint(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/model.ckpt-%ld", dir, fl_latest_checkpoint_step(dir));
    fl_named_tensor *tensors = NULL;
    int n = 0, count = 0;
    if (fl_checkpoint_read(path, &tensors, &n) != 0) {
        diag("cannot read %s: %s", path, fl_last_error());
        return 0;
    }
    for (int i = 0; i < n; i++) {
        fl_tensor *t = tensors[i].tensor;
        for (long k = 0; t->dtype == FL_FLOAT32 && k < fl_shape_size(t->shape); k++)
            ((float *)t->data)[k] = NAN;
        count += t->dtype == FL_FLOAT32;
    }
    if (count && fl_checkpoint_write(path, tensors, n) != 0)
        count = 0;
    fl_checkpoint_free(tensors, n);
    return count;
}

static void test_single_device(void)
{
    char args[1200], dir[400];
    snprintf(dir, sizeof dir, "%s/ckpt01", tmp_dir);
    snprintf(args, sizeof args, QUICK " --train_steps 2 --checkpoint_dir %s", dir);
    run_result r = run_lab(args);
    ok(r.status == 0, "chapter 1's lab trains 2 steps and saves them (exit %d)", r.status);
    free(r.out);
    ok(poison_checkpoint(dir) > 0, "its checkpoint's variables are made NaN");
    snprintf(args, sizeof args, QUICK " --train_steps 5 --checkpoint_dir %s", dir);
    r = run_lab(args);
    ok(r.status == 1, "resumed from the poisoned checkpoint, it exits 1 (exit %d)", r.status);
    contains(r.out, "single_device: step 2: the loss is NaN; stopping", "naming the step and the NaN");
    ok(r.out && !strstr(r.out, "Test accuracy"), "and reports no accuracy");
    free(r.out);
}

static void test_between_graph(void)
{
    char lab03[600], launcher[600], dir[400], cmd[2400];
    snprintf(lab03, sizeof lab03, "%s/labs/03-between-graph/between_graph", build_dir);
    snprintf(launcher, sizeof launcher, "%s/labs/tools/launch_cluster", build_dir);
    snprintf(dir, sizeof dir, "%s/ckpt03", tmp_dir);
    const char *flags = "--device /cpu:0 --max_examples 256 --batch_size 32 --log_every 1";
    snprintf(cmd, sizeof cmd, "FLOWLAB_BACKEND=host timeout 300 %s --ps 1 --workers 2 --grace 20 --deadline 240 -- "
             "%s %s --train_steps 4 --checkpoint_dir %s", launcher, lab03, flags, dir);
    char *out = NULL;
    int status = run_command(cmd, &out);
    ok(status == 0, "chapter 3's cluster trains 4 steps and saves them (exit %d)", status);
    free(out);
    ok(poison_checkpoint(dir) > 0, "its checkpoint's variables are made NaN");
    snprintf(cmd, sizeof cmd, "FLOWLAB_BACKEND=host timeout 300 %s --ps 1 --workers 2 --grace 20 --deadline 240 -- "
             "%s %s --train_steps 8 --checkpoint_dir %s", launcher, lab03, flags, dir);
    status = run_command(cmd, &out);
    ok(status == 1, "resumed from it, the cluster exits 1 (exit %d)", status);
    contains(out, ": global step ", "a worker names the global step");
    contains(out, "the loss is NaN; stopping", "at which the loss was NaN");
    if (status != 1 && out)
        diag("%s", out);
    free(out);
}

int main(int argc, char **argv)
{
    (void)argc;
    lab_runner_start(argv[0], "test_nan_loss", "labs/01-single-device/single_device");
    test_single_device();
    test_between_graph();
    lab_runner_finish();
    return done_testing();
}
