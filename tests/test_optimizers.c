/* test_optimizers.c: one or two steps of SGD, Momentum and Adam, checked
 * against values worked out by hand; and the global step's increments.
 * The loss is sum(var * c), so the gradient is the constant c = [0.5, -1]. */
#include <stdlib.h>

#include "tap.h"
#include "flowlab.h"

typedef struct {
    fl_graph *g;
    fl_session *s;
    fl_node *var, *train, *step;
} fixture;

/* The fixture, with opt still the caller's to free. */
static fixture setup_keeping(fl_optimizer *opt)
{
    fixture f = {fl_graph_new(), NULL, NULL, NULL, NULL};
    const float start[2] = {1, 2}, c[2] = {0.5f, -1};
    fl_tensor *ct = fl_tensor_from_floats(fl_shape_make(1, 2), c);
    f.var = fl_get_variable(f.g, "var", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_node *loss = fl_reduce_sum(f.g, fl_mul(f.g, f.var, fl_constant(f.g, ct, "c"), NULL), NULL, 0, false, NULL);
    f.step = fl_get_or_create_global_step(f.g);
    f.train = fl_minimize(opt, f.g, loss, f.step, NULL);
    fl_node *init = fl_global_variables_initializer(f.g);
    fl_tensor *st = fl_tensor_from_floats(fl_shape_make(1, 2), start);
    fl_node *set = fl_assign(f.g, f.var, fl_constant(f.g, st, NULL), NULL);
    if (fl_graph_error(f.g))
        diag("graph error: %s", fl_graph_error(f.g));
    f.s = fl_session_new(f.g, NULL);
    fl_session_run(f.s, NULL, 0, NULL, 0, NULL, &init, 1);
    fl_session_run(f.s, NULL, 0, NULL, 0, NULL, &set, 1);
    fl_tensor_free(ct);
    fl_tensor_free(st);
    return f;
}

static fixture setup(fl_optimizer *opt)
{
    fixture f = setup_keeping(opt);
    fl_optimizer_free(opt);
    return f;
}

static void step_and_check(fixture *f, float want0, float want1, const char *what)
{
    if (fl_session_run(f->s, NULL, 0, NULL, 0, NULL, &f->train, 1) != 0)
        diag("train failed: %s", fl_session_error(f->s));
    fl_tensor *v = NULL;
    fl_session_run(f->s, NULL, 0, &f->var, 1, &v, NULL, 0);
    bool pass = v && fabsf(fl_tensor_floats(v)[0] - want0) < 1e-5f && fabsf(fl_tensor_floats(v)[1] - want1) < 1e-5f;
    ok(pass, "%s", what);
    if (!pass && v)
        diag("got [%.7g, %.7g], want [%.7g, %.7g]", fl_tensor_floats(v)[0], fl_tensor_floats(v)[1], want0, want1);
    fl_tensor_free(v);
}

static void teardown(fixture *f)
{
    fl_session_free(f->s);
    fl_graph_free(f->g);
}

/* A schedule (--warmup_steps) sets the rate between runs: the next update
 * uses the new one, and the step after it keeps it. */
static void test_set_learning_rate(void)
{
    fl_optimizer *sgd = fl_gradient_descent_optimizer(0.1f);
    fixture f = setup_keeping(sgd);
    step_and_check(&f, 0.95f, 2.1f, "SGD at 0.1: var - 0.1 * grad");
    fl_optimizer_set_learning_rate(sgd, 0.4f);
    step_and_check(&f, 0.75f, 2.5f, "set_learning_rate(0.4): the next update moves 4 times as far");
    step_and_check(&f, 0.55f, 2.9f, "and the one after it keeps the new rate");
    fl_optimizer_free(sgd);
    teardown(&f);
}

/* A variable big enough that /cpu:0 splits the update across threads
 * (src/host/host_parallel.c): every element must take the same two steps as the
 * hand-checked ones above, whichever thread updated it. */
enum { LARGE = 300007 };

static void check_large(fl_optimizer *opt, float first, float second, const char *what)
{
    fl_graph *g = fl_graph_new();
    float *c = malloc(LARGE * sizeof *c);
    for (int i = 0; i < LARGE; i++)
        c[i] = i % 2 ? -1.0f : 0.5f; /* the same gradients as the small tests' two weights */
    fl_tensor *ct = fl_tensor_from_floats(fl_shape_make(1, LARGE), c);
    fl_node *var = fl_get_variable(g, "var", fl_shape_make(1, LARGE), fl_zeros_initializer());
    fl_node *loss = fl_reduce_sum(g, fl_mul(g, var, fl_constant(g, ct, "c"), NULL), NULL, 0, false, NULL);
    fl_node *train = fl_minimize(opt, g, loss, NULL, NULL), *init = fl_global_variables_initializer(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *v = NULL;
    fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    fl_session_run(s, NULL, 0, NULL, 0, NULL, &train, 1);
    fl_session_run(s, NULL, 0, NULL, 0, NULL, &train, 1);
    int bad = fl_session_run(s, NULL, 0, &var, 1, &v, NULL, 0) == 0 ? 0 : LARGE;
    for (int i = 0; v && i < LARGE; i++) {
        float want = i % 2 ? -second : first;
        if (fabsf(fl_tensor_floats(v)[i] - want) > 1e-5f && bad++ == 0)
            diag("element %d: got %.7g, want %.7g", i, fl_tensor_floats(v)[i], want);
    }
    ok(bad == 0, "%s: all %d elements of a large variable take the same steps (%d differ)", what, LARGE, bad);
    fl_tensor_free(v);
    fl_session_free(s);
    fl_tensor_free(ct);
    free(c);
    fl_optimizer_free(opt);
    fl_graph_free(g);
}

static void test_large_variables(void)
{
    check_large(fl_gradient_descent_optimizer(0.1f), -0.1f, -0.2f, "SGD");
    check_large(fl_momentum_optimizer(0.1f, 0.9f, false), -0.145f, -0.29f, "Momentum");
    check_large(fl_adam_optimizer(0.1f, 0.9f, 0.999f, 1e-8f), -0.2f, -0.2f, "Adam");
}

/* fl_apply_gradients_scoped (chapter 7's updates by layer): each update in
 * its own scope, one pair of beta powers and one increment for them all. */
static void test_scoped_updates(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *a = fl_get_variable(g, "a", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_node *b = fl_get_variable(g, "b", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_node *loss = fl_reduce_sum(g, fl_add(g, a, b, NULL), NULL, 0, false, NULL);
    fl_grad_var pairs[2];
    fl_compute_gradients(g, loss, NULL, 0, pairs);
    const char *scopes[2] = {"layer_a", "layer_b"};
    fl_optimizer *adam = fl_adam_optimizer(0.1f, 0.9f, 0.999f, 1e-8f);
    fl_node *train = fl_apply_gradients_scoped(adam, g, pairs, 2, scopes, fl_get_or_create_global_step(g), "train");
    ok(train && fl_graph_find(g, "train/layer_a/ApplyAdam") && fl_graph_find(g, "train/layer_b/ApplyAdam"),
       "scoped updates: each variable's update in its scope (%s)", fl_graph_error(g) ? fl_graph_error(g) : "");
    ok(fl_graph_find(g, "train/beta1_power") && !fl_graph_find(g, "train/beta1_power_1") &&
       fl_global_variables(g, NULL, 0) == 9, "and one pair of beta powers for both (a, b, their 4 slots, the "
       "step, 2 powers: %d variables)", fl_global_variables(g, NULL, 0));
    fl_optimizer_free(adam);
    fl_graph_free(g);
}

int main(void)
{
    /* SGD: var - 0.1 * c */
    fixture f = setup(fl_gradient_descent_optimizer(0.1f));
    step_and_check(&f, 0.95f, 2.1f, "SGD: one step is var - lr * grad");
    step_and_check(&f, 0.90f, 2.2f, "SGD: a second step");
    fl_tensor *step = NULL;
    fl_session_run(f.s, NULL, 0, &f.step, 1, &step, NULL, 0);
    ok(step && step->dtype == FL_INT32 && fl_tensor_ints(step)[0] == 2, "the global step counts the updates");
    fl_tensor_free(step);
    teardown(&f);

    /* Momentum 0.9: accum = g, then 1.9 g */
    f = setup(fl_momentum_optimizer(0.1f, 0.9f, false));
    step_and_check(&f, 0.95f, 2.1f, "Momentum: first step uses accum = grad");
    step_and_check(&f, 0.855f, 2.29f, "Momentum: second step uses accum = 1.9 grad");
    teardown(&f);

    /* Nesterov: var -= lr * (g + 0.9 * accum) = lr * 1.9 g on the first step */
    f = setup(fl_momentum_optimizer(0.1f, 0.9f, true));
    step_and_check(&f, 0.905f, 2.19f, "Nesterov momentum: first step");
    teardown(&f);

    /* Adam (0.1, 0.9, 0.999, 1e-8) with a constant gradient:
     * step 1: m = 0.1 g, v = 0.001 g^2, lr_t = 0.1 sqrt(0.001) / 0.1
     *         update = lr_t m / sqrt(v) = 0.1 sign(g)
     * step 2: m = 0.19 g, v = 0.001999 g^2, lr_t = 0.1 sqrt(0.001999) / 0.19
     *         update = 0.1 sign(g) again */
    f = setup(fl_adam_optimizer(0.1f, 0.9f, 0.999f, 1e-8f));
    step_and_check(&f, 0.9f, 2.1f, "Adam: first step moves each weight by lr");
    step_and_check(&f, 0.8f, 2.2f, "Adam: bias correction keeps the second step at lr");
    fl_node *power = fl_graph_find(f.g, "Adam/beta1_power");
    fl_tensor *p = NULL;
    ok(power && fl_session_run(f.s, NULL, 0, &power, 1, &p, NULL, 0) == 0 && fabsf(fl_tensor_scalar(p) - 0.729f) < 1e-6f,
       "beta1_power is beta1^3 after two steps");
    fl_tensor_free(p);
    ok(fl_graph_find(f.g, "var/Adam") && fl_graph_find(f.g, "var/Adam_1"), "slots are named after their variable");
    int nglobal = fl_global_variables(f.g, NULL, 0);
    ok(nglobal == 6, "global variables: var, global_step, beta1_power, beta2_power and two slots (%d)", nglobal);
    teardown(&f);

    test_large_variables();
    test_set_learning_rate();
    test_scoped_updates();

    /* A gradient that does not match its variable is refused by name. */
    fl_graph *g = fl_graph_new();
    fl_node *v = fl_get_variable(g, "v", fl_shape_make(1, 3), fl_zeros_initializer());
    fl_node *wrong = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 4), "wrong_grad");
    fl_grad_var pair = {wrong, v};
    fl_optimizer *sgd = fl_gradient_descent_optimizer(0.1f);
    ok(fl_apply_gradients(sgd, g, &pair, 1, NULL, NULL) == NULL, "a mis-shaped gradient is refused");
    is_string(fl_graph_error(g), "GradientDescent/ApplyGradientDescent: gradient wrong_grad has shape [4] but variable v is [3]",
              "naming the gradient and the variable");
    fl_optimizer_free(sgd);
    fl_graph_free(g);
    return done_testing();
}
