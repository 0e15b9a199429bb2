/* test_learns_xor.c: a small network learns XOR, a problem no linear model
 * solves, to near-zero loss: the whole stack (graph, autodiff, Adam, session)
 * working together. */
#include "tap.h"
#include "flowlab.h"

int main(void)
{
    const float inputs[8] = {0, 0, 0, 1, 1, 0, 1, 1};
    const int32_t targets[4] = {0, 1, 1, 0};
    fl_graph *g = fl_graph_new();
    fl_graph_set_random_seed(g, 1);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 2), "x");
    fl_node *y = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "y");
    fl_variable_scope_push(g, "hidden", FL_REUSE_INHERIT);
    fl_node *w1 = fl_get_variable(g, "kernel", fl_shape_make(2, 2, 8), fl_glorot_uniform_initializer(0));
    fl_node *b1 = fl_get_variable(g, "bias", fl_shape_make(1, 8), fl_zeros_initializer());
    fl_variable_scope_pop(g);
    fl_node *h = fl_tanh(g, fl_add(g, fl_matmul(g, x, w1, false, false, NULL), b1, NULL), NULL);
    fl_variable_scope_push(g, "logits", FL_REUSE_INHERIT);
    fl_node *w2 = fl_get_variable(g, "kernel", fl_shape_make(2, 8, 2), fl_glorot_uniform_initializer(0));
    fl_node *b2 = fl_get_variable(g, "bias", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_variable_scope_pop(g);
    fl_node *logits = fl_add(g, fl_matmul(g, h, w2, false, false, NULL), b2, NULL);
    fl_node *loss = fl_reduce_mean(g, fl_sparse_softmax_cross_entropy_with_logits(g, y, logits, NULL),
                                   NULL, 0, false, "loss");
    fl_optimizer *adam = fl_adam_optimizer(0.05f, 0.9f, 0.999f, 1e-8f);
    fl_node *train = fl_minimize(adam, g, loss, fl_get_or_create_global_step(g), "Adam");
    fl_node *init = fl_global_variables_initializer(g);
    ok(fl_graph_error(g) == NULL, "the network builds");

    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *xt = fl_tensor_from_floats(fl_shape_make(2, 4, 2), inputs);
    fl_tensor *yt = fl_tensor_from_ints(fl_shape_make(1, 4), targets);
    fl_feed feeds[2] = {{x, xt}, {y, yt}};
    fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    float first = -1, last = -1;
    for (int step = 0; step < 400; step++) {
        fl_tensor *value = NULL;
        if (fl_session_run(s, feeds, 2, &loss, 1, &value, &train, 1) != 0) {
            diag("step %d: %s", step, fl_session_error(s));
            break;
        }
        last = fl_tensor_scalar(value);
        if (step == 0)
            first = last;
        fl_tensor_free(value);
    }
    diag("loss %.4f -> %.6f", first, last);
    ok(first > 0.5f, "the untrained loss is near log 2 (%.3f)", first);
    ok(last >= 0 && last < 0.01f, "after 400 steps the loss is below 0.01 (%.6f)", last);

    fl_node *pred = fl_argmax(g, logits, 1, "prediction");
    fl_tensor *p = NULL;
    fl_session_run(s, feeds, 2, &pred, 1, &p, NULL, 0);
    ok(p && memcmp(p->data, targets, sizeof targets) == 0, "every XOR case is classified right");
    fl_tensor_free(p);
    fl_tensor_free(xt);
    fl_tensor_free(yt);
    fl_session_free(s);
    fl_optimizer_free(adam);
    fl_graph_free(g);
    return done_testing();
}
