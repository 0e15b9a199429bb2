/* test_multi_adam.c: the fusion pass's multi-tensor Adam (src/session_fusion.c,
 * issue 41 item 4): the ApplyAdams of one optimizer on one device run as one
 * MultiApplyAdam, which leaves every variable and slot with exactly the bits
 * the per-variable kernels leave (sizes 1, 7, 4099 and a matrix, several
 * steps; 40 variables, past one group's 32), on /cpu:0 and on /gpu:0 (PoCL's
 * or CUDA's: there one launch); the timeline shows one MultiApplyAdam and
 * no ApplyAdam; updates with other beta powers or another rate stay apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "tap.h"

enum { STEPS = 4, MAX_VARS = 40 };

typedef struct {
    fl_graph *g;
    int nvars;
    fl_node *vars[MAX_VARS], *grads[MAX_VARS], *slots[2 * MAX_VARS], *train, *init;
} model;

/* How a model's updates are made: one optimizer, or one per variable. */
typedef enum { ONE_OPTIMIZER, APART } recipe;

static fl_shape shape_of(int i, int nvars)
{
    static const int64_t sizes[] = {1, 7, 4099};
    if (nvars > 4)
        return fl_shape_make(1, (int64_t)(i % 5 + 1) * 3);
    return i < 3 ? fl_shape_make(1, sizes[i]) : fl_shape_make(2, 33, 65);
}

/* APART: variable 0 by Adam at 0.01 under "train", 1 at 0.02 under "train"
 * (the same beta powers, another rate), 2 at 0.01 under "other" (other powers). */
static fl_node *updates(fl_graph *g, const fl_grad_var *pairs, int nvars, recipe how)
{
    if (how == ONE_OPTIMIZER) {
        fl_optimizer *adam = fl_adam_optimizer(0.01f, 0.9f, 0.999f, 1e-8f);
        fl_node *train = fl_apply_gradients(adam, g, pairs, nvars, NULL, "train");
        fl_optimizer_free(adam);
        return train;
    }
    static const float rates[] = {0.01f, 0.02f, 0.01f};
    static const char *const names[] = {"train", "train", "other"};
    fl_node *each[3];
    for (int i = 0; i < nvars && i < 3; i++) {
        fl_optimizer *adam = fl_adam_optimizer(rates[i], 0.9f, 0.999f, 1e-8f);
        each[i] = fl_apply_gradients(adam, g, &pairs[i], 1, NULL, names[i]);
        fl_optimizer_free(adam);
    }
    return fl_group(g, each, nvars < 3 ? nvars : 3, "train_all");
}

static model build(const char *device, int nvars, recipe how)
{
    model m = {.g = fl_graph_new(), .nvars = nvars};
    fl_grad_var pairs[MAX_VARS];
    fl_device_scope_push(m.g, device);
    for (int i = 0; i < nvars; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        m.vars[i] = fl_get_variable(m.g, name, shape_of(i, nvars), fl_random_uniform_initializer(-1, 1, 7 + i));
        m.grads[i] = fl_placeholder(m.g, FL_FLOAT32, shape_of(i, nvars), "gradient");
        pairs[i] = (fl_grad_var){m.grads[i], m.vars[i]};
    }
    m.train = updates(m.g, pairs, nvars, how);
    fl_device_pop(m.g);
    for (int i = 0; i < nvars; i++) { /* Adam's slots, made by apply_gradients */
        char name[32];
        snprintf(name, sizeof name, "w%d/Adam", i);
        m.slots[2 * i] = fl_graph_find(m.g, name);
        snprintf(name, sizeof name, "w%d/Adam_1", i);
        m.slots[2 * i + 1] = fl_graph_find(m.g, name);
    }
    m.init = fl_global_variables_initializer(m.g);
    if (fl_graph_error(m.g))
        diag("graph error: %s", fl_graph_error(m.g));
    return m;
}

/* Gradient i's values at a step: spread over [-1, 1), some zero, new each step. */
static fl_tensor *gradient_values(fl_shape shape, int i, int step)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, shape);
    for (int64_t e = 0; e < fl_shape_size(shape); e++)
        fl_tensor_floats(t)[e] = (float)((e * 37 + i * 101 + step * 13) % 97) / 48.5f - 1.0f;
    return t;
}

typedef struct {
    fl_tensor *values[3 * MAX_VARS]; /* each variable, then its m and v */
    int multi, plain;                /* the last step's MultiApplyAdam and ApplyAdam events */
    bool ran;
} outcome;

static int one_step(fl_session *s, const model *m, int step)
{
    fl_feed feeds[MAX_VARS];
    for (int i = 0; i < m->nvars; i++)
        feeds[i] = (fl_feed){m->grads[i], gradient_values(fl_node_shape(m->vars[i]), i, step)};
    fl_session_set_tracing(s, step == STEPS - 1);
    int rc = fl_session_run(s, feeds, m->nvars, NULL, 0, NULL, &m->train, 1);
    for (int i = 0; i < m->nvars; i++)
        fl_tensor_free((fl_tensor *)feeds[i].value);
    return rc;
}

