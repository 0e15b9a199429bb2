/* optimizers.c: SGD, Momentum and Adam as graph ops.
 * apply_gradients builds one update op per variable; slot variables (the
 * momentum accumulator, Adam's m and v) sit on the variable's device, and
 * the global step is incremented only after every update has run. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "runtime.h"

#define FL_NAME_LEN 256

typedef enum { SGD, MOMENTUM, ADAM } optimizer_kind;

struct fl_optimizer {
    optimizer_kind kind;
    float learning_rate, momentum, beta1, beta2, epsilon;
    bool use_nesterov;
    /* A wrapper's own graph around the updates (NULL: none), and the value
     * it was made with: the cluster runtime's SyncReplicasOptimizer
     * (src/distributed_runtime/) and its replicas_to_aggregate. */
    fl_optimizer_wrap_fn wrap;
    int wrap_value;
    /* The update ops built, so that fl_optimizer_set_learning_rate reaches
     * them: each op reads its rate from its attrs when it runs. */
    fl_node **updates;
    int nupdates;
};

static fl_optimizer *new_optimizer(optimizer_kind kind, float learning_rate)
{
    fl_optimizer *opt = fl_xcalloc(1, sizeof *opt);
    opt->kind = kind;
    opt->learning_rate = learning_rate;
    return opt;
}

fl_optimizer *fl_gradient_descent_optimizer(float learning_rate)
{
    return new_optimizer(SGD, learning_rate);
}

fl_optimizer *fl_momentum_optimizer(float learning_rate, float momentum, bool use_nesterov)
{
    fl_optimizer *opt = new_optimizer(MOMENTUM, learning_rate);
    opt->momentum = momentum;
    opt->use_nesterov = use_nesterov;
    return opt;
}

fl_optimizer *fl_adam_optimizer(float learning_rate, float beta1, float beta2, float epsilon)
{
    fl_optimizer *opt = new_optimizer(ADAM, learning_rate);
    opt->beta1 = beta1;
    opt->beta2 = beta2;
    opt->epsilon = epsilon;
    return opt;
}

fl_optimizer *fl_optimizer_wrapping(const fl_optimizer *opt, fl_optimizer_wrap_fn wrap, int value)
{
    fl_optimizer *wrapping = fl_xmalloc(sizeof *wrapping);
    *wrapping = *opt;
    wrapping->wrap = wrap;
    wrapping->wrap_value = value;
    wrapping->updates = NULL; /* its own ops, not the wrapped optimizer's */
    wrapping->nupdates = 0;
    return wrapping;
}

void fl_optimizer_free(fl_optimizer *opt)
{
    if (!opt)
        return;
    free(opt->updates);
    free(opt);
}

/* A schedule (a warm-up, a decay) sets the rate between steps; TensorFlow
 * feeds a learning-rate tensor instead, here the rate is an op attribute. */
void fl_optimizer_set_learning_rate(fl_optimizer *opt, float learning_rate)
{
    if (!opt)
        return;
    opt->learning_rate = learning_rate;
    for (int i = 0; i < opt->nupdates; i++)
        opt->updates[i]->attrs.learning_rate = learning_rate;
}

static void remember_update(fl_optimizer *opt, fl_node *update)
{
    if (!update)
        return;
    opt->updates = fl_xrealloc(opt->updates, (size_t)(opt->nupdates + 1) * sizeof *opt->updates);
    opt->updates[opt->nupdates++] = update;
}

static const char *optimizer_name(const fl_optimizer *opt)
{
    static const char *names[] = {"GradientDescent", "Momentum", "Adam"};
    return names[opt->kind];
}

/* ---- the update ops ---- */


/* A zero-initialized slot named "<var>/<suffix>", reused if it exists. */
static fl_node *slot_variable(fl_graph *g, fl_node *var, const char *suffix, fl_shape shape)
{
    char name[FL_NAME_LEN + 32];
    snprintf(name, sizeof name, "%s/%s", var->name, suffix);
    fl_node *existing = fl_graph_find_variable(g, name);
    if (existing)
        return existing;
    return fl_create_variable(g, name, FL_FLOAT32, shape, fl_zeros_initializer(), false);
}

