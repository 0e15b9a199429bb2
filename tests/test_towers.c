/* test_towers.c: in-graph replication is synchronous data parallelism.
 * N towers that each see B/N examples, with their gradients averaged on a
 * controller and applied once, follow the same loss trajectory as one
 * device that sees all B examples. Towers run on /gpu:i when accelerators
 * exist, else on /cpu:0; variables always live on the controller /cpu:0. */
#include <string.h>

#include "tap.h"
#include "flowlab.h"

#define BATCH 24
#define STEPS 15

typedef struct {
    fl_graph *g;
    fl_node *x, *y, *loss, *train;
} model;

static fl_node *dense(fl_graph *g, fl_node *x, int in, int out, const char *scope)
{
    fl_variable_scope_push(g, scope, FL_AUTO_REUSE);
    fl_node *w = fl_get_variable(g, "kernel", fl_shape_make(2, in, out), fl_glorot_uniform_initializer(0));
    fl_node *b = fl_get_variable(g, "bias", fl_shape_make(1, out), fl_zeros_initializer());
    fl_variable_scope_pop(g);
    return fl_add(g, fl_matmul(g, x, w, false, false, NULL), b, NULL);
}

static fl_node *tower_loss(fl_graph *g, fl_node *x, fl_node *y)
{
    fl_node *h = fl_tanh(g, dense(g, x, 6, 16, "hidden"), NULL);
    fl_node *logits = dense(g, h, 16, 3, "logits");
    return fl_reduce_mean(g, fl_sparse_softmax_cross_entropy_with_logits(g, y, logits, NULL), NULL, 0,
                          false, "loss");
}

static const char *variables_on_controller(const fl_node *n, void *tower_device)
{
    return strcmp(fl_node_op_type(n), "VariableV2") == 0 ? "/cpu:0" : tower_device;
}

/* The average of each variable's tower gradients, built on the controller. */
static void average_gradients(fl_graph *g, fl_grad_var (*towers)[8], int ntowers, int nvars,
                              fl_grad_var *out)
{
    fl_device_scope_push(g, "/cpu:0");
    for (int v = 0; v < nvars; v++) {
        fl_node *grads[8];
        for (int t = 0; t < ntowers; t++)
            grads[t] = towers[t][v].grad;
        fl_node *sum = fl_add_n(g, grads, ntowers, NULL);
        out[v] = (fl_grad_var){fl_div(g, sum, fl_scalar(g, (float)ntowers, NULL), NULL), towers[0][v].var};
    }
    fl_device_pop(g);
}

static model build(int ntowers, int naccelerators)
{
    model m = {fl_graph_new(), NULL, NULL, NULL, NULL};
    fl_graph *g = m.g;
    fl_graph_set_random_seed(g, 3);
    m.x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 6), "x");
    m.y = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "y");
    fl_node *xs[8], *ys[8], *losses[8];
    fl_split(g, m.x, ntowers, 0, xs, "split_x");
    fl_split(g, m.y, ntowers, 0, ys, "split_y");
    fl_grad_var grads[8][8];
    char device[8][16], scope[16];
    int nvars = 0;
    for (int t = 0; t < ntowers; t++) {
        snprintf(device[t], sizeof device[t], naccelerators ? "/gpu:%d" : "/cpu:0", naccelerators ? t % naccelerators : 0);
        snprintf(scope, sizeof scope, "tower_%d", t);
        fl_name_scope_push(g, scope);
        fl_device_function_push(g, variables_on_controller, device[t]);
        losses[t] = tower_loss(g, xs[t], ys[t]);
        nvars = fl_compute_gradients(g, losses[t], NULL, 0, grads[t]);
        fl_device_pop(g);
        fl_name_scope_pop(g);
    }
    fl_grad_var averaged[8];
    average_gradients(g, grads, ntowers, nvars, averaged);
    fl_device_scope_push(g, "/cpu:0");
    fl_node *sum = fl_add_n(g, losses, ntowers, NULL);
    m.loss = fl_div(g, sum, fl_scalar(g, (float)ntowers, NULL), "mean_loss");
    fl_optimizer *opt = fl_momentum_optimizer(0.2f, 0.9f, false);
    m.train = fl_apply_gradients(opt, g, averaged, nvars, fl_get_or_create_global_step(g), "train");
    fl_device_pop(g);
    fl_optimizer_free(opt);
    return m;
}

