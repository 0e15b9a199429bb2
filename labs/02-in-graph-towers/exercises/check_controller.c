/* check_controller.c: checks my_build_towers (exercise controller). For a
 * controller on /cpu:0 and then on /gpu:0 it builds two towers (/gpu:0 and
 * /gpu:1) of a small model and checks where every node asks to run
 * (fl_node_device): each variable, slot and the global step on the
 * controller, each tower's matrix multiplies on its own device. Then it
 * trains with soft placement (so it runs with or without accelerators) and
 * compares the losses with one device training on the whole batch. */
#include "exercises.h"
#include "../../common/check.h"

#define BATCH 8
#define STEPS 5

static fl_node *small_model_loss(fl_graph *g, fl_node *x, fl_node *y)
{
    fl_variable_scope_push(g, "hidden", FL_REUSE_INHERIT);
    fl_node *w1 = fl_get_variable(g, "kernel", fl_shape_make(2, 4, 8),
                                  fl_glorot_uniform_initializer(0));
    fl_variable_scope_pop(g);
    fl_variable_scope_push(g, "logits", FL_REUSE_INHERIT);
    fl_node *w2 = fl_get_variable(g, "kernel", fl_shape_make(2, 8, 3),
                                  fl_glorot_uniform_initializer(0));
    fl_variable_scope_pop(g);
    fl_node *h = fl_tanh(g, fl_matmul(g, x, w1, false, false, NULL), NULL);
    fl_node *logits = fl_matmul(g, h, w2, false, false, NULL);
    return fl_reduce_mean(g, fl_sparse_softmax_cross_entropy_with_logits(g, y, logits, NULL),
                          NULL, 0, false, "loss");
}

/* Feeds the same batch STEPS times; losses[i] is the loss before update i. */
static void train(fl_graph *g, fl_node *x, fl_node *y, fl_node *loss, fl_node *train_op,
                  float *losses)
{
    float xv[BATCH * 4];
    int32_t yv[BATCH];
    for (int i = 0; i < BATCH; i++) {
        for (int j = 0; j < 4; j++)
            xv[i * 4 + j] = (float)sin(i * 1.3 + j * 0.7);
        yv[i] = i % 3;
    }
    fl_tensor *xt = fl_tensor_from_floats(fl_shape_make(2, BATCH, 4), xv);
    fl_tensor *yt = fl_tensor_from_ints(fl_shape_make(1, BATCH), yv);
    fl_feed feeds[2] = {{x, xt}, {y, yt}};
    fl_node *init = fl_global_variables_initializer(g);
    check_graph(g);
    fl_session_options options = {.allow_soft_placement = true};
    fl_session *s = fl_session_new(g, &options);
    run(s, NULL, 0, NULL, init);
    for (int i = 0; i < STEPS; i++) {
        fl_tensor *value = NULL;
        if (fl_session_run(s, feeds, 2, &loss, 1, &value, &train_op, 1) != 0)
            fail("training: %s", fl_session_error(s));
        losses[i] = fl_tensor_scalar(value);
        fl_tensor_free(value);
    }
    fl_session_free(s);
    fl_tensor_free(xt);
    fl_tensor_free(yt);
}

static void check_controller(const char *controller, const float *want)
{
    static const char *const devices[2] = {"/gpu:0", "/gpu:1"};
    fl_graph *g = fl_graph_new();
    fl_graph_set_random_seed(g, 7);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 4), "x");
    fl_node *y = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "y");
    fl_optimizer *opt = fl_adam_optimizer(0.05f, 0.9f, 0.999f, 1e-8f);
    tower_ops ops = my_build_towers(g, small_model_loss, x, y, devices, 2, controller, opt);
    if (!ops.train_op && !ops.loss && !fl_graph_error(g))
        fail("not implemented yet (my_build_towers returned no train op)");
    check_graph(g);
    if (!ops.train_op || !ops.loss)
        fail("my_build_towers returned a NULL train op or loss");

    if (fl_trainable_variables(g, NULL, 0) != 2)
        fail("the towers made %d trainable variables; the model has 2, shared by every tower "
             "(reuse them after the first tower)", fl_trainable_variables(g, NULL, 0));
    fl_node *vars[64];
    int nvars = fl_global_variables(g, vars, 64);
    for (int i = 0; i < nvars; i++)
        if (strcmp(fl_node_device(vars[i]), controller) != 0)
            fail("with controller %s, the variable %s asks for '%s'; every variable (Adam's "
                 "slots and the global step too) belongs on the controller", controller,
                 fl_node_name(vars[i]), fl_node_device(vars[i]));
    int matmuls[2] = {0, 0};
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        fl_node *n = fl_graph_node(g, i);
        if (strcmp(fl_node_op_type(n), "MatMul") != 0)
            continue;
        int t = strcmp(fl_node_device(n), devices[0]) == 0   ? 0
                : strcmp(fl_node_device(n), devices[1]) == 0 ? 1
                                                             : -1;
        if (t < 0)
            fail("%s, a matrix multiply of the model or of its gradient, asks for '%s'; a "
                 "tower's work belongs on the tower's device (/gpu:0 or /gpu:1)", fl_node_name(n),
                 fl_node_device(n));
        char prefix[16];
        snprintf(prefix, sizeof prefix, "tower_%d/", t);
        if (strncmp(fl_node_name(n), prefix, strlen(prefix)) != 0)
            fail("%s runs on %s but is not in name scope %s", fl_node_name(n), devices[t], prefix);
        matmuls[t]++;
    }
    if (matmuls[0] == 0 || matmuls[0] != matmuls[1])
        fail("tower_0 has %d matrix multiplies and tower_1 %d; each tower should hold one whole "
             "copy of the model and its gradients", matmuls[0], matmuls[1]);
    if (strcmp(fl_node_device(ops.loss), controller) != 0)
        fail("the mean loss asks for '%s'; build it on the controller, %s",
             fl_node_device(ops.loss), controller);

    float losses[STEPS];
    train(g, x, y, ops.loss, ops.train_op, losses);
    for (int i = 0; i < STEPS; i++)
        if (fabsf(losses[i] - want[i]) > 1e-4f * fabsf(want[i]))
            fail("with controller %s, the loss before update %d is %g, but one device with the "
                 "whole batch has %g; are the gradients averaged (not summed)?", controller, i,
                 losses[i], want[i]);
    fl_optimizer_free(opt);
    fl_graph_free(g);
}

int main(void)
{
    check_start("controller", "labs/02-in-graph-towers/exercises/controller.c");
    /* The reference: one device, the whole batch, the same seed and optimizer. */
    fl_graph *g = fl_graph_new();
    fl_graph_set_random_seed(g, 7);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 4), "x");
    fl_node *y = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "y");
    fl_variable_scope_push(g, "model", FL_REUSE_INHERIT);
    fl_node *loss = small_model_loss(g, x, y);
    fl_variable_scope_pop(g);
    fl_optimizer *opt = fl_adam_optimizer(0.05f, 0.9f, 0.999f, 1e-8f);
    fl_node *train_op = fl_minimize(opt, g, loss, fl_get_or_create_global_step(g), "train");
    float want[STEPS];
    train(g, x, y, loss, train_op, want);
    fl_optimizer_free(opt);
    fl_graph_free(g);

    check_controller("/cpu:0", want);
    check_controller("/gpu:0", want);
    pass();
}
