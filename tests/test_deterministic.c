/* test_deterministic.c: FLOWLAB_DETERMINISTIC=1 makes training on a CUDA
 * GPU reproducible, bit for bit, as TensorFlow's TF_CUDNN_DETERMINISTIC does.
 * Chapter 1's model (labs/common/model.h) trains STEPS steps with Adam on
 * /gpu:0 twice, each time in a fresh graph and session with the same seed
 * and the same batches; the losses of the two runs must be the same bits,
 * and every cuDNN algorithm the device chose must be a deterministic one.
 * A child forked first trains with FLOWLAB_CUDA_GRAPH=serial, the step's
 * CUDA graph one chain in issue order: the graph whose edges are the
 * step's dependencies (cuda/cuda_graph.c), whose independent kernels run
 * side by side, must give the same bits. Skipped, with the reason, where flowlab has no CUDA device. Built with
 * -DTEST_DEVICE='"/cpu:0"' -DTEST_NO_SKIP the harness checks itself on a
 * machine without a GPU. */
#include <math.h>

#include "../labs/common/model.h"
#include "cuda_tests.h"
#include "gradcheck.h"

#ifndef TEST_DEVICE
#define TEST_DEVICE "/gpu:0"
#endif

enum { STEPS = 10, BATCH = 64, CLASSES = 10 };

/* Batch `step`: images in [0, 1) and labels 0-9, the same in every run. */
static void make_batch(int step, fl_tensor **image, fl_tensor **label)
{
    *image = gc_random(fl_shape_make(4, BATCH, 28, 28, 1), 0.0f, 1.0f, 1000u + (unsigned)step);
    *label = fl_tensor_new(FL_INT32, fl_shape_make(1, BATCH));
    for (int i = 0; i < BATCH; i++)
        fl_tensor_ints(*label)[i] = (i * 7 + step) % CLASSES;
}

typedef struct {
    fl_graph *g;
    fl_node *image, *label, *loss, *train, *init;
    fl_optimizer *adam;
} training;

