/* test_fused_updates.c: an update of the towers' mean, Apply*(..., Div(AddN(g1..gk), k)),
 * runs as one fused kernel (src/session_fusion.c, issue 42): SGD, Momentum and
 * Adam, k = 1, 2 and 3, on /cpu:0 and on /gpu:0, with the gradients on the
 * update's device or on the towers' (/gpu:0, /gpu:1), leave the variable with
 * exactly the bits the unfused AddN, Div and update leave, in three steps; the
 * timeline shows the fused op and no AddN or Div; a mean that is also
 * fetched is not fused. */
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "tap.h"

/* Three 1024-element blocks and a remainder, over the host's threads. */
enum { ROWS = 3, COLS = 1031, STEPS = 3 };

typedef struct {
    fl_graph *g;
    fl_node *w, *parts[3], *mean, *train, *init;
    int k;
} model;

static fl_optimizer *optimizer(int which)
{
    if (which == 0)
        return fl_gradient_descent_optimizer(0.1f);
    if (which == 1)
        return fl_momentum_optimizer(0.05f, 0.9f, true);
    return fl_adam_optimizer(0.01f, 0.9f, 0.999f, 1e-8f);
}

static const char *const optimizer_names[] = {"SGD", "Momentum", "Adam"};

/* w on device; gradient part t fed on parts_device[t]. */
static model build(int which, int k, const char *device, const char *const *parts_device)
{
    model m = {.g = fl_graph_new(), .k = k};
    fl_graph *g = m.g;
    fl_shape shape = fl_shape_make(2, ROWS, COLS);
    for (int t = 0; t < k; t++) {
        fl_device_scope_push(g, parts_device[t]);
        m.parts[t] = fl_placeholder(g, FL_FLOAT32, shape, "tower_gradient");
        fl_device_pop(g);
    }
    fl_device_scope_push(g, device);
    m.w = fl_get_variable(g, "w", shape, fl_random_uniform_initializer(-1, 1, 7));
    fl_node *sum = k > 1 ? fl_add_n(g, m.parts, k, NULL) : m.parts[0];
    m.mean = fl_div(g, sum, fl_scalar(g, (float)k, NULL), "mean");
    fl_optimizer *opt = optimizer(which);
    fl_grad_var pair = {m.mean, m.w};
    m.train = fl_apply_gradients(opt, g, &pair, 1, NULL, "train");
    fl_optimizer_free(opt);
    fl_device_pop(g);
    m.init = fl_global_variables_initializer(g);
    if (fl_graph_error(g))
        diag("graph error: %s", fl_graph_error(g));
    return m;
}

/* Part t's values at a step: spread over [-1, 1), different each step. */
static fl_tensor *part_values(int t, int step)
{
    fl_tensor *v = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, ROWS, COLS));
    for (int64_t i = 0; i < ROWS * COLS; i++)
        fl_tensor_floats(v)[i] = (float)((i * 37 + t * 101 + step * 13) % 97) / 48.5f - 1.0f;
    return v;
}

/* Trains STEPS steps and fetches w (and the mean too when fetch_mean);
 * *fused_ops counts the fused updates the last step's timeline shows, *plain_ops its AddN and Div. */