static void count_events(const fl_session *s, outcome *o)
{
    fl_step_event events[512];
    int n = fl_session_step_events(s, events, 512);
    for (int i = 0; i < n && i < 512; i++) {
        o->multi += strcmp(events[i].op, "MultiApplyAdam") == 0;
        o->plain += strcmp(events[i].op, "ApplyAdam") == 0;
    }
}

static outcome train(const model *m, const fl_session_options *options)
{
    outcome o = {0};
    fl_session *s = fl_session_new(m->g, options);
    int rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &m->init, 1);
    for (int step = 0; rc == 0 && step < STEPS; step++)
        rc = one_step(s, m, step);
    if (rc == 0)
        count_events(s, &o);
    fl_node *fetch[3 * MAX_VARS];
    for (int i = 0; i < m->nvars; i++) {
        fetch[i] = m->vars[i];
        fetch[m->nvars + 2 * i] = m->slots[2 * i];
        fetch[m->nvars + 2 * i + 1] = m->slots[2 * i + 1];
    }
    if (rc == 0)
        rc = fl_session_run(s, NULL, 0, fetch, 3 * m->nvars, o.values, NULL, 0);
    if (rc != 0)
        diag("the run failed: %s", fl_session_error(s));
    o.ran = rc == 0;
    fl_session_free(s);
    return o;
}

static void free_outcome(outcome *o, int nvars)
{
    for (int i = 0; o->ran && i < 3 * nvars; i++)
        fl_tensor_free(o->values[i]);
}

/* Whether every variable and slot holds the same bits; names the first that does not. */
static bool same_bits(const outcome *a, const outcome *b, const model *m)
{
    if (!a->ran || !b->ran)
        return false;
    for (int i = 0; i < 3 * m->nvars; i++) {
        const fl_tensor *x = a->values[i], *y = b->values[i];
        if (memcmp(x->data, y->data, (size_t)fl_shape_size(x->shape) * sizeof(float)) != 0) {
            diag("value %d of %d differs", i, 3 * m->nvars);
            return false;
        }
    }
    return true;
}

/* Fused, unfused (disable_fusion) and with this pass alone off (FLOWLAB_MULTI_ADAM=0). */
static void check(const char *device, int nvars, recipe how, int want_multi, const char *what)
{
    static const fl_session_options unfused = {.disable_fusion = true};
    model m = build(device, nvars, how);
    outcome fused = train(&m, NULL), plain = train(&m, &unfused);
    setenv("FLOWLAB_MULTI_ADAM", "0", 1);
    outcome alone_off = train(&m, NULL);
    unsetenv("FLOWLAB_MULTI_ADAM");
    int want_plain = nvars - (want_multi ? nvars : 0);
    ok(same_bits(&fused, &plain, &m) && same_bits(&fused, &alone_off, &m),
       "%s, %s: %d steps leave every variable and slot with the unfused bits", device, what, STEPS);
    ok(fused.multi == want_multi && fused.plain == want_plain,
       "%s, %s: the timeline shows %d MultiApplyAdam and %d ApplyAdam (want %d and %d)", device, what, fused.multi,
       fused.plain, want_multi, want_plain);
    ok(plain.multi == 0 && plain.plain == nvars && alone_off.multi == 0 && alone_off.plain == nvars,
       "%s, %s: unfused, or with FLOWLAB_MULTI_ADAM=0, %d ApplyAdam run (%d, %d)", device, what, nvars, plain.plain,
       alone_off.plain);
    free_outcome(&fused, nvars);
    free_outcome(&plain, nvars);
    free_outcome(&alone_off, nvars);
    fl_graph_free(m.g);
}

static void test_device(const char *device)
{
    check(device, 4, ONE_OPTIMIZER, 1, "sizes 1, 7, 4099 and [33, 65], one Adam");
    check(device, MAX_VARS, ONE_OPTIMIZER, 2, "40 variables (groups of 32 and 8)");
    check(device, 3, APART, 0, "another rate on the same beta powers, other beta powers");
}

int main(void)
{
    unsetenv("FLOWLAB_FUSION");
    unsetenv("FLOWLAB_MULTI_ADAM");
    test_device("/cpu:0");
    fl_device_info devices[4];
    const char *backend = fl_list_devices(devices, 4) > 1 ? devices[1].backend : "none";
    if (strcmp(backend, "cuda") == 0 || strcmp(backend, "opencl") == 0) {
        diag("/gpu:0 is %s's", backend);
        test_device("/gpu:0");
    } else
        skip("MultiApplyAdam on /gpu:0", "no OpenCL or CUDA /gpu:0 here");
    return done_testing();
}