/* The lab's graph: the model, the mean cross-entropy, Adam, all on the device. */
static training build(void)
{
    training t = {.g = fl_graph_new()};
    fl_graph_set_random_seed(t.g, 1);
    fl_device_scope_push(t.g, TEST_DEVICE);
    t.image = fl_placeholder(t.g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image");
    t.label = fl_placeholder(t.g, FL_INT32, fl_shape_make(1, -1), "label");
    fl_node *logits = core_model(t.g, t.image);
    fl_node *per_example = fl_sparse_softmax_cross_entropy_with_logits(t.g, t.label, logits, NULL);
    t.loss = fl_reduce_mean(t.g, per_example, NULL, 0, false, "loss");
    t.adam = fl_adam_optimizer(1e-3f, 0.9f, 0.999f, 1e-8f);
    t.train = fl_minimize(t.adam, t.g, t.loss, fl_get_or_create_global_step(t.g), "train");
    t.init = fl_global_variables_initializer(t.g);
    fl_device_pop(t.g);
    return t;
}

static int step(fl_session *s, const training *t, int i, float *loss)
{
    fl_tensor *image, *label, *value = NULL;
    make_batch(i, &image, &label);
    fl_feed feeds[2] = {{t->image, image}, {t->label, label}};
    int rc = fl_session_run(s, feeds, 2, &t->loss, 1, &value, &t->train, 1);
    if (rc == 0)
        *loss = fl_tensor_floats(value)[0];
    fl_tensor_free(value);
    fl_tensor_free(image);
    fl_tensor_free(label);
    return rc;
}

/* One run from scratch: the STEPS losses, or -1 with what failed in why. */
static int train_quietly(float losses[STEPS], char *why, size_t len)
{
    training t = build();
    fl_session *s = fl_graph_error(t.g) ? NULL : fl_session_new(t.g, NULL);
    int rc = s ? fl_session_run(s, NULL, 0, NULL, 0, NULL, &t.init, 1) : -1;
    for (int i = 0; rc == 0 && i < STEPS; i++)
        rc = step(s, &t, i, &losses[i]);
    if (rc != 0)
        snprintf(why, len, "%s", fl_graph_error(t.g) ? fl_graph_error(t.g) : s ? fl_session_error(s) : fl_last_error());
    fl_session_free(s);
    fl_graph_free(t.g);
    fl_optimizer_free(t.adam);
    return rc;
}

static int train_once(const char *which, float losses[STEPS])
{
    char why[512] = "";
    int rc = train_quietly(losses, why, sizeof why);
    if (!ok(rc == 0, "the %s run trains %d steps on %s", which, STEPS, TEST_DEVICE))
        diag("%s", why);
    return rc;
}

/* How many steps /gpu:0 has replayed as a CUDA graph (cuda/cuda_stats.h);
 * -1 where it is not the CUDA module's. */
static int64_t graph_replays(void)
{
    uint64_t (*replays)(void *impl) = NULL;
    fl_device *d = fl_accelerator(0);
    if (d && !d->is_host)
        *(void **)&replays = cuda_module_symbol("fl_cuda_graph_replays");
    return replays ? (int64_t)replays(d->impl) : -1;
}

/* The child's run, with the step's graph captured as one chain. */
typedef struct {
    int rc;
    int64_t replays;
    float losses[STEPS];
    char why[256];
} serial_run;

static void train_serial(void *result)
{
    serial_run *r = result;
    r->rc = train_quietly(r->losses, r->why, sizeof r->why);
    r->replays = graph_replays();
}

/* The graph with the step's dependencies as edges against the chain: both
 * replayed the step, and gave the same losses to the bit. */
static void check_graph_edges(bool child_ran, const serial_run *serial, const float losses[STEPS],
                              int64_t replays)
{
    if (replays < 0) {
        skip("the CUDA graph's edges", "/gpu:0 is not the CUDA module's");
        return;
    }
    if (!ok(child_ran && serial->rc == 0, "FLOWLAB_CUDA_GRAPH=serial: a child trains %d steps", STEPS))
        diag("%s", child_ran ? serial->why : "the child did not report");
    if (!ok(serial->replays > 0 && replays > 0, "both replayed the step as a CUDA graph (%lld and %lld times)",
            (long long)serial->replays, (long long)replays))
        return;
    bool same = memcmp(serial->losses, losses, sizeof(float) * STEPS) == 0;
    ok(same, "the graph with the step's dependencies as edges gives the serial chain's losses, bit for bit");
    for (int i = 0; !same && i < STEPS; i++)
        diag("step %d: chain %a, dependencies %a", i + 1, serial->losses[i], losses[i]);
}

/* Training moved the loss, and every loss is a number: the runs compared
 * are real ones. */
static void check_trained(const float losses[STEPS])
{
    bool finite = true;
    for (int i = 0; i < STEPS; i++)
        finite = finite && isfinite(losses[i]);
    ok(finite, "every loss is finite");
    if (!ok(losses[STEPS - 1] != losses[0], "the loss moves as the model trains"))
        diag("step 1 and step %d both have loss %a", STEPS, losses[0]);
}

static void compare(const float first[STEPS], const float second[STEPS])
{
    bool same = memcmp(first, second, sizeof(float) * STEPS) == 0;
    ok(same, "FLOWLAB_DETERMINISTIC=1: two runs give bitwise-equal losses over %d steps", STEPS);
    for (int i = 0; !same && i < STEPS; i++)
        diag("step %d: %a and %a (%.9g and %.9g)%s", i + 1, first[i], second[i], first[i], second[i],
             memcmp(&first[i], &second[i], sizeof(float)) ? "  <- differ" : "");
}

/* The device's cuDNN plans (cuda/cuda_stats.h): false where /gpu:0 is
 * not the CUDA module's. */
static bool plan_counts(int *plans, int *nondeterministic)
{
    void (*counts)(void *impl, int *plans, int *nondeterministic) = NULL;
    fl_device *d = fl_accelerator(0);
    if (d && !d->is_host)
        *(void **)&counts = cuda_module_symbol("fl_cuda_conv_plan_counts");
    *plans = *nondeterministic = 0;
    if (counts)
        counts(d->impl, plans, nondeterministic);
    return counts != NULL;
}

/* Every plan the device keeps runs a deterministic algorithm, and the
 * second run, with the same shapes, made no plan of its own. */
static void check_plans(int plans_after_first)
{
    int plans, nondeterministic;
    if (!plan_counts(&plans, &nondeterministic)) {
        skip("cuDNN's plans", "/gpu:0 is not the CUDA module's");
        return;
    }
    if (!ok(plans > 0 && nondeterministic == 0, "every cuDNN algorithm chosen is deterministic"))
        diag("%d of %d plans run an algorithm cuDNN does not mark deterministic", nondeterministic, plans);
    ok(plans == plans_after_first, "the second run found the first run's plans (%d, then %d)", plans_after_first,
       plans);
}

int main(void)
{
    /* Both before the first flowlab call: the backend is picked, and the
     * variable read, when the device first opens. */
    setenv("FLOWLAB_BACKEND", "cuda", 1);
    setenv("FLOWLAB_DETERMINISTIC", "1", 1);
    unsetenv("FLOWLAB_CUDA_GRAPH");
    serial_run serial = {.rc = -1};
    /* The child first: a process that has touched CUDA cannot fork one that uses it. */
    bool child_ran = measure_in_child("FLOWLAB_CUDA_GRAPH", "serial", &serial, sizeof serial, train_serial);
    require_cuda();
    float first[STEPS] = {0}, second[STEPS] = {0};
    int plans = 0, nondeterministic;
    bool trained = train_once("first", first) == 0;
    plan_counts(&plans, &nondeterministic);
    if (trained && train_once("second", second) == 0) {
        check_trained(first);
        compare(first, second);
        check_plans(plans);
        check_graph_edges(child_ran, &serial, first, graph_replays());
    }
    return done_testing();
}