static bool trajectory(int ntowers, int naccelerators, float *losses)
{
    model m = build(ntowers, naccelerators);
    if (fl_graph_error(m.g)) {
        diag("%d towers: %s", ntowers, fl_graph_error(m.g));
        return false;
    }
    float xv[BATCH * 6];
    int32_t yv[BATCH];
    for (int i = 0; i < BATCH; i++) {
        for (int j = 0; j < 6; j++)
            xv[i * 6 + j] = (float)sin(i * 1.7 + j * 0.9);
        yv[i] = (xv[i * 6] > 0) + (xv[i * 6 + 1] > 0.5f); /* a class the features decide */
    }
    fl_tensor *xt = fl_tensor_from_floats(fl_shape_make(2, BATCH, 6), xv);
    fl_tensor *yt = fl_tensor_from_ints(fl_shape_make(1, BATCH), yv);
    fl_feed feeds[2] = {{m.x, xt}, {m.y, yt}};
    fl_session *s = fl_session_new(m.g, NULL);
    fl_node *init = fl_global_variables_initializer(m.g);
    bool pass = fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) == 0;
    for (int step = 0; pass && step < STEPS; step++) {
        fl_tensor *value = NULL;
        pass = fl_session_run(s, feeds, 2, &m.loss, 1, &value, &m.train, 1) == 0;
        losses[step] = pass ? fl_tensor_scalar(value) : NAN;
        fl_tensor_free(value);
    }
    if (!pass)
        diag("%d towers: %s", ntowers, fl_session_error(s));
    fl_session_free(s);
    fl_tensor_free(xt);
    fl_tensor_free(yt);
    fl_graph_free(m.g);
    return pass;
}

/* A tower's gradients are named under the tower once, as the lab's picture
 * shows them: tower_1/gradients/MatMul_grad/..., not
 * tower_1/gradients/tower_1/MatMul_grad/... */
static void check_gradient_names(void)
{
    model m = build(2, 0);
    ok(fl_graph_find(m.g, "tower_1/gradients/loss_grad/ReduceGrad") != NULL,
       "the loss's gradient is tower_1/gradients/loss_grad/ReduceGrad");
    ok(fl_graph_find(m.g, "tower_1/gradients/MatMul_grad/MatMul_1") != NULL,
       "the first layer's kernel's is tower_1/gradients/MatMul_grad/MatMul_1");
    int repeated = 0;
    for (int i = 0; i < fl_graph_node_count(m.g); i++) {
        const char *name = fl_node_name(fl_graph_node(m.g, i));
        if (strstr(name, "gradients/tower_") && repeated++ == 0)
            diag("for instance %s", name);
    }
    ok(repeated == 0, "no gradient name repeats its tower's scope (%d do)", repeated);
    fl_graph_free(m.g);
}

int main(void)
{
    fl_device_info devices[16];
    int naccelerators = fl_list_devices(devices, 16) - 1;
    diag("towers run on %s", naccelerators ? "the accelerators" : "/cpu:0 (no accelerator)");
    float one[STEPS], many[STEPS];
    ok(trajectory(1, 0, one), "one device, batch %d, trains", BATCH);
    ok(one[STEPS - 1] < one[0] * 0.8f, "and its loss falls (%.4f -> %.4f)", one[0], one[STEPS - 1]);
    const int counts[3] = {2, 3, 4};
    for (int c = 0; c < 3; c++) {
        int n = counts[c];
        bool ran = trajectory(n, naccelerators, many);
        double worst = 0;
        for (int s = 0; ran && s < STEPS; s++) {
            double d = fabs(many[s] - one[s]) / fabs(one[s]);
            worst = d > worst ? d : worst;
        }
        /* float32 sums in another order: agreement to about 1e-6, so 1e-4 is generous */
        ok(ran && worst < 1e-4, "%d towers of batch %d follow the single-device losses within 1e-4 "
           "(worst relative difference %.2g)", n, BATCH / n, worst);
    }
    check_gradient_names();
    return done_testing();
}