static fl_tensor *train(const model *m, const fl_session_options *options, bool fetch_mean, int *fused_ops,
                        int *plain_ops)
{
    fl_session *s = fl_session_new(m->g, options);
    fl_tensor *w = NULL, *mean = NULL;
    int rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &m->init, 1);
    for (int step = 0; rc == 0 && step < STEPS; step++) {
        fl_tensor *values[3];
        fl_feed feeds[3];
        for (int t = 0; t < m->k; t++) {
            values[t] = part_values(t, step);
            feeds[t] = (fl_feed){m->parts[t], values[t]};
        }
        fl_session_set_tracing(s, step == STEPS - 1);
        rc = fl_session_run(s, feeds, m->k, &m->mean, fetch_mean, &mean, &m->train, 1);
        fl_tensor_free(mean);
        mean = NULL;
        for (int t = 0; t < m->k; t++)
            fl_tensor_free(values[t]);
    }
    fl_step_event events[64];
    int n = rc == 0 ? fl_session_step_events(s, events, 64) : 0;
    *fused_ops = *plain_ops = 0;
    for (int i = 0; i < n && i < 64; i++) {
        *fused_ops += strncmp(events[i].op, "FusedApply", 10) == 0;
        *plain_ops += strcmp(events[i].op, "AddN") == 0 || strcmp(events[i].op, "Div") == 0;
    }
    if (rc == 0)
        rc = fl_session_run(s, NULL, 0, &m->w, 1, &w, NULL, 0);
    if (rc != 0)
        diag("the run failed: %s", fl_session_error(s));
    fl_session_free(s);
    return w;
}

static bool same_bits(const fl_tensor *a, const fl_tensor *b)
{
    return a && b && memcmp(a->data, b->data, (size_t)fl_shape_size(a->shape) * sizeof(float)) == 0;
}

static void test_exact(const char *device, const char *const *parts_device, const char *where)
{
    static const fl_session_options unfused = {.disable_fusion = true};
    for (int which = 0; which < 3; which++)
        for (int k = 1; k <= 3; k++) {
            model m = build(which, k, device, parts_device);
            int fused_ops, plain_ops, ignored;
            fl_tensor *fused = train(&m, NULL, false, &fused_ops, &plain_ops);
            fl_tensor *plain = train(&m, &unfused, false, &ignored, &ignored);
            ok(same_bits(fused, plain) && fused_ops == 1 && plain_ops == 0,
               "%s, %s, the mean of %d on %s: %d steps fused leave w's exact bits, one fused update "
               "and %d AddN or Div run", optimizer_names[which], device, k, where, STEPS, plain_ops);
            fl_tensor_free(fused);
            fl_tensor_free(plain);
            fl_graph_free(m.g);
        }
}

/* The mean read twice (the update and a fetch) stays a value of its own. */
static void test_fetched_mean_not_fused(void)
{
    const char *host[3] = {"/cpu:0", "/cpu:0", "/cpu:0"};
    model m = build(2, 2, "/cpu:0", host);
    int fused_ops, plain_ops;
    fl_tensor *w = train(&m, NULL, true, &fused_ops, &plain_ops);
    ok(w && fused_ops == 0 && plain_ops == 2, "a fetched mean is not fused: %d fused updates, %d AddN or Div",
       fused_ops, plain_ops);
    fl_tensor_free(w);
    fl_graph_free(m.g);
}

int main(void)
{
    unsetenv("FLOWLAB_FUSION");
    setenv("POCL_DEVICES", "pthread pthread", 1); /* two towers where PoCL is the OpenCL */
    const char *host[3] = {"/cpu:0", "/cpu:0", "/cpu:0"};
    test_exact("/cpu:0", host, "/cpu:0");
    test_fetched_mean_not_fused();
    fl_device_info devices[4];
    int naccelerators = fl_list_devices(devices, 4) - 1;
    const char *backend = naccelerators > 0 ? devices[1].backend : "none";
    if (strcmp(backend, "opencl") != 0) {
        skip("the fused updates on /gpu:0 and gradients on the towers", "no OpenCL /gpu:0 here (the CUDA "
             "backend runs the updates unfused)");
        return done_testing();
    }
    const char *gpu0[3] = {"/gpu:0", "/gpu:0", "/gpu:0"};
    test_exact("/gpu:0", gpu0, "/gpu:0");
    const char *towers[3] = {"/gpu:0", naccelerators > 1 ? "/gpu:1" : "/gpu:0", "/gpu:0"};
    test_exact("/cpu:0", towers, naccelerators > 1 ? "the towers /gpu:0 and /gpu:1" : "the tower /gpu:0");
    return done_testing();
}