static fl_node *update_op(fl_optimizer *opt, fl_graph *g, fl_node *var, fl_node *grad,
                          fl_node *beta_powers[2])
{
    fl_node_spec spec = {.dtype = FL_FLOAT32};
    spec.attrs.learning_rate = opt->learning_rate;
    fl_node *inputs[6] = {var};
    if (opt->kind == SGD) {
        inputs[1] = grad;
        spec.op = FL_OP_APPLY_GRADIENT_DESCENT;
        spec.ninputs = 2;
    } else if (opt->kind == MOMENTUM) {
        inputs[1] = slot_variable(g, var, "Momentum", var->shape);
        inputs[2] = grad;
        spec.op = FL_OP_APPLY_MOMENTUM;
        spec.ninputs = 3;
        spec.attrs.momentum = opt->momentum;
        spec.attrs.use_nesterov = opt->use_nesterov;
    } else {
        inputs[1] = slot_variable(g, var, "Adam", var->shape);
        inputs[2] = slot_variable(g, var, "Adam_1", var->shape);
        inputs[3] = beta_powers[0];
        inputs[4] = beta_powers[1];
        inputs[5] = grad;
        spec.op = FL_OP_APPLY_ADAM;
        spec.ninputs = 6;
        spec.attrs.beta1 = opt->beta1;
        spec.attrs.beta2 = opt->beta2;
        spec.attrs.epsilon = opt->epsilon;
    }
    spec.inputs = inputs;
    spec.default_name = fl_op_def_of(spec.op)->type;
    fl_node *update = fl_add_node(g, &spec);
    remember_update(opt, update);
    return update;
}

/* Adam's beta1^t and beta2^t, one pair per device that holds variables,
 * beside the first variable there (a device function such as the replica
 * device setter is not asked). An update reads its own device's pair, so on
 * a ps task it reads values held there: TensorFlow keeps one pair and reads
 * it across devices, but a ps here updates only values it holds. With every
 * variable on one device, as in chapters 1 and 2, there is one pair, named
 * as TensorFlow names it. */
typedef struct {
    const char *device; /* the variables' requested device */
    fl_node *powers[2];
} beta_powers;

static int create_beta_powers(fl_optimizer *opt, fl_graph *g, const char *scope, fl_node *first, int index,
                              fl_node *powers[2])
{
    const float initial[2] = {opt->beta1, opt->beta2};
    const char *suffix[2] = {"beta1_power", "beta2_power"};
    if (fl_device_scope_push_colocated(g, first) != 0)
        return -1;
    int status = 0;
    for (int i = 0; i < 2 && status == 0; i++) {
        char name[FL_NAME_LEN + 48];
        if (index == 0)
            snprintf(name, sizeof name, "%s/%s", scope, suffix[i]);
        else
            snprintf(name, sizeof name, "%s/%s_%d", scope, suffix[i], index);
        powers[i] = fl_graph_find_variable(g, name);
        if (!powers[i])
            powers[i] = fl_create_variable(g, name, FL_FLOAT32, fl_shape_make(0),
                                           fl_constant_initializer(initial[i]), false);
        status = powers[i] ? 0 : -1;
    }
    fl_device_pop(g); /* on failure too: the scope must not outlive the call */
    return status;
}

/* The pair of var's device, made on first use; NULL on error. */
static fl_node **powers_for(fl_optimizer *opt, fl_graph *g, const char *scope, fl_node *var, beta_powers *all,
                            int *count)
{
    for (int i = 0; i < *count; i++)
        if (strcmp(all[i].device, var->device) == 0)
            return all[i].powers;
    beta_powers *p = &all[*count];
    p->device = var->device;
    if (create_beta_powers(opt, g, scope, var, *count, p->powers) != 0)
        return NULL;
    (*count)++;
    return p->powers;
}

/* After every update: beta_power *= beta. The assignment sits with the
 * power; the product is computed wherever the graph's device scopes say, so
 * that a ps task, which runs only state ops, never has to multiply. */
static int finish_adam(fl_optimizer *opt, fl_graph *g, fl_node *powers[2], fl_node **updates,
                       int nupdates, fl_node **finish)
{
    const float betas[2] = {opt->beta1, opt->beta2};
    if (fl_control_dependencies_push(g, updates, nupdates) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        fl_node *next = fl_mul(g, powers[i], fl_scalar(g, betas[i], NULL), NULL);
        fl_device_scope_push_colocated(g, powers[i]);
        finish[i] = (fl_assign(g, powers[i], next, NULL));
        fl_device_pop(g);
    }
    fl_control_dependencies_pop(g);
    return finish[0] && finish[1] ? 0 : -1;
}

