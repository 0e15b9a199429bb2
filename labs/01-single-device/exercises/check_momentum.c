/* check_momentum.c: checks my_momentum_update (exercise momentum-update).
 * Two copies of one small problem, minimise sum(c * w * w), train side by
 * side for a few steps: one with your update, one with flowlab's own
 * fl_momentum_optimizer. Their weights must agree after every step. */
#include "exercises.h"
#include "../../common/check.h"

#define STEPS 6
static const float start[4] = {1.0f, -2.0f, 0.5f, 3.0f}, coef[4] = {0.5f, 1.0f, 2.0f, 0.25f};

/* w and its gradient; the loss is sum(c * w * w) */
static fl_node *problem(fl_graph *g, fl_node **grad)
{
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 4), fl_zeros_initializer());
    fl_tensor *ct = fl_tensor_from_floats(fl_shape_make(1, 4), coef);
    fl_node *c = fl_constant(g, ct, "c");
    fl_tensor_free(ct);
    fl_node *loss = fl_reduce_sum(g, fl_mul(g, c, fl_mul(g, w, w, NULL), NULL), NULL, 0, false,
                                  "loss");
    fl_gradients(g, loss, &w, 1, grad);
    return w;
}

/* A session with w set to `start`. */
static fl_session *start_session(fl_graph *g, fl_node *w)
{
    fl_tensor *st = fl_tensor_from_floats(fl_shape_make(1, 4), start);
    fl_node *set = fl_assign(g, w, fl_constant(g, st, NULL), NULL);
    fl_tensor_free(st);
    fl_node *init = fl_global_variables_initializer(g);
    check_graph(g);
    fl_session *s = fl_session_new(g, NULL);
    run(s, NULL, 0, NULL, init);
    run(s, NULL, 0, NULL, set);
    return s;
}

int main(void)
{
    check_start("momentum-update", "labs/01-single-device/exercises/momentum.c");
    const float lr = 0.1f, mu = 0.9f;
    fl_graph *mine = fl_graph_new(), *ref = fl_graph_new();
    fl_node *grad_mine = NULL, *grad_ref = NULL;
    fl_node *w_mine = problem(mine, &grad_mine), *w_ref = problem(ref, &grad_ref);
    int trainable_before = fl_trainable_variables(mine, NULL, 0);
    int global_before = fl_global_variables(mine, NULL, 0);

    fl_node *update = my_momentum_update(mine, w_mine, grad_mine, lr, mu);
    if (!update && !fl_graph_error(mine))
        fail("not implemented yet (my_momentum_update returned NULL)");
    check_graph(mine);
    if (fl_trainable_variables(mine, NULL, 0) != trainable_before)
        fail("the update made a trainable variable; the accumulator is a slot, so create it "
             "with fl_get_variable_typed(..., trainable false)");
    if (fl_global_variables(mine, NULL, 0) != global_before + 1)
        fail("the update made %d new variables; it needs exactly one, the accumulator",
             fl_global_variables(mine, NULL, 0) - global_before);
    if (!fl_graph_find(mine, "w/Momentum"))
        fail("no variable named w/Momentum; name the slot \"<var>/Momentum\"");

    fl_grad_var pair = {grad_ref, w_ref};
    fl_optimizer *opt = fl_momentum_optimizer(lr, mu, false);
    fl_node *reference = fl_apply_gradients(opt, ref, &pair, 1, NULL, "Momentum");
    fl_session *s_mine = start_session(mine, w_mine), *s_ref = start_session(ref, w_ref);
    for (int step = 1; step <= STEPS; step++) {
        run(s_mine, NULL, 0, NULL, update);
        run(s_ref, NULL, 0, NULL, reference);
        fl_tensor *a = run(s_mine, NULL, 0, w_mine, NULL), *b = run(s_ref, NULL, 0, w_ref, NULL);
        for (int i = 0; i < 4; i++) {
            float got = fl_tensor_floats(a)[i], want = fl_tensor_floats(b)[i];
            if (fabsf(got - want) > 1e-5f * (1 + fabsf(want)))
                fail("after step %d, w[%d] is %g but momentum gives %g%s", step, i, got, want,
                     step == 1 ? " (is the first step var -= lr * grad?)"
                               : " (does accum keep its value between steps?)");
        }
        fl_tensor_free(a);
        fl_tensor_free(b);
    }
    fl_session_free(s_mine);
    fl_session_free(s_ref);
    fl_optimizer_free(opt);
    fl_graph_free(mine);
    fl_graph_free(ref);
    pass();
}