static fl_node *increment_step(fl_graph *g, fl_node *global_step, fl_node **after, int nafter)
{
    if (global_step->op != FL_OP_VARIABLE || global_step->dtype != FL_INT32 || global_step->shape.rank != 0)
        return fl_graph_fail(g, global_step->name, "the global step must be an int32 scalar variable "
                                                   "(fl_get_or_create_global_step makes one)");
    if (fl_control_dependencies_push(g, after, nafter) != 0)
        return NULL;
    fl_node *one = fl_int_scalar(g, 1, NULL); /* not with the step: a ps holds values only */
    fl_device_scope_push_colocated(g, global_step);
    fl_node *inc = fl_assign_add(g, global_step, one, NULL);
    fl_device_pop(g);
    fl_control_dependencies_pop(g);
    return inc;
}

/* scopes: NULL, or the name scope of each pair's update (NULL: none). */
static fl_node *build_updates(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                              const char *const *scopes, fl_node *global_step, const char *scope, fl_node **ops,
                              beta_powers *betas)
{
    int nops = 0, nbetas = 0;
    for (int i = 0; i < n; i++) {
        if (!pairs[i].grad)
            continue;
        if (!pairs[i].var || pairs[i].var->op != FL_OP_VARIABLE)
            return fl_graph_fail(g, scope, "pair %d: the second element is not a variable", i);
        fl_node **powers = NULL;
        if (opt->kind == ADAM && !(powers = powers_for(opt, g, scope, pairs[i].var, betas, &nbetas)))
            return NULL;
        bool scoped = scopes && scopes[i] && fl_name_scope_push(g, scopes[i]) == 0;
        fl_device_scope_push_colocated(g, pairs[i].var);
        ops[nops] = update_op(opt, g, pairs[i].var, pairs[i].grad, powers);
        fl_device_pop(g);
        if (scoped)
            fl_name_scope_pop(g);
        if (!ops[nops++])
            return NULL;
    }
    if (nops == 0)
        return fl_graph_fail(g, scope, "no variable has a gradient; does the loss depend on them?");
    int nupdates = nops;
    for (int k = 0; k < nbetas; k++, nops += 2)
        if (finish_adam(opt, g, betas[k].powers, ops, nupdates, ops + nops) != 0)
            return NULL;
    if (global_step) {
        ops[nops] = (increment_step(g, global_step, ops, nops));
        if (!ops[nops++])
            return NULL;
    }
    return fl_group(g, ops, nops, "update");
}

/* The optimizer's own updates, each in its scope (scopes: NULL, or one per pair). */
static fl_node *updates_scoped(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                               const char *const *scopes, fl_node *global_step, const char *scope)
{
    fl_node **ops = fl_xmalloc((size_t)(3 * n + 1) * sizeof *ops); /* updates, beta powers', the step */
    beta_powers *betas = fl_xcalloc((size_t)(n ? n : 1), sizeof *betas);
    fl_node *train = build_updates(opt, g, pairs, n, scopes, global_step, scope, ops, betas);
    free(betas);
    free(ops);
    return train;
}

fl_node *fl_optimizer_plain_updates(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                                     fl_node *global_step, const char *scope)
{
    return updates_scoped(opt, g, pairs, n, NULL, global_step, scope);
}

fl_node *fl_apply_gradients_scoped(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                                   const char *const *scopes, fl_node *global_step, const char *name)
{
    if (!g || fl_graph_failed(g))
        return NULL;
    if (!opt || !pairs)
        return fl_graph_fail(g, name ? name : "apply_gradients", "the optimizer or the pairs are NULL");
    const char *scope = name ? name : optimizer_name(opt);
    if (fl_name_scope_push(g, scope) != 0)
        return NULL;
    fl_node *train = opt->wrap ? opt->wrap(opt, g, pairs, n, global_step, scope, opt->wrap_value)
                               : updates_scoped(opt, g, pairs, n, scopes, global_step, scope);
    fl_name_scope_pop(g);
    return train;
}

fl_node *fl_apply_gradients(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                            fl_node *global_step, const char *name)
{
    return fl_apply_gradients_scoped(opt, g, pairs, n, NULL, global_step, name);
}

fl_node *fl_minimize(fl_optimizer *opt, fl_graph *g, fl_node *loss, fl_node *global_step,
                     const char *name)
{
    if (!g || fl_graph_failed(g))
        return NULL;
    int n = fl_trainable_variables(g, NULL, 0);
    fl_grad_var *pairs = fl_xmalloc((size_t)(n ? n : 1) * sizeof *pairs);
    fl_node *train = NULL;
    if (fl_compute_gradients(g, loss, NULL, 0, pairs) == n)
        train = fl_apply_gradients(opt, g, pairs, n, global_step, name);
    free(pairs);
    return train;
}
